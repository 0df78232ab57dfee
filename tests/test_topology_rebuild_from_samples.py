"""PairSample rows -> services.rebuild_topology -> GET /api/topology/: the paper testbed's nominal values,
staleness, the Prometheus-down flag, the cached current_topology and snapshot pruning."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone

from apps.probes.models import PairSample
from apps.probes.scenario import load_scenario
from apps.topology import selectors, services
from apps.topology.models import Node, TopologySnapshot

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper-testbed.yaml"

pytestmark = pytest.mark.django_db


def paper_samples(ts, *, skip=frozenset(), latency_scale=1.0):
    """Rows with the scenario's nominal values as the pipeline stores them (seconds, ratio, bit/s)."""
    scenario = load_scenario(SCENARIO)
    rows = []
    for a in scenario.node_names:
        for b in scenario.node_names:
            if a == b or (a, b) in skip:
                continue
            link = scenario.link(a, b)
            for series, value in (("rtt_p90", link.latency_ms / 1000.0 * latency_scale),
                                  ("rtt_p50", link.latency_ms / 2000.0),
                                  ("loss_ratio", link.loss_pct / 100.0),
                                  ("bandwidth_bps", link.bandwidth_mbps * 1e6)):
                rows.append(PairSample(ts=ts, series=series, source=a, target=b, value=value))
    PairSample.objects.bulk_create(rows)
    return scenario


def test_paper_testbed_samples_become_the_served_topology(client):
    now = timezone.now()
    scenario = load_scenario(SCENARIO)
    assert services.load_nodes_from_scenario(scenario=scenario) == 19
    paper_samples(now - timedelta(seconds=30), skip={("n1402", "n1407")})
    snapshot = services.rebuild_topology(now=now)
    assert snapshot.version == 1 and snapshot.node_count == 19
    assert snapshot.measured_pairs == 19 * 18 - 1 and snapshot.inferred_pairs == 1

    response = client.get("/api/topology/")
    assert response.status_code == 200
    doc = response.json()
    assert doc["kind"] == "NetworkTopology" and doc["apiVersion"] == "netaware.io/v1alpha1"
    assert doc["metadata"]["generation"] == 1
    spec = doc["spec"]
    assert (spec["minLatency"], spec["maxLatency"]) == (0.5, 10.0)
    assert (spec["minBandwidth"], spec["maxBandwidth"]) == (20.0, 1000.0)
    assert (spec["minLossrate"], spec["maxLossrate"]) == (0.0, 5.0)
    for a in scenario.node_names:
        for b in scenario.node_names:
            if a != b:
                link = scenario.link(a, b)
                assert spec["latency"][a][b] == pytest.approx(link.latency_ms, rel=1e-6)
                assert spec["bandwidth"][a][b] == pytest.approx(link.bandwidth_mbps, rel=1e-6)
                assert spec["lossrate"][a][b] == pytest.approx(link.loss_pct, rel=1e-6, abs=1e-4)
    # The one unmeasured pair (A -> B) is filled from the A->B zone median and listed as inferred.
    assert spec["latency"]["n1402"]["n1407"] == 1.0
    assert doc["status"]["inferred"] == {"n1402": ["n1407"]}
    assert doc["status"] | {} and doc["status"]["stale"] is False and doc["status"]["inferredPairs"] == 1
    zones = {z["name"]: z for z in spec["zones"]}
    assert zones["FAR"]["nodes"] == ["n1417", "n1418", "n1419", "n1420"] and zones["A"]["region"] == "testbed"
    # Cost unit = median same-zone latency (0.5 ms); B->C direct is 10 units, via A only 2 + 4.
    assert spec["costs"]["unitMs"] == 0.5
    assert spec["costs"]["zones"]["A"]["B"] == 2.0 and spec["costs"]["zones"]["B"]["C"] == 6.0

    topology = selectors.current_topology()
    assert topology is not None and topology.version == 1
    assert topology.latency_ms[topology.index["n1402"], topology.index["n1417"]] == 10.0
    assert selectors.current_topology() is topology  # cached: no reload without a new version


def test_stale_pairs_are_dropped_and_flagged(client, settings):
    settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": 300}
    now = timezone.now()
    services.load_nodes_from_scenario(scenario=SCENARIO)
    old_pair = ("n1402", "n1417")
    paper_samples(now - timedelta(seconds=20), skip={old_pair})
    # The A->FAR pair's newest sample is 10 minutes old and claims 99 ms.
    PairSample.objects.create(ts=now - timedelta(seconds=600), series="rtt_p90", source=old_pair[0],
                              target=old_pair[1], value=0.099)
    snapshot = services.rebuild_topology(now=now)
    doc = client.get("/api/topology/").json()
    assert snapshot.stale_pairs == 1
    assert doc["status"]["stalePairList"] == {"n1402": ["n1417"]}
    assert doc["spec"]["latency"]["n1402"]["n1417"] == 10.0  # refilled from the A->FAR median, not 99
    assert doc["spec"]["maxLatency"] == 10.0


