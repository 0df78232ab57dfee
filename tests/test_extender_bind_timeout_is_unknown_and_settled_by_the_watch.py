"""A bind whose Binding the Kubernetes API does not answer in time (the API paused: the request is
held, then carried out) is answered "outcome unknown", not "failed" (issue 21: six binds answered
``failed: TimeoutError`` all landed). The placement stays assumed in the scheduling cache, and when
the pod watch shows the pod bound the extender settles it: a bind decision with ``result.settles =
"unknown"`` saying bound (and the placement recorded) or failed (bound elsewhere), through the real
extender server."""

from __future__ import annotations

import http.client
import time

import orjson
import pytest

from apps.appgroups.models import Placement
from apps.scheduler import services
from apps.scheduler.models import Decision
from tests.support.extender_server import extender_server
from tests.support.extender_wire import load_testbed, save_boutique

pytestmark = pytest.mark.slow

OURS = "netaware-scheduler"
DEADLINE = 1.0  # NETAWARE_BIND_DEADLINE_SECONDS of the server under test
PAUSE = DEADLINE + 1.5  # how long the paused API holds each Binding before carrying it out


def _post(ext, body: dict) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", ext.port, timeout=DEADLINE + 10)
    try:
        conn.request("POST", "/scheduler/bind", body=orjson.dumps(body), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        return orjson.loads(response.read())
    finally:
        conn.close()


def _wait(condition, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _settled(pod: str) -> Decision | None:
    services.drain_decisions()
    return Decision.objects.filter(verb="bind", pod_name=pod, result__settles="unknown").first()


@pytest.fixture
def paused_api(transactional_db, fake_kube):
    nodes = load_testbed()
    for name in nodes:
        fake_kube.add_node(name)
    save_boutique()
    pods = {}
    for name, app in (("redis-cart-0", "redis-cart"), ("adservice-0", "adservice")):
        created = fake_kube.add_pod("boutique", name, labels={"app": app}, scheduler_name=OURS)
        pods[name] = created["metadata"]["uid"]
    with extender_server(kube_url=fake_kube.url, env={"NETAWARE_BIND_DEADLINE_SECONDS": str(DEADLINE)}) as ext:
        yield ext, pods


def test_a_bind_the_paused_api_lands_late_is_unknown_then_settled_bound(paused_api, fake_kube):
    ext, pods = paused_api
    fake_kube.slow(PAUSE, method="POST", path=r"/pods/redis-cart-0/binding$", times=1)
    answer = _post(ext, {"PodName": "redis-cart-0", "PodNamespace": "boutique", "PodUID": pods["redis-cart-0"],
                         "Node": "n1412"})
    assert answer["Error"].startswith("binding boutique/redis-cart-0 to n1412: outcome unknown"), answer
    first = _wait(lambda: services.drain_decisions() >= 0 and Decision.objects.filter(
        verb="bind", pod_name="redis-cart-0", result__outcome="unknown").first(), "the bind decision")
    assert first.result == {"bound": None, "outcome": "unknown"}, first.result
    assert not Placement.objects.filter(pod_name="redis-cart-0").exists()

    # The paused API carries the Binding out; the pod watch shows it and the extender settles the bind.
    settled = _wait(lambda: _settled("redis-cart-0"), "the settled bind decision")
    assert fake_kube.get("", "v1", "pods", "redis-cart-0", namespace="boutique")["spec"]["nodeName"] == "n1412"
    assert (settled.node, settled.error, settled.result["bound"], settled.result["outcome"]) == ("n1412", "", True,
                                                                                                 "bound")
    placed = _wait(lambda: Placement.objects.filter(pod_name="redis-cart-0").first(), "the placement")
    assert (placed.node_name, placed.source) == ("n1412", "extender")
    # kube-scheduler retries the pod (it saw an error): the API says it is bound there, so the retry succeeds.
    again = _post(ext, {"PodName": "redis-cart-0", "PodNamespace": "boutique", "PodUID": pods["redis-cart-0"],
                        "Node": "n1412"})
    assert again == {"Error": ""}


def test_a_bind_in_doubt_is_settled_failed_when_the_pod_lands_elsewhere(paused_api, fake_kube):
    ext, pods = paused_api
    fake_kube.slow(PAUSE, method="POST", path=r"/pods/adservice-0/binding$", times=1)
    answer = _post(ext, {"PodName": "adservice-0", "PodNamespace": "boutique", "PodUID": pods["adservice-0"],
                         "Node": "n1403"})
    assert "outcome unknown" in answer["Error"], answer
    # Before the held Binding is carried out, another binder puts the pod on n1404 (the held one then gets 409).
    fake_kube.merge("", "v1", "pods", "adservice-0", {"spec": {"nodeName": "n1404"}}, namespace="boutique")
    settled = _wait(lambda: _settled("adservice-0"), "the settled bind decision")
    assert (settled.node, settled.result["bound"], settled.result["outcome"]) == ("n1404", False, "failed")
    assert settled.error == "the pod was bound to n1404 instead"
