"""``bind`` binds only what is ours, creates the Binding through the Kubernetes API (fake API
server, real HTTP) and is seen by the very next filter/prioritize; it answers within its deadline
whatever the API does, and forgets the assumed placement when the Binding fails."""

from __future__ import annotations

import time

import pytest

from apps.appgroups.models import Placement
from apps.scheduler.models import Decision
from apps.topology.models import Node
from tests.support.extender_runtime import wait_until
from tests.support.extender_wire import (
    binding_args,
    extender_args,
    k8s_pod,
    kube_scheduler_http_timeout,
    load_testbed,
    save_boutique,
)

OURS = "netaware-scheduler"


def delivered(ext, source: str, since: float) -> None:
    """Wait until the informer of ``source`` handled an event after ``since`` (the only change made)."""
    wait_until(lambda: (ext.runtime.cache.good_at(source) or 0.0) > since, f"the {source} watch delivers the change")


# What the extender promises kube-scheduler: an answer within the KubeSchedulerConfiguration's httpTimeout.
HTTP_TIMEOUT = kube_scheduler_http_timeout()


@pytest.fixture
def cluster(start_extender, fake_kube):
    nodes = load_testbed()
    for node in Node.objects.all():
        fake_kube.add_node(node.name, zone=node.zone, region=node.region)
    save_boutique()
    ext = start_extender(KUBE_API_URL=fake_kube.url, BIND_DEADLINE_SECONDS=1.5)
    ext.settle()
    return ext, nodes


@pytest.fixture
def ext(cluster):
    return cluster[0]


def post(ext, verb: str, body: object):
    response = ext.post(f"/scheduler/{verb}", body, settle=False)
    assert response.status_code == 200, response.content
    return response.json()


def scores_for(ext, pod: dict, nodes: list[str]) -> dict[str, int]:
    return {e["Host"]: e["Score"] for e in post(ext, "prioritize", extender_args(pod, node_names=nodes))}


def placement(pod_name: str) -> Placement:
    """The placement the runtime's writer thread records for a bind it answered."""
    return wait_until(lambda: Placement.objects.filter(pod_name=pod_name).first(), f"the placement of {pod_name}")


def our_pod(fake_kube, name: str, app: str, **kwargs) -> dict:
    created = fake_kube.add_pod("boutique", name, labels={"app": app}, scheduler_name=OURS, **kwargs)
    return k8s_pod(name, namespace="boutique", labels={"app": app}, uid=created["metadata"]["uid"])


def test_bind_binds_records_and_the_next_pod_sees_it(ext, cluster, fake_kube):
    nodes = cluster[1]
    redis_pod = our_pod(fake_kube, "redis-cart-0", "redis-cart")
    cart = k8s_pod("cartservice-5d8f-a1", namespace="boutique", labels={"app": "cartservice"})
    before = scores_for(ext, cart, nodes)

    assert post(ext, "bind", binding_args(redis_pod, "n1412")) == {"Error": ""}

    assert fake_kube.get("", "v1", "pods", "redis-cart-0", namespace="boutique")["spec"]["nodeName"] == "n1412"
    assert fake_kube.count("POST", r"/pods/redis-cart-0/binding$") == 1
    placed = placement("redis-cart-0")
    assert (placed.node_name, placed.workload.name, placed.source) == ("n1412", "redis-cart", "extender")
    ext.drain_decisions()
    decision = Decision.objects.get(verb="bind")
    assert (decision.node, decision.error, decision.pod_uid) == ("n1412", "", redis_pod["metadata"]["uid"])

    after = scores_for(ext, cart, nodes)
    assert after != before
    zone_c = set(Node.objects.filter(zone=Node.objects.get(name="n1412").zone).values_list("name", flat=True))
    best = {n for n, s in after.items() if s == max(after.values())}
    assert best <= zone_c, (best, zone_c)
    assert after["n1412"] == 8  # same node as its dependency: SameNodeScore 0.8


def test_bind_is_idempotent_and_refuses_a_pod_bound_elsewhere(ext, cluster, fake_kube):
    pod = our_pod(fake_kube, "adservice-1", "adservice")
    assert post(ext, "bind", binding_args(pod, "n1403")) == {"Error": ""}
    assert post(ext, "bind", binding_args(pod, "n1403")) == {"Error": ""}  # kube-scheduler re-sent it
    result = post(ext, "bind", binding_args(pod, "n1404"))
    assert "already bound to n1403" in result["Error"]
    assert placement("adservice-1").node_name == "n1403"
    assert fake_kube.count("POST", r"/pods/adservice-1/binding$") == 1