def test_mark_stale_survives_rebuilds_without_new_data_and_clears_on_new_data(client):
    now = timezone.now()
    services.load_nodes_from_scenario(scenario=SCENARIO)
    paper_samples(now - timedelta(seconds=60))
    first = services.rebuild_topology(now=now)
    services.mark_stale(reason="Prometheus unreachable: connection refused")
    assert selectors.current_topology().stale_reason.startswith("Prometheus unreachable")
    doc = client.get("/api/topology/").json()
    assert doc["status"]["stale"] is True and "connection refused" in doc["status"]["staleReason"]
    # The periodic rebuild one minute later sees no newer sample: still flagged stale.
    again = services.rebuild_topology(now=now + timedelta(seconds=60))
    assert again.stale and again.stale_reason.startswith("Prometheus unreachable")
    # New data arrives: the next rebuild is a new, fresh version.
    paper_samples(now + timedelta(seconds=90), latency_scale=1.2)
    fresh = services.rebuild_topology(now=now + timedelta(seconds=120))
    assert fresh.version > first.version and not fresh.stale
    topology = selectors.current_topology()
    assert topology.version == fresh.version and topology.stale_reason == ""
    assert topology.max_latency == pytest.approx(12.0)


def test_rebuild_without_changes_keeps_the_version_and_old_versions_are_pruned(settings):
    settings.NETAWARE = {**settings.NETAWARE, "TOPOLOGY_KEEP_SNAPSHOTS": 3}
    now = timezone.now()
    services.load_nodes_from_scenario(scenario=SCENARIO)
    for step in range(5):
        paper_samples(now + timedelta(seconds=60 * step), latency_scale=1.0 + step / 10)
        services.rebuild_topology(now=now + timedelta(seconds=60 * step + 1))
    assert services.rebuild_topology(now=now + timedelta(seconds=250)).version == 5  # unchanged input
    assert list(TopologySnapshot.objects.values_list("version", flat=True)) == [5, 4, 3]
    assert TopologySnapshot.objects.current().version == 5


def test_no_measurements_at_all_is_a_stale_snapshot_with_unknown_values(client):
    services.load_nodes_from_scenario(scenario=SCENARIO)
    snapshot = services.rebuild_topology()
    assert snapshot.stale and "no measurement" in snapshot.stale_reason
    doc = client.get("/api/topology/").json()
    assert doc["spec"]["latency"] == {} and doc["spec"]["maxLatency"] is None


def test_topology_404_before_the_first_snapshot(client):
    response = client.get("/api/topology/")
    assert response.status_code == 404 and "No NetworkTopology yet" in response.json()["detail"]


def test_snapshot_list_and_detail(client):
    now = timezone.now()
    services.load_nodes_from_scenario(scenario=SCENARIO)
    paper_samples(now - timedelta(seconds=5))
    services.rebuild_topology(now=now)
    listing = client.get("/api/topology/snapshots/").json()
    rows = listing["results"] if isinstance(listing, dict) else listing
    assert rows[0]["version"] == 1 and rows[0]["max_latency"] == 10.0 and rows[0]["node_count"] == 19
    detail = client.get("/api/topology/snapshots/1/")
    assert detail.status_code == 200 and detail.json()["spec"]["latency"]["n1407"]["n1412"] == 5.0
    assert client.get("/api/topology/snapshots/99/").status_code == 404


def test_samples_from_nodes_missing_in_the_cache_still_count(client):
    now = timezone.now()
    PairSample.objects.create(ts=now, series="rtt_p90", source="x1", target="x2", value=0.002)
    snapshot = services.rebuild_topology(now=now)
    assert snapshot.node_count == 2 and Node.objects.count() == 0
    topology = selectors.current_topology()
    assert np.isclose(topology.latency_ms[topology.index["x1"], topology.index["x2"]], 2.0)


def test_store_topology_makes_a_derived_topology_current_and_rebuild_keeps_it_without_new_data():
    from apps.topology.topomath import NodeMeta, PairArrays, derive_topology

    topo = derive_topology(nodes=[NodeMeta("a", "Z", "R"), NodeMeta("b", "Z", "R")],
                           pairs=PairArrays(np.array([0]), np.array([1]), np.array([3.0]), np.array([50.0]),
                                            np.array([1.0]), np.array([0.0]), np.array([0.0]), np.array([0.0])),
                           now=0.0, stale_after_s=float("inf"))
    snapshot = services.store_topology(topology=topo, source="imported")
    assert services.rebuild_topology() == snapshot  # no samples newer than the import
    loaded = selectors.current_topology()
    assert loaded.version == snapshot.version and loaded.latency_ms[0, 1] == 3.0 and loaded.inferred[1, 0]
