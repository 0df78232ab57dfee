"""``bind`` binds only what is ours, creates the Binding through the Kubernetes API (fake API
server, real HTTP) and is seen by the very next filter/prioritize; it answers within its deadline
whatever the API does, and forgets the assumed placement when the Binding fails."""

from __future__ import annotations

import time

import orjson
import pytest

from apps.appgroups.models import Placement
from apps.scheduler.models import Decision
from apps.topology.models import Node
from tests.support.extender_wire import (
    binding_args,
    extender_args,
    k8s_pod,
    load_testbed,
    save_boutique,
    use_extender_test_settings,
)

OURS = "netaware-scheduler"


@pytest.fixture
def cluster(settings, db, fake_kube):
    use_extender_test_settings(settings, KUBE_API_URL=fake_kube.url, BIND_DEADLINE_SECONDS=1.5)
    nodes = load_testbed()
    for node in Node.objects.all():
        fake_kube.add_node(node.name, zone=node.zone, region=node.region)
    save_boutique()
    return nodes


def post(client, verb: str, body: object):
    response = client.post(f"/scheduler/{verb}", orjson.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return orjson.loads(response.content)


def scores_for(client, pod: dict, nodes: list[str]) -> dict[str, int]:
    return {e["Host"]: e["Score"] for e in post(client, "prioritize", extender_args(pod, node_names=nodes))}


def our_pod(fake_kube, name: str, app: str, **kwargs) -> dict:
    created = fake_kube.add_pod("boutique", name, labels={"app": app}, scheduler_name=OURS, **kwargs)
    return k8s_pod(name, namespace="boutique", labels={"app": app}, uid=created["metadata"]["uid"])


def test_bind_binds_records_and_the_next_pod_sees_it(client, cluster, fake_kube):
    nodes = cluster
    redis_pod = our_pod(fake_kube, "redis-cart-0", "redis-cart")
    cart = k8s_pod("cartservice-5d8f-a1", namespace="boutique", labels={"app": "cartservice"})
    before = scores_for(client, cart, nodes)

    assert post(client, "bind", binding_args(redis_pod, "n1412")) == {"Error": ""}

    assert fake_kube.get("", "v1", "pods", "redis-cart-0", namespace="boutique")["spec"]["nodeName"] == "n1412"
    assert fake_kube.count("POST", r"/pods/redis-cart-0/binding$") == 1
    placement = Placement.objects.get(pod_namespace="boutique", pod_name="redis-cart-0")
    assert (placement.node_name, placement.workload.name, placement.source) == ("n1412", "redis-cart", "extender")
    decision = Decision.objects.get(verb="bind")
    assert (decision.node, decision.error, decision.pod_uid) == ("n1412", "", redis_pod["metadata"]["uid"])

    after = scores_for(client, cart, nodes)
    assert after != before
    zone_c = set(Node.objects.filter(zone=Node.objects.get(name="n1412").zone).values_list("name", flat=True))
    best = {n for n, s in after.items() if s == max(after.values())}
    assert best <= zone_c, (best, zone_c)
    assert after["n1412"] == 8  # same node as its dependency: SameNodeScore 0.8


def test_bind_is_idempotent_and_refuses_a_pod_bound_elsewhere(client, cluster, fake_kube):
    pod = our_pod(fake_kube, "adservice-1", "adservice")
    assert post(client, "bind", binding_args(pod, "n1403")) == {"Error": ""}
    assert post(client, "bind", binding_args(pod, "n1403")) == {"Error": ""}  # kube-scheduler re-sent it
    result = post(client, "bind", binding_args(pod, "n1404"))
    assert "already bound to n1403" in result["Error"]
    assert Placement.objects.get(pod_name="adservice-1").node_name == "n1403"
    assert fake_kube.count("POST", r"/pods/adservice-1/binding$") == 1


def test_bind_retries_retryable_api_errors(client, cluster, fake_kube):
    pod = our_pod(fake_kube, "emailservice-1", "emailservice")
    fake_kube.fail(503, method="POST", path=r"/binding$", times=2)
    assert post(client, "bind", binding_args(pod, "n1405")) == {"Error": ""}
    assert fake_kube.count("POST", r"/pods/emailservice-1/binding$") == 3
    assert Placement.objects.get(pod_name="emailservice-1").node_name == "n1405"


def test_bind_refuses_pods_of_other_schedulers(client, cluster, fake_kube):
    created = fake_kube.add_pod("boutique", "web-1", labels={"app": "frontend"}, scheduler_name="default-scheduler")
    pod = k8s_pod("web-1", namespace="boutique", labels={"app": "frontend"}, uid=created["metadata"]["uid"])
    result = post(client, "bind", binding_args(pod, "n1405"))
    assert "spec.schedulerName 'default-scheduler'" in result["Error"]
    assert fake_kube.count("POST", r"/binding$") == 0
    assert fake_kube.get("", "v1", "pods", "web-1", namespace="boutique")["spec"].get("nodeName") is None
    assert "default-scheduler" in Decision.objects.get(verb="bind").error


@pytest.mark.parametrize("case", ["wrong uid", "unknown node", "not ready", "cordoned", "missing pod", "finished"])
def test_bind_refuses_what_it_must_not_bind(client, cluster, fake_kube, case):
    pod = our_pod(fake_kube, "shippingservice-1", "shippingservice")
    node = "n1405"
    if case == "wrong uid":
        pod["metadata"]["uid"] = "2b6a3c44-0000-4000-8000-000000000000"
    elif case == "unknown node":
        node = "n9999"
    elif case == "not ready":
        fake_kube.merge("", "v1", "nodes", node, {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    elif case == "cordoned":
        fake_kube.merge("", "v1", "nodes", node, {"spec": {"unschedulable": True}})
    elif case == "missing pod":
        pod = k8s_pod("ghost-1", namespace="boutique", labels={"app": "adservice"})
    elif case == "finished":
        fake_kube.merge("", "v1", "pods", "shippingservice-1", {"status": {"phase": "Succeeded"}},
                        namespace="boutique")
    result = post(client, "bind", binding_args(pod, node))
    expected = {"wrong uid": "does not match", "unknown node": "unknown to the scheduling cache",
                "not ready": "not Ready", "cordoned": "not Ready", "missing pod": "does not exist",
                "finished": "terminating or finished"}[case]
    assert expected in result["Error"], result
    assert fake_kube.count("POST", r"/binding$") == 0
    assert not Placement.objects.filter(pod_name=pod["metadata"]["name"]).exists()


@pytest.mark.parametrize("fault", ["down", "hung"])
def test_bind_answers_within_its_deadline_and_forgets_the_placement(client, cluster, fake_kube, fault):
    nodes = cluster
    pod = our_pod(fake_kube, "redis-cart-9", "redis-cart")
    cart = k8s_pod("cartservice-1", namespace="boutique", labels={"app": "cartservice"})
    before = scores_for(client, cart, nodes)
    post(client, "filter", extender_args(pod, node_names=nodes))  # the cache knows the pod now
    if fault == "down":
        fake_kube.fail(503, method="POST", path=r"/binding$", times=100)
    else:
        fake_kube.slow(10.0, method="POST", path=r"/binding$", times=1)
    started = time.monotonic()
    result = post(client, "bind", binding_args(pod, "n1412"))
    took = time.monotonic() - started
    assert result["Error"].startswith("binding boutique/redis-cart-9 to n1412"), result
    assert took < 1.5 + 0.5, took  # BIND_DEADLINE_SECONDS plus the request's own work
    fake_kube.clear_faults()
    assert scores_for(client, cart, nodes) == before  # the assumed placement was forgotten
    assert not Placement.objects.filter(pod_name="redis-cart-9").exists()
