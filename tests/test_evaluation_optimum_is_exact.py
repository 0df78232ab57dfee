"""The MILP optimum agrees with brute force and with the extender's own Score of its placement."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation.metrics import network_metrics
from apps.scheduler.evaluation.optimum import optimum_placement
from apps.scheduler.evaluation.report import initial_state


def _scenario(cpu_a: str = "4"):
    return load_scenario({
        "name": "tiny",
        "regions": [{"name": "r", "zones": [
            {"name": "A", "nodes": [{"name": "a1", "cpu": cpu_a}, {"name": "a2", "cpu": cpu_a}]},
            {"name": "B", "nodes": [{"name": "b1"}]},
            {"name": "C", "nodes": [{"name": "c1"}]},
        ]}],
        "links": [
            {"between": ["A", "A"], "latency_ms": 0.5, "loss_pct": 0.0, "bandwidth_mbps": 1000},
            {"between": ["A", "B"], "latency_ms": 2.0, "loss_pct": 1.0, "bandwidth_mbps": 300},
            {"between": ["A", "C"], "latency_ms": 8.0, "loss_pct": 4.0, "bandwidth_mbps": 50},
            {"between": ["B", "B"], "latency_ms": 0.5, "loss_pct": 0.0, "bandwidth_mbps": 800},
            {"between": ["B", "C"], "latency_ms": 5.0, "loss_pct": 2.0, "bandwidth_mbps": 100},
            {"between": ["C", "C"], "latency_ms": 0.5, "loss_pct": 0.0, "bandwidth_mbps": 500},
        ],
    })


def _group() -> AppGroupSpec:
    def w(name: str, weight: float, deps: tuple[tuple[str, Sensitivity], ...] = ()) -> WorkloadSpec:
        return WorkloadSpec(name, LabelSelector({"app": name}), weight,
                            tuple(DependencySpec(t, s) for t, s in deps), cpu_request_millicores=1000,
                            memory_request_bytes=2**28)

    return AppGroupSpec("default", "chain", (
        w("front", 1.0, (("mid", Sensitivity(0.6, 0.3, 0.1)), ("side", Sensitivity(0.2, 0.2, 0.6)))),
        w("mid", 0.8, (("db", Sensitivity(0.3, 0.6, 0.1)),)),
        w("side", 0.5),
        w("db", 0.7),
    ))


def _brute_force(state, group):
    names = list(state.nodes)
    best = -1.0
    for combo in itertools.product(names, repeat=len(group.workloads)):
        used: dict[str, int] = {}
        for node in combo:
            used[node] = used.get(node, 0) + 1000
        if any(used[n] > state.nodes[n].allocatable_cpu_millicores for n in used):
            continue
        placements = {("default", "chain", w.name): (node,) for w, node in zip(group.workloads, combo, strict=True)}
        best = max(best, network_metrics(replace(state, placements=placements), [group]).average)
    return best


@pytest.mark.parametrize("cpu_a", ["4", "1"])  # "1": each A node fits one pod, the optimum is < 100
def test_milp_equals_brute_force_and_its_placement_rescored(cpu_a):
    group = _group()
    state = initial_state(_scenario(cpu_a), [group])
    optimum = optimum_placement(state, [group])
    assert optimum.exact
    assert optimum.bound == pytest.approx(_brute_force(state, group), abs=1e-6)
    assert optimum.achieved == pytest.approx(optimum.bound, abs=1e-6)
    if cpu_a == "1":
        assert optimum.bound < 100
        per_node: dict[str, int] = {}
        for nodes in optimum.placements.values():
            for node in nodes:
                per_node[node] = per_node.get(node, 0) + 1
        assert per_node.get("a1", 0) <= 1 and per_node.get("a2", 0) <= 1


def test_with_replicas_the_milp_is_an_upper_bound_on_the_achieved_score():
    group = _group()
    group = replace(group, workloads=tuple(replace(w, replicas=2) if w.name == "mid" else w for w in group.workloads))
    state = initial_state(_scenario("4"), [group])
    optimum = optimum_placement(state, [group])
    assert not optimum.exact
    assert optimum.achieved <= optimum.bound + 1e-6
    assert sum(len(v) for v in optimum.placements.values()) == 5
