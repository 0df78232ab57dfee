"""derive_topology: fill-in from zone then region medians, staleness, extrema, Dijkstra costs, round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.scheduler.scoring.common import WorkloadRef
from apps.scheduler.scoring.network_overhead import overhead
from apps.scheduler.scoring.state import ClusterState
from apps.topology.topomath import (
    SAME_NODE_COST,
    SAME_ZONE_COST,
    UNKNOWN_COST,
    NodeMeta,
    PairArrays,
    derive_topology,
    group_medians,
    nested_maps,
    topology_from_nested,
)

NOW = 1_800_000_000.0


def pairs_from(entries: dict[tuple[int, int], tuple[float, float, float]], ts: dict | None = None) -> PairArrays:
    """entries: (src, dst) -> (latency ms, bandwidth Mbps, loss %); NaN = metric not measured."""
    keys = sorted(entries)
    src = np.array([k[0] for k in keys], dtype=np.int64)
    dst = np.array([k[1] for k in keys], dtype=np.int64)
    vals = np.array([entries[k] for k in keys], dtype=float).reshape(-1, 3)
    stamps = np.array([(ts or {}).get(k, NOW - 10.0) for k in keys], dtype=float)
    return PairArrays(src, dst, vals[:, 0], vals[:, 1], vals[:, 2], stamps, stamps, stamps)


def costs_to(topology, target: str, candidates: list[str]) -> dict[str, float]:
    """The cost the NetworkOverhead scorer charges a pod on each candidate for one dependency placed on
    ``target``: the zone/region costs as the scorer reads them (``scoring/indexes.py``'s places)."""
    sensitivity = Sensitivity(1.0, 0.0, 0.0)
    pod = WorkloadSpec("pod", LabelSelector({"app": "pod"}),
                       dependencies=(DependencySpec(target="dep", sensitivity=sensitivity, max_network_cost=0.0),))
    group = AppGroupSpec(namespace="default", name="g", workloads=(pod, WorkloadSpec("dep", LabelSelector({"app": "dep"}))))
    state = ClusterState(topology=topology, appgroups=(group,), placements={("default", "g", "dep"): (target,)})
    result = overhead(state, WorkloadRef(group, pod), candidates)
    return {name: float(cost) for name, cost in zip(candidates, result.costs, strict=True)}


def four_nodes() -> list[NodeMeta]:
    # a0, a1 in zone A; b0 in zone B (same region r1); c0 in zone C of region r2.
    return [NodeMeta("a0", "A", "r1"), NodeMeta("a1", "A", "r1"), NodeMeta("b0", "B", "r1"), NodeMeta("c0", "C", "r2")]


def test_missing_pair_is_filled_from_zone_pair_median_and_flagged_inferred():
    nodes = four_nodes()
    # a0->b0 measured 4 ms, a1->b0 missing: same zone pair (A, B) -> filled with 4.
    pairs = pairs_from({(0, 2): (4.0, 100.0, 1.0), (0, 1): (0.5, 1000.0, 0.0)})
    topo = derive_topology(nodes=nodes, pairs=pairs, now=NOW, stale_after_s=600)
    i = topo.index
    assert topo.latency_ms[i["a1"], i["b0"]] == 4.0
    assert topo.bandwidth_mbps[i["a1"], i["b0"]] == 100.0
    assert topo.inferred[i["a1"], i["b0"]]
    assert not topo.inferred[i["a0"], i["b0"]]
    assert topo.measured[i["a0"], i["b0"]] and not topo.measured[i["a1"], i["b0"]]
    # Nothing measured B->A: the region r1->r1 median (of 4 and 0.5 ms) fills it.
    assert topo.latency_ms[i["b0"], i["a0"]] == 2.25 and topo.inferred[i["b0"], i["a0"]]
    # Nothing measured from region r2 at all: stays unknown, not inferred.
    assert math.isnan(topo.latency_ms[i["c0"], i["a0"]])
    assert not topo.inferred[i["c0"], i["a0"]]


def test_zone_median_uses_only_measured_pairs_of_that_directed_zone_pair():
    nodes = [NodeMeta(f"a{k}", "A", "r") for k in range(3)] + [NodeMeta(f"b{k}", "B", "r") for k in range(2)]
    # A->B measured 1, 2, 10 ms (median 2); B->A measured 50 (must not leak into A->B).
    pairs = pairs_from({(0, 3): (1.0, 1, 0), (1, 3): (2.0, 1, 0), (2, 3): (10.0, 1, 0), (3, 0): (50.0, 1, 0)})
    topo = derive_topology(nodes=nodes, pairs=pairs, now=NOW, stale_after_s=600)
    i = topo.index
    for src in ("a0", "a1", "a2"):
        assert topo.latency_ms[i[src], i["b1"]] == 2.0
    assert topo.latency_ms[i["b1"], i["a1"]] == 50.0


def test_region_pair_median_fills_when_the_zone_pair_has_no_measurement():
    nodes = [NodeMeta("a0", "A", "r1"), NodeMeta("b0", "B", "r1"), NodeMeta("c0", "C", "r2"), NodeMeta("d0", "D", "r2")]
    # r1->r2 measured only as a0->c0 (30 ms): b0->d0 (zone pair B,D never measured) gets the region median.
    pairs = pairs_from({(0, 2): (30.0, 10.0, 3.0)})
    topo = derive_topology(nodes=nodes, pairs=pairs, now=NOW, stale_after_s=600)
    i = topo.index
    assert topo.latency_ms[i["b0"], i["d0"]] == 30.0
    assert topo.loss_pct[i["b0"], i["d0"]] == 3.0
    assert topo.inferred[i["b0"], i["d0"]]
    # Within r2 (C->D) nothing is known at all.
    assert math.isnan(topo.latency_ms[i["c0"], i["d0"]])


def test_unknown_zone_is_its_own_zone():
    nodes = [NodeMeta("x", "", "r"), NodeMeta("y", "", "r"), NodeMeta("b0", "B", "r"), NodeMeta("b1", "B", "r")]
    # x->b0 measured; x->b1 is filled from x's own pseudo zone (x, B); y (another unknown zone) only
    # gets the region median, which here includes b0->b1 as well.
    pairs = pairs_from({(0, 2): (7.0, 1, 0), (2, 3): (1.0, 1, 0)})
    topo = derive_topology(nodes=nodes, pairs=pairs, now=NOW, stale_after_s=600)
    i = topo.index
    assert topo.latency_ms[i["x"], i["b1"]] == 7.0
    assert topo.latency_ms[i["y"], i["b1"]] == 4.0  # median of {7, 1}
    assert topo.zone_costs == {}  # no known zone pair besides B itself


def test_stale_pair_is_dropped_flagged_and_does_not_feed_aggregates():
    nodes = four_nodes()
    pairs = pairs_from(
        {(0, 2): (4.0, 100.0, 1.0), (1, 2): (99.0, 5.0, 50.0)},
        ts={(1, 2): NOW - 601.0},
    )
    topo = derive_topology(nodes=nodes, pairs=pairs, now=NOW, stale_after_s=600)
    i = topo.index
    assert topo.stale[i["a1"], i["b0"]] and not topo.stale[i["a0"], i["b0"]]
    # the stale 99 ms is gone: the pair is refilled from the fresh zone-pair median.
    assert topo.latency_ms[i["a1"], i["b0"]] == 4.0
    assert topo.inferred[i["a1"], i["b0"]]
    assert topo.max_latency == 4.0
    assert topo.max_lossrate == 1.0


def test_extrema_over_off_diagonal_values_and_min_equal_max():
    nodes = [NodeMeta("a", "Z", "R"), NodeMeta("b", "Z", "R")]
    topo = derive_topology(nodes=nodes, pairs=pairs_from({(0, 1): (2.5, 300.0, 0.0), (1, 0): (2.5, 300.0, 0.0)}),
                           now=NOW, stale_after_s=600)
    assert topo.min_latency == topo.max_latency == 2.5  # diagonal zeros are not counted
    assert topo.min_bandwidth == topo.max_bandwidth == 300.0
    assert topo.min_lossrate == topo.max_lossrate == 0.0
    doc = nested_maps(topo)
    assert doc["minLatency"] == doc["maxLatency"] == 2.5
    empty = derive_topology(nodes=nodes, pairs=PairArrays.empty(), now=NOW, stale_after_s=600)
    assert math.isnan(empty.min_latency) and math.isnan(empty.max_bandwidth)
    assert nested_maps(empty)["latency"] == {} and nested_maps(empty)["maxLatency"] is None


def test_zone_cost_uses_a_cheaper_path_through_an_intermediate_zone():
    # Zones A, B, C in one region; same-zone latency 1 ms (the cost unit). A->B 2, B->C 3, A->C 10 ms.
    names = [("a0", "A"), ("a1", "A"), ("b0", "B"), ("b1", "B"), ("c0", "C"), ("c1", "C")]
    nodes = [NodeMeta(n, z, "r") for n, z in names]
    lat = {"AA": 1, "BB": 1, "CC": 1, "AB": 2, "BA": 2, "BC": 3, "CB": 3, "AC": 10, "CA": 10}
    entries = {}
    for s, (_, zs) in enumerate(names):
        for t, (_, zt) in enumerate(names):
            if s != t:
                entries[(s, t)] = (float(lat[zs + zt]), 100.0, 0.0)
    topo = derive_topology(nodes=nodes, pairs=pairs_from(entries), now=NOW, stale_after_s=600)
    assert topo.cost_unit_ms == 1.0
    assert topo.zone_costs[("A", "B")] == 2.0
    assert topo.zone_costs[("A", "C")] == 5.0  # A->B->C beats the direct 10
    assert topo.latency_ms[topo.index["a0"], topo.index["c0"]] == 10.0  # latency itself is untouched
    # A user-defined edge cost overrides the measured one before the shortest paths.
    cheap = derive_topology(nodes=nodes, pairs=pairs_from(entries), now=NOW, stale_after_s=600,
                            zone_cost_overrides={("A", "C"): 1.5})
    assert cheap.zone_costs[("A", "C")] == 1.5
    costs = costs_to(topo, "a0", ["a0", "a1", "c1"])
    assert costs == {"a0": SAME_NODE_COST, "a1": SAME_ZONE_COST, "c1": 5.0}


def test_region_costs_by_dijkstra_and_unknown_cost_without_path():
    nodes = [NodeMeta("p", "P", "r1"), NodeMeta("q", "Q", "r2"), NodeMeta("s", "S", "r3"), NodeMeta("u", "U", "r4")]
    # r1->r2 40 ms, r2->r3 40 ms, r1->r3 200 ms; no intra-zone data: cost unit 1 ms.
    pairs = pairs_from({(0, 1): (40.0, 1, 0), (1, 2): (40.0, 1, 0), (0, 2): (200.0, 1, 0)})
    topo = derive_topology(nodes=nodes, pairs=pairs, now=NOW, stale_after_s=600)
    assert topo.region_costs[("r1", "r3")] == 80.0
    assert ("r3", "r1") not in topo.region_costs
    assert costs_to(topo, "p", ["s"]) == {"s": UNKNOWN_COST}
    assert costs_to(topo, "s", ["p"]) == {"p": 80.0}


def test_nested_maps_round_trip():
    nodes = four_nodes()
    pairs = pairs_from({(0, 2): (4.0, 100.0, 1.0), (2, 0): (4.5, 90.0, 2.0), (0, 3): (30.0, 10.0, 5.0),
                        (0, 1): (0.5, 1000.0, 0.0)})
    topo = derive_topology(nodes=nodes, pairs=pairs, now=NOW, stale_after_s=600)
    doc = nested_maps(topo)
    assert doc["latency"]["a0"]["b0"] == 4.0 and doc["bandwidth"]["b0"]["a0"] == 90.0
    assert "a0" not in doc["latency"]["a0"]  # no diagonal
    assert "c0" not in doc["latency"]  # nothing known from c0
    back = topology_from_nested(doc, nodes=nodes, now=NOW)
    assert back.nodes == topo.nodes
    for name in ("latency_ms", "bandwidth_mbps", "loss_pct"):
        np.testing.assert_array_equal(getattr(back, name), getattr(topo, name))
    assert nested_maps(back) == doc


def test_given_extrema_override_computed_ones():
    topo = topology_from_nested({"latency": {"a": {"b": 2.0}}, "maxLatency": 50.0})
    assert topo.min_latency == 2.0 and topo.max_latency == 50.0


def test_group_medians_match_numpy_median():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 50, size=5000)
    values = rng.random(5000)
    (medians,) = group_medians(values, [(keys, 60)])
    for k in range(60):
        sel = values[keys == k]
        if sel.size:
            assert medians[k] == pytest.approx(float(np.median(sel)))
        else:
            assert math.isnan(medians[k])


def test_pair_arrays_from_series_merges_metrics_by_name_and_ignores_unknown_nodes():
    pairs = PairArrays.from_series(
        nodes=["n2", "n1"],
        latency=(["n1", "n2"], ["n2", "n1"], np.array([1.0, 2.0]), np.array([10.0, 11.0])),
        loss=(["n1", "zz"], ["n2", "n1"], np.array([3.0, 4.0]), np.array([12.0, 13.0])),
    )
    topo = derive_topology(nodes=[NodeMeta("n2"), NodeMeta("n1")], pairs=pairs, now=20.0, stale_after_s=600)
    assert topo.latency_ms[1, 0] == 1.0 and topo.latency_ms[0, 1] == 2.0
    assert topo.loss_pct[1, 0] == 3.0 and math.isnan(topo.loss_pct[0, 1])
    assert math.isnan(topo.bandwidth_mbps[1, 0])


def test_arrays_are_read_only():
    topo = derive_topology(nodes=four_nodes(), pairs=pairs_from({(0, 1): (1.0, 1.0, 0.0)}), now=NOW,
                           stale_after_s=600)
    with pytest.raises(ValueError):
        topo.latency_ms[0, 1] = 5.0
