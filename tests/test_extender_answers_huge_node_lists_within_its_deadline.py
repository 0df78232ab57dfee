"""Filter and prioritize answer a huge request within the extender's own deadline
(``EXTENDER_DEADLINE_SECONDS``), never with a 5xx (issue 21: 60,000 Node objects, 15.8 MB, under the
body cap, took 7.1 s / 5.7 s, past kube-scheduler's httpTimeout). What was evaluated in time is
answered on its merits; the rest fails filter with ``netaware: deadline exceeded, not evaluated`` (the
pod only goes where the extender looked) and gets the neutral score in prioritize; the reason is in
the decision log. Through the real extender server, with the body kube-scheduler would send without
``nodeCacheCapable``."""

from __future__ import annotations

import http.client
import time

import orjson
import pytest
from django.conf import settings

from apps.scheduler import services
from apps.scheduler.models import Decision
from apps.scheduler.services import DEADLINE_REASON
from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, kube_scheduler_http_timeout, load_testbed

pytestmark = pytest.mark.slow

NODES = 60_000


def minimal_node(name: str, zone: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": "1",
                         "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


@pytest.fixture(scope="module")
def huge_body() -> tuple[bytes, list[str]]:
    names = [f"node-{i:05d}" for i in range(NODES)]
    nodes = [minimal_node(name, f"zone-{i % 16}") for i, name in enumerate(names)]
    body = orjson.dumps({"Pod": k8s_pod("web-1", labels={"app": "frontend"}), "NodeNames": None,
                         "Nodes": {"metadata": {}, "items": nodes}})
    assert 15_000_000 < len(body) < settings.MAX_EXTENDER_BODY, len(body)
    return body, names


def _post(port: int, verb: str, body: bytes) -> tuple[int, float, float, object]:
    """(status, seconds the client waited, the server's own time in s from Server-Timing, answer)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        started = time.monotonic()
        conn.request("POST", f"/scheduler/{verb}", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = response.read()
        waited = time.monotonic() - started
        timing = response.getheader("Server-Timing") or ""
        return response.status, waited, float(timing.split("dur=")[1]) / 1000.0, orjson.loads(payload)
    finally:
        conn.close()


def test_filter_and_prioritize_answer_60000_node_objects_within_the_deadline(huge_body, transactional_db,
                                                                             fake_kube):
    body, names = huge_body
    deadline = float(settings.NETAWARE["EXTENDER_DEADLINE_SECONDS"])
    load_testbed()
    with extender_server(kube_url=fake_kube.url) as ext:
        status, waited, served, answer = _post(ext.port, "filter", body)
        assert status == 200
        assert served <= deadline, (served, deadline)
        assert waited < kube_scheduler_http_timeout(), waited
        assert isinstance(answer, dict) and answer["Error"] == "" and answer["NodeNames"] is None
        passed = [n["metadata"]["name"] for n in answer["Nodes"]["items"]]
        failed, unresolvable = answer["FailedNodes"], answer["FailedAndUnresolvableNodes"]
        assert sorted([*passed, *failed, *unresolvable]) == names  # every node answered for, once
        late = sum(1 for why in failed.values() if why == DEADLINE_REASON)

        status, waited, served, scores = _post(ext.port, "prioritize", body)
        assert status == 200
        assert served <= deadline, (served, deadline)
        assert waited < kube_scheduler_http_timeout(), waited
        assert isinstance(scores, list) and sorted(e["Host"] for e in scores) == names
        assert all(isinstance(e["Score"], int) and 0 <= e["Score"] <= 10 for e in scores)

    # The reason is logged with the decision: how many nodes were evaluated in time.
    decision = _wait_for_decision("filter")
    assert decision.candidates == NODES
    if late:
        assert decision.error.startswith(f"deadline of {deadline:g} s exceeded: {NODES - late} of {NODES} nodes"), \
            decision.error
        assert decision.result["not_evaluated"] == late
    else:
        assert decision.error == "", decision.error


def _wait_for_decision(verb: str) -> Decision:
    until = time.monotonic() + 30
    while True:
        services.drain_decisions()
        found = Decision.objects.filter(verb=verb).first()
        if found is not None:
            return found
        assert time.monotonic() < until, f"no {verb} decision was stored"
        time.sleep(0.2)
