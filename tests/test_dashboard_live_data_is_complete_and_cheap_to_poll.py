"""The JSON the live pages poll: the heatmap per metric and quantile with kind, sample count and
age per cell; ETags so an unchanged poll is a 304; gzip; staleness computed at read time; zones;
one link's history; the placements map with scores and dependency links."""

from __future__ import annotations

import gzip
from datetime import timedelta

import numpy as np
import orjson
import pytest
from django.utils import timezone

from apps.probes import services as probe_services
from apps.topology import services as topology_services
from tests.support.dashboard_seed import place, seed_boutique, seed_topology

pytestmark = pytest.mark.django_db

NODES = [("a1", "A", "lab"), ("a2", "A", "lab"), ("b1", "B", "lab")]
RTT = {("a1", "a2"): 0.001, ("a2", "a1"): 0.0011, ("a1", "b1"): 0.004, ("b1", "a1"): 0.0042, ("a2", "b1"): 0.005}


def store(ts, scale: float = 1.0) -> None:
    """One pipeline window through the real store (p50 < p90 < p99), then a rebuild."""
    src, dst = [s for s, _ in RTT], [d for _, d in RTT]
    base = np.array(list(RTT.values())) * scale
    probe_services.store_window(ts=ts, pairs={
        "rtt_p50": (src, dst, base * 0.5), "rtt_p90": (src, dst, base), "rtt_p99": (src, dst, base * 2),
        "loss_ratio": (src, dst, np.full(len(src), 0.01)), "bandwidth_bps": (src, dst, np.full(len(src), 5e8)),
    })


def measured(settings, now):
    settings.NETAWARE = {**settings.NETAWARE, "LATENCY_QUANTILE": 0.9, "STALE_AFTER_SECONDS": 600}
    for name, zone, region in NODES:
        topology_services.upsert_node(name=name, zone=zone, region=region, source="metrics")
    for minutes in (3, 2, 1):
        store(now - timedelta(minutes=minutes))
    return topology_services.rebuild_topology(now=now)


def cell(data, source, target, key="values"):
    n = len(data["nodes"])
    return data[key][data["nodes"].index(source) * n + data["nodes"].index(target)]


def test_heatmap_has_every_quantile_with_kind_samples_and_age(client, settings):
    now = timezone.now().replace(microsecond=0)
    snapshot = measured(settings, now)
    p90 = client.get("/dashboard/data/heatmap", {"metric": "latency_p90"}).json()
    assert p90["version"] == snapshot.version and "what the scheduler scores with" in p90["source"]
    assert cell(p90, "a1", "b1") == pytest.approx(4.0)
    assert cell(p90, "a1", "b1", "kind") == 1 and cell(p90, "a1", "b1", "samples") == 3
    assert p90["sampleBase"] + cell(p90, "a1", "b1", "sampleOffset") == pytest.approx((now - timedelta(minutes=1)).timestamp())
    assert cell(p90, "b1", "a2", "kind") == 2  # never measured: inferred from the zone pair
    assert cell(p90, "b1", "a2", "samples") == 0 and cell(p90, "b1", "a2", "sampleOffset") == -1
    p50 = client.get("/dashboard/data/heatmap", {"metric": "latency_p50"}).json()
    p99 = client.get("/dashboard/data/heatmap", {"metric": "latency_p99"}).json()
    assert cell(p50, "a1", "b1") == pytest.approx(2.0) and cell(p99, "a1", "b1") == pytest.approx(8.0)
    assert "the scheduler uses p90" in p50["source"] and cell(p50, "b1", "a2") is None
    assert cell(client.get("/dashboard/data/heatmap", {"metric": "loss"}).json(), "a1", "b1") == pytest.approx(1.0)
    assert cell(client.get("/dashboard/data/heatmap", {"metric": "bandwidth"}).json(), "a1", "b1") == pytest.approx(500.0)
    bad = client.get("/dashboard/data/heatmap", {"metric": "jitter"})
    assert bad.status_code == 400 and "metric" in bad.json()


