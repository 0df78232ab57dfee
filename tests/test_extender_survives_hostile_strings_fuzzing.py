"""Hypothesis throws hostile bodies at the extender server as the run command starts it
(``run_extender``): every verb with names holding NUL characters, lone surrogates (as JSON escapes),
control characters, huge names, wrong types and broken JSON. Every answer is an HTTP 200 with JSON
(the reason in ``Error`` when refused), and the decision log keeps flowing: a normal decision sent
after the whole run is drained into PostgreSQL and nothing was set aside as a dead letter, because
the edge refused what no database can store.

The seed varies per run and is printed; ``NETAWARE_FUZZ_SEED=<seed>`` replays a run.
"""

from __future__ import annotations

import http.client
import os
import random
import time

import orjson
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from apps.scheduler import selectors, services
from apps.scheduler.models import Decision
from netaware_core import deadletter
from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, kube_scheduler_http_timeout, load_testbed

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("NETAWARE_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
EXAMPLES = int(os.environ.get("NETAWARE_FUZZ_EXAMPLES", "300"))
VERBS = ("filter", "prioritize", "bind", "preempt")

# Strings as raw JSON text: escapes Python's encoder would never write (lone surrogates) included.
hostile = st.one_of(
    st.just('"\\u0000"'), st.just('"n1402\\u0000"'), st.just('"\\ud800"'), st.just('"\\udfff x"'),
    st.just('"' + "n" * 70000 + '"'), st.just('"\\u001b[31m"'), st.just("null"), st.just("12"), st.just("[]"),
    st.text(max_size=40).map(lambda t: orjson.dumps(t).decode()),
)


def _body(verb: str, name: str, namespace: str, node: str) -> str:
    pod = orjson.dumps(k8s_pod("fuzz", labels={"app": "frontend"})).decode()
    pod = pod.replace('"name":"fuzz"', f'"name":{name}', 1).replace('"namespace":"default"',
                                                                     f'"namespace":{namespace}', 1)
    if verb == "bind":
        return f'{{"PodName":{name},"PodNamespace":{namespace},"PodUID":"u","Node":{node}}}'
    if verb == "preempt":
        return f'{{"Pod":{pod},"NodeNameToMetaVictims":{{{node}:{{"Pods":[]}}}}}}'
    return f'{{"Pod":{pod},"Nodes":null,"NodeNames":["n1402",{node}]}}'


def _post(url: str, path: str, body: bytes) -> tuple[int, bytes]:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=kube_scheduler_http_timeout())
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_hostile_strings_get_200_json_and_never_block_the_decision_log(transactional_db, fake_kube):
    print(f"fuzz seed {SEED} (replay: NETAWARE_FUZZ_SEED={SEED})")
    load_testbed()
    selectors.redis_client().delete(deadletter.key("decisions"))
    with extender_server(kube_url=fake_kube.url) as ext:

        @seed(SEED)
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
        @given(verb=st.sampled_from(VERBS), name=hostile, namespace=hostile, node=hostile,
               cut=st.one_of(st.none(), st.integers(min_value=1, max_value=200)))
        def one(verb: str, name: str, namespace: str, node: str, cut: int | None) -> None:
            body = _body(verb, name, namespace, node).encode("utf-8", "surrogatepass")
            if cut is not None:
                body = body[:cut]  # broken JSON
            status, answer = _post(ext.url, f"/scheduler/{verb}", body)
            assert status == 200, (status, answer[:300])
            decoded = orjson.loads(answer)
            assert isinstance(decoded, dict | list)

        one()
        good = k8s_pod("after-the-fuzz", labels={"app": "frontend"})
        status, _ = _post(ext.url, "/scheduler/prioritize",
                          orjson.dumps({"Pod": good, "Nodes": None, "NodeNames": ["n1402", "n1403"]}))
        assert status == 200
        deadline = time.monotonic() + 60
        while not Decision.objects.filter(pod_name="after-the-fuzz").exists():
            assert time.monotonic() < deadline, "the decision sent after the fuzzing was never stored"
            services.drain_decisions()
            time.sleep(0.2)
    assert selectors.redis_client().llen(deadletter.key("decisions")) == 0
