"""``bind`` creates the Binding through the Kubernetes API (fake API server, real client) and
records the placement at once, so the next pod of the rollout is scored against it."""

from __future__ import annotations

import orjson
import pytest

from apps.appgroups.models import Placement
from apps.scheduler.models import Decision
from apps.topology.models import Node
from netaware_site import kube as kube_client
from tests.support.extender_wire import (
    binding_args,
    extender_args,
    k8s_pod,
    load_testbed,
    save_boutique,
    use_extender_test_settings,
)
from tests.support.fake_kube import FakeKube


@pytest.fixture
def fake_kube(settings):
    with FakeKube() as fake:
        settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": fake.url}
        kube_client.reset_clients()
        yield fake
    kube_client.reset_clients()


@pytest.fixture
def cluster(settings, db, fake_kube):
    use_extender_test_settings(settings, KUBE_API_URL=fake_kube.url)
    nodes = load_testbed()
    save_boutique()
    return nodes


def post(client, verb: str, body: object):
    response = client.post(f"/scheduler/{verb}", orjson.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return orjson.loads(response.content)


def scores_for(client, pod: dict, nodes: list[str]) -> dict[str, int]:
    return {e["Host"]: e["Score"] for e in post(client, "prioritize", extender_args(pod, node_names=nodes))}


def test_bind_binds_records_and_the_next_pod_sees_it(client, cluster, fake_kube):
    nodes = cluster
    created = fake_kube.add_pod("boutique", "redis-cart-0", labels={"app": "redis-cart"})
    redis_pod = k8s_pod("redis-cart-0", namespace="boutique", labels={"app": "redis-cart"},
                        uid=created["metadata"]["uid"])
    cart = k8s_pod("cartservice-5d8f-a1", namespace="boutique", labels={"app": "cartservice"})
    before = scores_for(client, cart, nodes)

    assert post(client, "bind", binding_args(redis_pod, "n1412")) == {"Error": ""}

    assert fake_kube.get("", "v1", "pods", "redis-cart-0", namespace="boutique")["spec"]["nodeName"] == "n1412"
    assert fake_kube.count("POST", r"/pods/redis-cart-0/binding$") == 1
    placement = Placement.objects.get(pod_namespace="boutique", pod_name="redis-cart-0")
    assert (placement.node_name, placement.workload.name, placement.source) == ("n1412", "redis-cart", "extender")
    decision = Decision.objects.get(verb="bind")
    assert (decision.node, decision.error, decision.pod_uid) == ("n1412", "", created["metadata"]["uid"])

    after = scores_for(client, cart, nodes)
    assert after != before
    zone_c = set(Node.objects.filter(zone=Node.objects.get(name="n1412").zone).values_list("name", flat=True))
    best = {n for n, s in after.items() if s == max(after.values())}
    assert best <= zone_c, (best, zone_c)
    assert after["n1412"] == 8  # same node as its dependency: SameNodeScore 0.8


def test_bind_is_idempotent_and_refuses_a_pod_bound_elsewhere(client, cluster, fake_kube):
    created = fake_kube.add_pod("boutique", "adservice-1", labels={"app": "adservice"})
    pod = k8s_pod("adservice-1", namespace="boutique", labels={"app": "adservice"}, uid=created["metadata"]["uid"])
    assert post(client, "bind", binding_args(pod, "n1403")) == {"Error": ""}
    assert post(client, "bind", binding_args(pod, "n1403")) == {"Error": ""}  # kube-scheduler re-sent it
    result = post(client, "bind", binding_args(pod, "n1404"))
    assert "already assigned" in result["Error"] and "n1403" in result["Error"]
    assert Placement.objects.get(pod_name="adservice-1").node_name == "n1403"


def test_bind_retries_retryable_api_errors(client, cluster, fake_kube):
    created = fake_kube.add_pod("boutique", "emailservice-1", labels={"app": "emailservice"})
    pod = k8s_pod("emailservice-1", namespace="boutique", labels={"app": "emailservice"},
                  uid=created["metadata"]["uid"])
    fake_kube.fail(503, method="POST", path=r"/binding$", times=2)
    assert post(client, "bind", binding_args(pod, "n1405")) == {"Error": ""}
    assert fake_kube.count("POST", r"/pods/emailservice-1/binding$") == 3
    assert Placement.objects.get(pod_name="emailservice-1").node_name == "n1405"


def test_bind_reports_permanent_errors(client, cluster, fake_kube):
    pod = k8s_pod("ghost-1", namespace="boutique", labels={"app": "adservice"})
    result = post(client, "bind", binding_args(pod, "n1405"))
    assert "HTTP 404" in result["Error"] and "ghost-1" in result["Error"]
    assert not Placement.objects.filter(pod_name="ghost-1").exists()
    assert "HTTP 404" in Decision.objects.get(verb="bind").error
    assert fake_kube.count("POST", r"/pods/ghost-1/binding$") == 1  # 404 is not retried


def test_bind_with_the_api_down_answers_an_error_not_a_5xx(client, cluster, fake_kube, settings):
    settings.NETAWARE = {**settings.NETAWARE, "BIND_ATTEMPTS": 2}
    created = fake_kube.add_pod("boutique", "paymentservice-1", labels={"app": "paymentservice"})
    pod = k8s_pod("paymentservice-1", namespace="boutique", labels={"app": "paymentservice"},
                  uid=created["metadata"]["uid"])
    fake_kube.down()
    result = post(client, "bind", binding_args(pod, "n1405"))
    assert "binding boutique/paymentservice-1 to n1405 failed" in result["Error"]
    fake_kube.up()
