"""The extender server's /metrics (health port, bearer token) in the Prometheus text format: request
latency histograms and outcomes per verb, binds by outcome, source health and cache age, leadership,
and the decision log's counters — as documented in docs/metrics.md."""

from __future__ import annotations

import http.client

import pytest
from prometheus_client.parser import text_string_to_metric_families

from apps.demo.rollout import Endpoint
from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, load_testbed, save_boutique

pytestmark = pytest.mark.slow
TOKEN = "metrics-test-token-0123456789abcdef"


def scrape(health: str, token: str | None) -> tuple[int, str]:
    host, port = health.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})
    resp = conn.getresponse()
    return resp.status, resp.read().decode()


def test_metrics_need_the_token_and_describe_the_extender(transactional_db, fake_kube):
    nodes = load_testbed()
    save_boutique("default")
    from apps.topology.models import Node

    for node in Node.objects.all():
        fake_kube.add_node(node.name, zone=node.zone, region=node.region)
    created = fake_kube.add_pod("default", "redis-cart-0", labels={"app": "redis-cart"},
                                scheduler_name="netaware-scheduler")
    with extender_server(kube_url=fake_kube.url, env={"NETAWARE_METRICS_TOKEN": TOKEN}) as ext:
        assert scrape(ext.health, None)[0] == 401
        assert scrape(ext.health, "wrong")[0] == 401
        endpoint = Endpoint(ext.url)
        pod = k8s_pod("cartservice-1", namespace="default", labels={"app": "cartservice"})
        for verb in ("filter", "prioritize"):
            assert endpoint.request("POST", f"/{verb}", {"Pod": pod, "Nodes": None, "NodeNames": nodes})[0] == 200
        endpoint.request("POST", "/filter", b"{not json")
        bind = {"PodName": "redis-cart-0", "PodNamespace": "default", "PodUID": created["metadata"]["uid"],
                "Node": "n1412"}
        assert endpoint.request("POST", "/bind", bind)[1]["Error"] == ""
        assert "already bound" in endpoint.request("POST", "/bind", {**bind, "Node": "n1402"})[1]["Error"]
        status, text = scrape(ext.health, TOKEN)
    assert status == 200
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}

    def value(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    assert value("netaware_extender_requests_total", verb="filter", outcome="ok") == 1
    assert value("netaware_extender_requests_total", verb="filter", outcome="error") == 1  # the bad body
    assert value("netaware_extender_requests_total", verb="prioritize", outcome="ok") == 1
    assert value("netaware_extender_request_duration_seconds_count", verb="prioritize") == 1
    assert value("netaware_extender_request_duration_seconds_bucket", verb="prioritize", le="+Inf") == 1
    assert value("netaware_extender_binds_total", outcome="ok") == 1
    assert value("netaware_extender_binds_total", outcome="refused") == 1
    for source in ("nodes", "pods", "topology", "appgroups", "profiles", "usage"):
        assert value("netaware_extender_source_up", source=source) == 1
        assert 0 <= value("netaware_extender_cache_age_seconds", source=source) < 60
    assert value("netaware_extender_leader") == 1
    assert ("netaware_decisions_logged_total", ()) in samples
    assert value("netaware_decisions_dropped_total") == 0
