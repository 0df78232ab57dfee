"""GET /api/scheduler/diagnose?pod=ns/name explains why every node would score 0 or neutral:
labels matching no workload, a missing AppGroup, unplaced dependencies, no topology, a bad
profile annotation; 400 for a malformed query, 404 for a pod nobody knows."""

from __future__ import annotations

import pytest

from apps.demo.kubeapi import FakeKube
from apps.scheduler import services
from netaware_core import kube as kube_client
from tests.support.extender_wire import k8s_pod, load_testbed, save_boutique


@pytest.fixture
def boutique(settings, db):
    settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": ""}
    load_testbed()
    save_boutique()


def diagnose(client, **params):
    return client.get("/api/scheduler/diagnose", params)


def test_labels_matching_no_workload(client, boutique):
    services.upsert_observed_pod(obj=k8s_pod("cart-typo-1", namespace="boutique", labels={"app": "cart-service"}))
    response = diagnose(client, pod="boutique/cart-typo-1")
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["pod"]["source"] == "pod cache (watch_cluster)"
    problems = " ".join(report["diagnosis"]["problems"])
    assert "app=cart-service" in problems and "match no workload selector" in problems
    assert "cartservice: app=cartservice" in problems  # shows what the selectors want


def test_appgroup_named_by_label_is_missing(client, boutique):
    labels = "app=cartservice,netaware.io/appgroup=online-botique"
    report = diagnose(client, pod="boutique/cart-x", labels=labels).json()
    assert report["pod"]["source"] == "query"
    assert any("online-botique" in p and "does not exist" in p for p in report["diagnosis"]["problems"])


def test_no_appgroup_in_namespace(client, boutique):
    report = diagnose(client, pod="shop/cart-x", labels="app=cartservice").json()
    assert any("no AppGroup exists in namespace shop" in p for p in report["diagnosis"]["problems"])


def test_unplaced_dependencies_and_cold_start(client, boutique):
    report = diagnose(client, pod="boutique/cartservice-1", labels="app=cartservice").json()
    diagnosis = report["diagnosis"]
    assert (diagnosis["appgroup"], diagnosis["workload"]) == ("boutique/online-boutique", "cartservice")
    info = " ".join(diagnosis["info"])
    assert "dependency redis-cart has no placed pods" in info
    assert "cold start" in info
    assert report["profile"] == "network"
    assert report["topology"]["nodes"] == 19


def test_missing_topology_and_bad_profile_annotation(client, settings, db):
    settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": ""}
    load_testbed(with_topology=False)
    save_boutique()
    pod = k8s_pod("cartservice-2", namespace="boutique", labels={"app": "cartservice"},
                  annotations={"netaware.io/profile": "fastest"})
    services.upsert_observed_pod(obj=pod)
    report = diagnose(client, pod="boutique/cartservice-2").json()
    extender = " ".join(report["extender"])
    assert "no network topology yet" in extender
    assert "'fastest' names no profile" in extender
    assert any("topology is empty" in p for p in report["diagnosis"]["problems"])


def test_pod_read_from_the_kubernetes_api(client, boutique, settings):
    with FakeKube() as fake:
        settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": fake.url}
        kube_client.reset_clients()
        fake.add_pod("boutique", "frontend-1", labels={"app": "frontend"})
        report = diagnose(client, pod="boutique/frontend-1").json()
    kube_client.reset_clients()
    assert report["pod"]["source"] == "Kubernetes API"
    assert report["diagnosis"]["workload"] == "frontend"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"pod": "a/b/c"}, "pod"),
        ({"pod": "Boutique/cart"}, "pod"),
        ({"pod": "boutique/"}, "pod"),
        ({"pod": "boutique/cart_1"}, "pod"),
        ({}, "pod"),
        ({"pod": "boutique/cart", "labels": "app"}, "labels"),
        ({"pod": "boutique/cart", "labels": "app=a b"}, "labels"),
        ({"pod": "boutique/cart", "labels": "app=cartservice", "profile": "nope"}, "profile"),
    ],
)
def test_malformed_queries_are_400(client, boutique, params, field):
    response = diagnose(client, **params)
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]


def test_unknown_pod_is_404(client, boutique):
    response = diagnose(client, pod="boutique/nobody")
    assert response.status_code == 404
    assert "neither in the pod cache nor in the Kubernetes API" in response.json()["errors"]["pod"][0]