def test_bind_retries_retryable_api_errors(ext, cluster, fake_kube):
    pod = our_pod(fake_kube, "emailservice-1", "emailservice")
    fake_kube.fail(503, method="POST", path=r"/binding$", times=2)
    assert post(ext, "bind", binding_args(pod, "n1405")) == {"Error": ""}
    assert fake_kube.count("POST", r"/pods/emailservice-1/binding$") == 3
    assert placement("emailservice-1").node_name == "n1405"


def test_bind_refuses_pods_of_other_schedulers(ext, cluster, fake_kube):
    created = fake_kube.add_pod("boutique", "web-1", labels={"app": "frontend"}, scheduler_name="default-scheduler")
    pod = k8s_pod("web-1", namespace="boutique", labels={"app": "frontend"}, uid=created["metadata"]["uid"])
    result = post(ext, "bind", binding_args(pod, "n1405"))
    assert "spec.schedulerName 'default-scheduler'" in result["Error"]
    assert fake_kube.count("POST", r"/binding$") == 0
    assert fake_kube.get("", "v1", "pods", "web-1", namespace="boutique")["spec"].get("nodeName") is None
    ext.drain_decisions()
    assert "default-scheduler" in Decision.objects.get(verb="bind").error


@pytest.mark.parametrize("case", ["wrong uid", "empty uid", "missing uid", "unknown node", "not ready", "cordoned",
                                  "missing pod", "finished"])
def test_bind_refuses_what_it_must_not_bind(ext, cluster, fake_kube, case):
    pod = our_pod(fake_kube, "shippingservice-1", "shippingservice")
    node = "n1405"
    if case == "wrong uid":
        pod["metadata"]["uid"] = "2b6a3c44-0000-4000-8000-000000000000"
    elif case == "unknown node":
        node = "n9999"
    elif case in ("not ready", "cordoned"):
        change = ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}} if case == "not ready"
                  else {"spec": {"unschedulable": True}})
        changed_at = time.monotonic()
        fake_kube.merge("", "v1", "nodes", node, change)
        delivered(ext, "nodes", changed_at)
    elif case == "missing pod":
        pod = k8s_pod("ghost-1", namespace="boutique", labels={"app": "adservice"})
    elif case == "finished":
        changed_at = time.monotonic()
        fake_kube.merge("", "v1", "pods", "shippingservice-1", {"status": {"phase": "Succeeded"}},
                        namespace="boutique")
        delivered(ext, "pods", changed_at)
    body = binding_args(pod, node)
    if case == "empty uid":
        body["PodUID"] = ""
    elif case == "missing uid":
        del body["PodUID"]
    result = post(ext, "bind", body)
    expected = {"wrong uid": "does not match", "empty uid": "PodUID is missing, which does not match",
                "missing uid": "PodUID is missing, which does not match", "unknown node": "unknown to the scheduling cache",
                "not ready": "not Ready", "cordoned": "not Ready", "missing pod": "does not exist",
                "finished": "terminating or finished"}[case]
    assert expected in result["Error"], result
    assert fake_kube.count("POST", r"/binding$") == 0
    assert not Placement.objects.filter(pod_name=pod["metadata"]["name"]).exists()


# A hung API (the Binding sent, no answer) is "outcome unknown", not a failure: the placement is kept
# until the watch settles it (tests/test_extender_bind_timeout_is_unknown_and_settled_by_the_watch.py).
@pytest.mark.parametrize("fault", ["down", "refused"])
def test_bind_answers_within_its_deadline_and_forgets_the_placement(ext, cluster, fake_kube, fault):
    nodes = cluster[1]
    pod = our_pod(fake_kube, "redis-cart-9", "redis-cart")
    cart = k8s_pod("cartservice-1", namespace="boutique", labels={"app": "cartservice"})
    before = scores_for(ext, cart, nodes)
    post(ext, "filter", extender_args(pod, node_names=nodes))  # the cache knows the pod now
    if fault == "down":
        fake_kube.fail(503, method="POST", path=r"/binding$", times=100)
    else:
        fake_kube.fail(403, method="POST", path=r"/binding$", times=1)
    started = time.monotonic()
    result = post(ext, "bind", binding_args(pod, "n1412"))
    took = time.monotonic() - started
    assert result["Error"].startswith("binding boutique/redis-cart-9 to n1412"), result
    assert took < HTTP_TIMEOUT, took  # within kube-scheduler's httpTimeout (the deadline is 1.5 s below it)
    fake_kube.clear_faults()
    assert scores_for(ext, cart, nodes) == before  # the assumed placement was forgotten
    assert not Placement.objects.filter(pod_name="redis-cart-9").exists()
