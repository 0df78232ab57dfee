"""NetworkOverhead reproduces scheduler-plugins' own test fixture (costs, normalized scores, filter)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.scheduler.scoring import engine
from apps.scheduler.scoring.common import WorkloadRef, node_zone_region
from apps.scheduler.scoring.network_overhead import normalize_costs, overhead
from apps.scheduler.scoring.state import ClusterState, NodeResources, PodInfo
from apps.topology.topomath import Topology

NODES = [f"n-{i}" for i in range(1, 9)]
ZONES = ["Z1", "Z1", "Z2", "Z2", "Z3", "Z3", "Z4", "Z4"]
REGIONS = ["us-west-1"] * 4 + ["us-east-1"] * 4
PROFILE = engine.BUILTIN_PROFILES["network-overhead"]


def _topology() -> Topology:
    n = len(NODES)
    nan = np.full((n, n), np.nan)
    no = np.zeros((n, n), dtype=bool)
    return Topology(
        tuple(NODES), tuple(ZONES), tuple(REGIONS), nan.copy(), nan.copy(), nan.copy(), no.copy(), no.copy(),
        zone_costs={("Z1", "Z2"): 5, ("Z2", "Z1"): 5, ("Z3", "Z4"): 10, ("Z4", "Z3"): 10},
        region_costs={("us-west-1", "us-east-1"): 20, ("us-east-1", "us-west-1"): 20},
    )


def _group() -> AppGroupSpec:
    s = Sensitivity(1, 1, 1)
    return AppGroupSpec("default", "a1", (
        WorkloadSpec("p1", LabelSelector({"app": "p1"}), 1.0, (DependencySpec("p2", s, max_network_cost=0),)),
        WorkloadSpec("p2", LabelSelector({"app": "p2"}), 1.0, (DependencySpec("p3", s, max_network_cost=0),)),
        WorkloadSpec("p3", LabelSelector({"app": "p3"}), 1.0),
    ))


def _state(p3_node: str) -> ClusterState:
    group = _group()
    # Zones/regions come from the cluster's node labels (as upstream reads them).
    nodes = {n: NodeResources(n, zone=z, region=r) for n, z, r in zip(NODES, ZONES, REGIONS, strict=True)}
    return ClusterState(topology=_topology(), appgroups=(group,), nodes=nodes, placements={
        ("default", "a1", "p1"): ("n-2",), ("default", "a1", "p2"): ("n-5",), ("default", "a1", "p3"): (p3_node,)})


def _pod(app: str) -> PodInfo:
    return PodInfo("default", f"{app}-x", labels={"app": app})


@pytest.mark.parametrize(("workload", "expected"), [
    ("p1", [0, 0, 0, 0, 100, 95, 50, 50]),
    ("p2", [100, 95, 75, 75, 0, 0, 0, 0]),
])
def test_normalized_scores_match_upstream(workload, expected):
    state = _state("n-1")
    out = engine.run_scorers(state, _pod(workload), NODES, PROFILE)
    np.testing.assert_array_equal(out.breakdown["network-overhead"], expected)


def test_raw_accumulated_costs():
    state = _state("n-1")
    group = state.appgroups[0]
    p1 = overhead(state, WorkloadRef(group, group.workload("p1")), NODES)
    np.testing.assert_array_equal(p1.costs, [20, 20, 20, 20, 0, 1, 10, 10])
    p2 = overhead(state, WorkloadRef(group, group.workload("p2")), NODES)
    np.testing.assert_array_equal(p2.costs, [0, 1, 5, 5, 20, 20, 20, 20])
    np.testing.assert_array_equal(normalize_costs(np.array([3.0, 3.0])), [100, 100])


def test_pod_without_dependencies_scores_all_equal():
    out = engine.run_scorers(_state("n-1"), _pod("p3"), NODES, PROFILE)
    assert len(set(out.breakdown["network-overhead"].tolist())) == 1


def test_filter_counts_satisfied_and_violated():
    state = _state("n-8")
    p1 = engine.run_filters(state, _pod("p1"), ["n-1", "n-6"], PROFILE)
    assert p1.unresolvable == {"n-1": "Node n-1 does not meet several network requirements from Workload "
                                      "dependencies: Satisfied: 0 Violated: 1"}
    assert p1.passed == ("n-6",)
    p2 = engine.run_filters(state, _pod("p2"), ["n-5", "n-7"], PROFILE)
    assert set(p2.unresolvable) == {"n-5"} and "Satisfied: 0 Violated: 1" in p2.unresolvable["n-5"]
    assert p2.passed == ("n-7",)
    p3 = engine.run_filters(state, _pod("p3"), ["n-1"], PROFILE)
    assert p3.passed == ("n-1",) and not p3.failed and not p3.unresolvable
    stranger = engine.run_filters(state, PodInfo("default", "web", labels={"app": "web"}), NODES, PROFILE)
    assert stranger.passed == tuple(NODES) and stranger.workload is None


def test_unknown_cost_counts_neither_satisfied_nor_violated():
    state = _state("n-8")
    topo = state.topology
    bare = Topology(topo.nodes, topo.zones, topo.regions, topo.latency_ms, topo.bandwidth_mbps, topo.loss_pct,
                    topo.inferred, topo.stale, zone_costs={}, region_costs={})
    state = ClusterState(topology=bare, appgroups=state.appgroups, nodes=state.nodes, placements=state.placements)
    group = state.appgroups[0]
    result = overhead(state, WorkloadRef(group, group.workload("p1")), ["n-1", "n-7"])
    assert result.satisfied.tolist() == [0, 0] and result.violated.tolist() == [0, 0]
    assert result.costs.tolist() == [100, 100]  # MaxCost when the pair's cost is unknown


def _upstream_loop(state, ref, node):
    """Straight port of upstream's checkMaxNetworkCostRequirements + getAccumulatedCost for one node."""
    zone, region = node_zone_region(state, node)
    cost = satisfied = violated = 0
    for dep in ref.workload.dependencies:
        for host in state.placements.get((ref.group.namespace, ref.group.name, dep.target), ()):
            if host == node:
                satisfied += 1
                continue
            pz, pr = node_zone_region(state, host)
            if not pz and not pr:
                cost += 100
                violated += 1
            elif region == pr and zone == pz:
                cost += 1
                satisfied += 1
            else:
                if region == pr:
                    value = state.topology.zone_costs.get((zone, pz))
                else:
                    value = state.topology.region_costs.get((region, pr))
                cost += 100 if value is None else value
                if value is not None:
                    satisfied += value <= dep.max_network_cost
                    violated += value > dep.max_network_cost
    return cost, satisfied, violated