def test_unchanged_data_is_a_304_new_data_is_not(client, settings):
    now = timezone.now().replace(microsecond=0)
    measured(settings, now)
    first = client.get("/dashboard/data/heatmap", {"metric": "latency_p90"}, HTTP_ACCEPT_ENCODING="gzip")
    assert first["Content-Encoding"] == "gzip" and first["ETag"]
    body = orjson.loads(gzip.decompress(first.content))
    assert client.get("/dashboard/data/heatmap", {"metric": "latency_p90"}, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    store(now, scale=3.0)
    snapshot = topology_services.rebuild_topology(now=now + timedelta(seconds=1))
    again = client.get("/dashboard/data/heatmap", {"metric": "latency_p90"}, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200 and again.json()["version"] == snapshot.version > body["version"]
    assert cell(again.json(), "a1", "b1") == pytest.approx(12.0)


def test_staleness_is_computed_when_read(client, settings):
    now = timezone.now().replace(microsecond=0)
    measured(settings, now)
    assert client.get("/dashboard/data/heatmap").json()["stale"] is False
    settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": 30}  # as if no rebuild came for a while
    data = client.get("/dashboard/data/heatmap").json()
    assert data["stale"] is True and "no measurement in the last 30 s" in data["staleReason"]


def test_zones_and_link_history(client, settings):
    now = timezone.now().replace(microsecond=0)
    measured(settings, now)
    zones = client.get("/dashboard/data/zones").json()
    assert [z["name"] for z in zones["zones"]] == ["A", "B"]
    ab = next(p for p in zones["pairs"] if (p["from"], p["to"]) == ("A", "B"))
    assert ab["pairs"] == 2 and ab["latency"] == pytest.approx(4.5) and ab["bandwidth"] == pytest.approx(500.0)
    link = client.get("/dashboard/data/links/a1/b1", {"range": "1h"}).json()
    assert link["series"]["rtt_p99"]["v"] == pytest.approx([8.0, 8.0, 8.0])
    assert link["series"]["loss_ratio"]["v"] == pytest.approx([1.0] * 3) and link["points"] == 15
    assert link["now"]["latency"] == pytest.approx(4.0) and link["now"]["inferred"] is False
    assert client.get("/dashboard/data/links/a1/b1", {"range": "forever"}).status_code == 400
    assert client.get("/links/a1/b1/").status_code == 200


def test_placements_map_scores_pods_and_links_dependent_nodes(client):
    seed_topology()
    seed_boutique()
    place("frontend", "a1")
    place("productcatalog", "f1")
    place("cart", "a1")
    data = client.get("/dashboard/data/placements").json()
    nodes = [n["name"] for n in data["nodes"]]
    pods = {p["pod"]: p for p in data["pods"]}
    assert nodes[pods["default/frontend-0"]["node"]] == "a1"
    group = data["groups"][0]
    assert group["name"] == "default/online-boutique" and group["pods"] == 3
    scores = {w["name"]: w["score"] for w in group["workloads"]}
    assert scores["frontend"] is not None and 0 <= scores["frontend"] <= 100
    assert scores["productcatalog"] < scores["cart"]  # far away from its caller
    link = next(lk for lk in data["links"] if {nodes[lk["from"]], nodes[lk["to"]]} == {"a1", "f1"})
    assert link["latency"] == pytest.approx(20.0)
    assert not any(nodes[lk["from"]] == nodes[lk["to"]] for lk in data["links"])  # same-node pairs draw nothing
    etag = client.get("/dashboard/data/placements")["ETag"]
    assert client.get("/dashboard/data/placements", HTTP_IF_NONE_MATCH=etag).status_code == 304
    place("cart", "b1")
    assert client.get("/dashboard/data/placements", HTTP_IF_NONE_MATCH=etag).status_code == 200


def test_sample_counts_when_windows_hold_different_pairs(client, settings):
    """Steady state reads the newest window only (digests agree); a window that lost a pair makes
    the counts per pair differ, and they still come out right."""
    now = timezone.now().replace(microsecond=0)
    measured(settings, now)
    src, dst = ["a2", "b1"], ["a1", "a1"]  # a1 -> b1 (and others) missing from this newest window
    probe_services.store_window(ts=now, pairs={"rtt_p90": (src, dst, np.array([0.002, 0.006]))})
    topology_services.rebuild_topology(now=now + timedelta(seconds=1))
    data = client.get("/dashboard/data/heatmap", {"metric": "latency_p90"}).json()
    assert cell(data, "a2", "a1", "samples") == 4 and cell(data, "a1", "b1", "samples") == 3
    newest = data["sampleBase"] + cell(data, "a2", "a1", "sampleOffset")
    older = data["sampleBase"] + cell(data, "a1", "b1", "sampleOffset")
    assert newest - older == pytest.approx(60.0)
