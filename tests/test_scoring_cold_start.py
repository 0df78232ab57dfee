"""Cold start puts the first pods of a rollout in the best-connected zone (A on the paper testbed),
never in FAR, and follows free capacity when the best zone is full; its graded scale keeps every zone
apart (A > B > C > FAR) in the 0..100 total and in kube-scheduler's 0..10 integers."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.scoring import cold_start, default_plugins, engine
from apps.scheduler.scoring.common import WorkloadRef
from apps.scheduler.scoring.state import ClusterState, NodeResources, PodInfo
from apps.topology.scenario_topology import topology_from_scenario
from apps.topology.topomath import Topology
from tests.support import oracles
from tests.support.scoring_fixtures import paper_appgroup, pod_labels

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper-testbed.yaml"


@pytest.fixture(scope="module")
def testbed():
    scenario = load_scenario(SCENARIO)
    nodes = {n.name: NodeResources(n.name, n.zone, n.region, n.cpu_millicores, n.memory_bytes) for n in scenario.nodes}
    return topology_from_scenario(scenario), nodes, {n.name: n.zone for n in scenario.nodes}


def _best_zones(out, zone_of):
    best = out.extender.max()
    return {zone_of[n] for n, s in zip(out.nodes, out.extender, strict=True) if s == best}


@pytest.mark.parametrize("workload", [w.name for w in paper_appgroup().workloads])
def test_first_pod_of_any_workload_goes_to_zone_a(testbed, workload):
    topology, nodes, zone_of = testbed
    state = ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=nodes)
    out = engine.run_scorers(state, PodInfo("default", f"{workload}-0", labels=pod_labels(workload)),
                             list(topology.nodes), engine.BUILTIN_PROFILES["network"])
    assert _best_zones(out, zone_of) == {"A"}
    far = [s for n, s in zip(out.nodes, out.breakdown["network-score"], strict=True) if zone_of[n] == "FAR"]
    assert max(far) < out.breakdown["network-score"].max()
    assert any("cold start" in note for note in out.notes)


def test_cold_start_follows_capacity_when_zone_a_is_full(testbed):
    topology, nodes, zone_of = testbed
    full = {n: NodeResources(r.name, r.zone, r.region, r.allocatable_cpu_millicores, r.allocatable_memory_bytes,
                             requested_cpu_millicores=r.allocatable_cpu_millicores if r.zone == "A" else 0)
            for n, r in nodes.items()}
    state = ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=full)
    out = engine.run_scorers(state, PodInfo("default", "cart-0", labels=pod_labels("cart")),
                             [n for n in topology.nodes if zone_of[n] != "A"], engine.BUILTIN_PROFILES["network"])
    assert _best_zones(out, zone_of) == {"B"}


def test_disabled_cold_start_is_neutral(testbed):
    topology, nodes, _ = testbed
    state = ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=nodes)
    profile = engine.Profile("plain", (("network-score", 1.0, {"cold_start": False}),))
    out = engine.run_scorers(state, PodInfo("default", "ad-0", labels=pod_labels("ad")), list(topology.nodes), profile)
    assert set(out.total.tolist()) == {50.0}


def test_random_rollouts_never_touch_far(testbed):
    """Pods of the whole AppGroup in random orders, extender integer scores, random tie-break."""
    topology, nodes, zone_of = testbed
    group = paper_appgroup()
    for seed in range(10):
        rng = random.Random(seed)
        order = [w.name for w in group.workloads]
        rng.shuffle(order)
        placements: dict = {}
        for w in order:
            state = ClusterState(topology=topology, appgroups=(group,), placements=placements, nodes=nodes)
            out = engine.run_scorers(state, PodInfo("default", w, labels=pod_labels(w)), list(topology.nodes),
                                     engine.BUILTIN_PROFILES["network"])
            choice = rng.choice([n for n, s in zip(out.nodes, out.extender, strict=True) if s == out.extender.max()])
            placements = {**placements, ("default", group.name, w): (choice,)}
        zones = {zone_of[v[0]] for v in placements.values()}
        assert "FAR" not in zones and zones == {"A"}, (seed, placements)


def test_partially_placed_group_uses_regular_score(testbed):
    topology, nodes, zone_of = testbed
    group = paper_appgroup()
    # frontend in C: cart's dependent is placed, so Algorithm 2 (not cold start) decides -> C wins.
    state = ClusterState(topology=topology, appgroups=(group,), nodes=nodes,
                         placements={("default", group.name, "frontend"): ("n1412",)})
    out = engine.run_scorers(state, PodInfo("default", "cart-0", labels=pod_labels("cart")), list(topology.nodes),
                             engine.BUILTIN_PROFILES["network"])
    assert _best_zones(out, zone_of) == {"C"}
    assert not any("cold start" in note for note in out.notes)
    ref = WorkloadRef(group, group.workload("cart"))
    expected = [oracles.network_score(state, ref, n) for n in out.nodes]
    np.testing.assert_allclose(out.breakdown["network-score"], expected, atol=1e-4)


def test_stratified_sample_keeps_the_best_zone_on_large_clusters():
    """300 nodes in 30 zones, cold start limited to 32 target nodes: every zone keeps a
    representative, so the zone with the best internal links still wins."""
    rng = np.random.default_rng(4)
    zones, per = 30, 10
    n = zones * per
    zone = np.arange(n) // per
    lat = rng.uniform(5, 20, (n, n))
    bw = rng.uniform(50, 200, (n, n))
    loss = rng.uniform(1, 3, (n, n))
    same = zone[:, None] == zone[None, :]
    lat[same], bw[same], loss[same] = 1.0, 500.0, 0.5
    best = (zone[:, None] == 7) & (zone[None, :] == 7)
    lat[best], bw[best], loss[best] = 0.5, 1000.0, 0.0
    np.fill_diagonal(lat, 0.0)
    off = ~np.eye(n, dtype=bool)
    no = np.zeros((n, n), dtype=bool)
    names = tuple(f"v{i}" for i in range(n))
    topo = Topology(names, tuple(f"z{z}" for z in zone), ("r",) * n, lat, bw, loss, no, no.copy(),
                    float(lat[off].min()), float(lat[off].max()), float(bw[off].min()), float(bw[off].max()),
                    float(loss[off].min()), float(loss[off].max()))
    s = Sensitivity(0.5, 0.4, 0.1)
    group = AppGroupSpec("ns", "g", tuple(
        WorkloadSpec(f"w{i}", LabelSelector({"app": f"w{i}"}), 1.0,
                     (DependencySpec(f"w{i + 1}", s),) if i < 9 else (), replicas=3, cpu_request_millicores=100)
        for i in range(10)))
    nodes = {name: NodeResources(name, f"z{zone[i]}", "r", 4000, 8 << 30) for i, name in enumerate(names)}
    state = ClusterState(topology=topo, appgroups=(group,), nodes=nodes)
    profile = engine.Profile("cold", (("network-score", 1.0, {"sample": 32}),))
    out = engine.run_scorers(state, PodInfo("ns", "w3-0", labels={"app": "w3"}), list(names), profile)
    winners = {int(n[1:]) // per for n, v in zip(out.nodes, out.extender, strict=True) if v == out.extender.max()}
    assert winners == {7}


# ---------------------------------------------------------------- graded scale (every zone separated)

ZONE_ORDER = ("A", "B", "C", "FAR")


def _pod(workload: str) -> PodInfo:
    w = paper_appgroup().workload(workload)
    return PodInfo("default", f"{workload}-0", labels=pod_labels(workload),
                   cpu_request_millicores=w.cpu_request_millicores, memory_request_bytes=w.memory_request_bytes)


def _with_zones_requested(nodes, zones, free_cpu_millicores):
    """Nodes of ``zones`` keep only ``free_cpu_millicores`` of cpu unrequested (0 = full)."""
    return {n: NodeResources(r.name, r.zone, r.region, r.allocatable_cpu_millicores, r.allocatable_memory_bytes,
                             requested_cpu_millicores=(r.allocatable_cpu_millicores - free_cpu_millicores
                                                       if r.zone in zones else 0))
            for n, r in nodes.items()}


def _by_zone(out, values, zone_of):
    zones: dict[str, list[float]] = {}
    for n, v in zip(out.nodes, values, strict=True):
        zones.setdefault(zone_of[n], []).append(float(v))
    return zones


def _assert_strictly_ordered(zones, order):
    """Every node of each zone scores strictly above every node of the next zone."""
    for better, worse in itertools.pairwise(order):
        assert min(zones[better]) > max(zones[worse]), (better, worse, zones)


@pytest.mark.parametrize("workload", [w.name for w in paper_appgroup().workloads])
def test_cold_start_grades_every_zone_on_the_paper_testbed(testbed, workload):
    """A > B > C > FAR strictly, in the 0..100 total and in kube-scheduler's 0..10 integers: the best
    zone maps to 10, the next clearly lower (<= 9), and C is no longer confused with FAR."""
    topology, nodes, zone_of = testbed
    state = ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=nodes)
    out = engine.run_scorers(state, _pod(workload), list(topology.nodes), engine.BUILTIN_PROFILES["network"])
    assert any("cold start" in note for note in out.notes)
    _assert_strictly_ordered(_by_zone(out, out.total, zone_of), ZONE_ORDER)
    ext = _by_zone(out, out.extender, zone_of)
    _assert_strictly_ordered(ext, ZONE_ORDER)
    assert set(ext["A"]) == {10.0}
    assert max(ext["B"]) <= 9
    assert min(ext["FAR"]) >= 0


def test_zone_a_full_b_wins_then_c_then_far(testbed):
    topology, nodes, zone_of = testbed
    full = _with_zones_requested(nodes, {"A"}, 0)
    state = ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=full)
    for workload in ("frontend", "cart", "redis-cart"):
        pod = _pod(workload)
        fits, rejected = default_plugins.filter_resource_fit(full, pod, topology.nodes)
        assert {zone_of[n] for n in rejected} == {"A"}
        out = engine.run_scorers(state, pod, fits, engine.BUILTIN_PROFILES["network"])
        assert _best_zones(out, zone_of) == {"B"}
        _assert_strictly_ordered(_by_zone(out, out.extender, zone_of), ("B", "C", "FAR"))


def test_zones_a_and_b_full_c_wins_over_far(testbed):
    topology, nodes, zone_of = testbed
    full = _with_zones_requested(nodes, {"A", "B"}, 0)
    state = ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=full)
    for workload in ("frontend", "checkout", "email"):
        pod = _pod(workload)
        fits, _ = default_plugins.filter_resource_fit(full, pod, topology.nodes)
        assert {zone_of[n] for n in fits} == {"C", "FAR"}
        out = engine.run_scorers(state, pod, fits, engine.BUILTIN_PROFILES["network"])
        assert _best_zones(out, zone_of) == {"C"}
        _assert_strictly_ordered(_by_zone(out, out.extender, zone_of), ("C", "FAR"))


@pytest.mark.parametrize("workload", ["frontend", "cart", "redis-cart", "ad"])
def test_hybrid_weight_1_prefers_c_over_far_when_a_and_b_are_loaded(testbed, workload):
    """Zones A and B still fit the pod but are nearly fully requested, so the default plugins pull
    toward the empty zones C and FAR equally. kube-scheduler's combination (plugins + extender x 1 x
    10) must still rank C above FAR; with C and FAR both at extender 0 they tied and half the random
    tie-breaks started the rollout in FAR."""
    topology, nodes, zone_of = testbed
    loaded = _with_zones_requested(nodes, {"A", "B"}, 700)
    state = ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=loaded)
    pod = _pod(workload)
    fits, rejected = default_plugins.filter_resource_fit(loaded, pod, topology.nodes)
    assert not rejected
    out = engine.run_scorers(state, pod, fits, engine.BUILTIN_PROFILES["network"])
    plugins = default_plugins.default_plugin_scores(state, pod, fits)
    assert len({plugins.total[n] for n in fits if zone_of[n] in ("C", "FAR")}) == 1  # resources: a tie
    combined = default_plugins.combine_with_extender(
        plugins.total, dict(zip(out.nodes, out.extender.tolist(), strict=True)), 1)
    zones = _by_zone(out, [combined[n] for n in out.nodes], zone_of)
    _assert_strictly_ordered(zones, ("C", "FAR"))
    assert max(max(v) for v in zones.values()) > max(zones["FAR"])


def test_graded_scale_is_continuous_strictly_decreasing_and_scale_free():
    knee, spread = cold_start.DEFAULT_KNEE, cold_start.DEFAULT_SPREAD
    gaps = np.concatenate([[0.0], np.geomspace(1e-6, spread, 2000)])
    s = cold_start.graded_scale(gaps, knee=knee, spread=spread)
    assert s[0] == 1.0 and s[-1] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(s) < 0)
    below, above = cold_start.graded_scale(np.array([knee * (1 - 1e-9), knee * (1 + 1e-9)]), knee=knee, spread=spread)
    assert below == pytest.approx(cold_start.KNEE_SCORE) and above == pytest.approx(cold_start.KNEE_SCORE)
    # Past the knee each extender step stands for the same gap ratio: doubling the gap costs the same.
    steps = cold_start.graded_scale(np.array([0.01, 0.02, 0.04, 0.08]), knee=knee, spread=spread)
    np.testing.assert_allclose(np.diff(steps), np.diff(steps)[0])
    # Beyond the spread and for negative gaps (numerical noise) the scale saturates.
    np.testing.assert_array_equal(cold_start.graded_scale(np.array([-1e-12, 2 * spread]), knee=knee, spread=spread),
                                  [1.0, 0.0])
    with pytest.raises(ValueError, match="knee"):
        cold_start.graded_scale(gaps, knee=0.5, spread=0.1)


def test_cold_start_scale_parameters_are_validated_by_name():
    for params, field in (({"cold_start_knee": 0.2, "cold_start_spread": 0.1}, "cold_start_spread"),
                          ({"cold_start_knee": "x"}, "cold_start_knee"),
                          ({"cold_start_knee": 0.9}, "cold_start_knee")):
        with pytest.raises(engine.ProfileError) as err:
            engine.validate_profile(engine.Profile("p", (("network-score", 1.0, params),)))
        assert err.value.field_path == f"scorers[0].params.{field}"
    engine.validate_profile(engine.Profile("p", (("cold-start", 1.0, {"cold_start_knee": 0.01,
                                                                      "cold_start_spread": 0.5}),)))