def test_vectorized_overhead_equals_upstream_loop_on_random_clusters():
    rng = random.Random(11)
    names = [f"q{i}" for i in range(40)]
    zones = ["", "a1", "a2", "b1", "b2", "c1"]
    regions = {"": "", "a1": "ra", "a2": "ra", "b1": "rb", "b2": "rb", "c1": "rc"}
    for _ in range(10):
        nodes = {}
        for name in names:
            z = rng.choice(zones)
            nodes[name] = NodeResources(name, zone=z, region=regions[z] if rng.random() > 0.1 else "")
        zc = {(a, b): rng.randint(0, 12) for a in zones[1:] for b in zones[1:] if a != b and rng.random() > 0.3}
        rc = {(a, b): rng.randint(5, 30) for a in ("ra", "rb", "rc") for b in ("ra", "rb", "rc")
              if a != b and rng.random() > 0.3}
        n = len(names)
        nan = np.full((n, n), np.nan)
        no = np.zeros((n, n), dtype=bool)
        topo = Topology(tuple(names), ("",) * n, ("",) * n, nan, nan.copy(), nan.copy(), no, no.copy(),
                        zone_costs=zc, region_costs=rc)
        s = Sensitivity(1, 1, 1)
        group = AppGroupSpec("default", "g", (
            WorkloadSpec("x", LabelSelector({"app": "x"}), 1.0, (DependencySpec("y", s, max_network_cost=6),
                                                                 DependencySpec("z", s, max_network_cost=15))),
            WorkloadSpec("y", LabelSelector({"app": "y"})), WorkloadSpec("z", LabelSelector({"app": "z"})),
        ))
        placements = {("default", "g", w): tuple(rng.choice([*names, "gone"]) for _ in range(rng.randint(1, 6)))
                      for w in ("y", "z")}
        state = ClusterState(topology=topo, appgroups=(group,), nodes=nodes, placements=placements)
        ref = WorkloadRef(group, group.workload("x"))
        candidates = [*rng.sample(names, 25), "stranger"]
        result = overhead(state, ref, candidates)
        for i, node in enumerate(candidates):
            assert (result.costs[i], result.satisfied[i], result.violated[i]) == _upstream_loop(state, ref, node)
