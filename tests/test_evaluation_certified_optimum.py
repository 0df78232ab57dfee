"""The certified optimum: its best placement and proven bound bracket brute force, it matches the
node-level MILP where that finishes, and limits end in a one-line message with no bound outside 0..100."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation import certified
from apps.scheduler.evaluation.certified import certified_optimum, uniform_bins
from apps.scheduler.evaluation.metrics import network_metrics
from apps.scheduler.evaluation.optimum import optimum_placement
from apps.scheduler.evaluation.report import initial_state, load_inputs

ROOT = Path(__file__).resolve().parent.parent


def _scenario(cpu_a: str = "4", node_link: bool = False):
    doc = {
        "name": "tiny",
        "regions": [{"name": "r", "zones": [
            {"name": "A", "nodes": [{"name": "a1", "cpu": cpu_a}, {"name": "a2", "cpu": cpu_a},
                                    {"name": "a3", "cpu": cpu_a}]},
            {"name": "B", "nodes": [{"name": "b1"}]},
            {"name": "C", "nodes": [{"name": "c1", "existing_pods": {"count": 2, "cpu": "2", "memory": "1Gi"}}]},
        ]}],
        "links": [
            {"between": ["A", "A"], "latency_ms": 0.5, "loss_pct": 0.0, "bandwidth_mbps": 1000},
            {"between": ["A", "B"], "latency_ms": 2.0, "loss_pct": 1.0, "bandwidth_mbps": 300},
            {"between": ["A", "C"], "latency_ms": 8.0, "loss_pct": 4.0, "bandwidth_mbps": 50},
            {"between": ["B", "B"], "latency_ms": 0.5, "loss_pct": 0.0, "bandwidth_mbps": 800},
            {"between": ["B", "C"], "latency_ms": 5.0, "loss_pct": 2.0, "bandwidth_mbps": 100},
            {"between": ["C", "C"], "latency_ms": 0.5, "loss_pct": 0.0, "bandwidth_mbps": 500},
        ],
    }
    if node_link:  # a3 has a slow link to a1: zone A is no longer uniform
        doc["node_links"] = [{"between": ["a1", "a3"], "latency_ms": 6.0, "loss_pct": 2.0, "bandwidth_mbps": 80}]
    return load_scenario(doc)


def _group(replicas: dict[str, int] | None = None) -> AppGroupSpec:
    replicas = replicas or {}

    def w(name: str, weight: float, deps: tuple[tuple[str, Sensitivity], ...] = ()) -> WorkloadSpec:
        return WorkloadSpec(name, LabelSelector({"app": name}), weight,
                            tuple(DependencySpec(t, s) for t, s in deps), replicas=replicas.get(name, 1),
                            cpu_request_millicores=1000, memory_request_bytes=2**28)

    return AppGroupSpec("default", "chain", (
        w("front", 1.0, (("mid", Sensitivity(0.6, 0.3, 0.1)), ("side", Sensitivity(0.2, 0.2, 0.6)))),
        w("mid", 0.8, (("db", Sensitivity(0.3, 0.6, 0.1)),)),
        w("side", 0.5),
        w("db", 0.7),
    ))


def _brute_force(state, group) -> float:
    """Best average network score over every assignment of pods to nodes that fits (cpu only)."""
    names = list(state.nodes)
    pods = [(w.name, i) for w in group.workloads for i in range(w.replicas)]
    best = -1.0
    for combo in itertools.product(names, repeat=len(pods)):
        used: dict[str, int] = {}
        for node in combo:
            used[node] = used.get(node, 0) + 1000
        if any(used[n] > state.nodes[n].allocatable_cpu_millicores - state.nodes[n].requested_cpu_millicores
               for n in used):
            continue
        placements: dict[tuple[str, str, str], tuple[str, ...]] = {}
        for (workload, _i), node in zip(pods, combo, strict=True):
            key = ("default", "chain", workload)
            placements[key] = (*placements.get(key, ()), node)
        best = max(best, network_metrics(replace(state, placements=placements), [group]).average)
    return best


@pytest.mark.parametrize(("cpu_a", "replicas", "node_link"), [
    ("4", None, False),
    ("1", None, False),  # each A node holds one pod: the optimum is below 100
    ("1", {"front": 2}, False),  # replicas: the old MILP could only bound this
    ("1", {"front": 2, "mid": 2}, False),  # both sides replicated: the level linearisation
    ("2", None, True),  # a non-uniform zone: a3 gets a bin of its own
])
def test_certified_optimum_equals_brute_force_on_small_instances(cpu_a, replicas, node_link):
    group = _group(replicas)
    state = initial_state(_scenario(cpu_a, node_link), [group])
    truth = _brute_force(state, group)
    optimum = certified_optimum(state, [group], memory_limit=None)
    assert optimum.status == "optimal" and optimum.exact, optimum.message
    assert optimum.achieved == pytest.approx(truth, abs=1e-6)
    assert optimum.bound == pytest.approx(truth, abs=1e-5)
    rescored = network_metrics(replace(state, placements=optimum.placements), [group]).average
    assert rescored == pytest.approx(optimum.achieved, abs=1e-9)


def test_bins_split_only_nodes_with_their_own_links():
    # a1-a3 is slow, a2 is as fast to both: {a1, a3} (one slow pair inside) and {a2} are uniform bins.
    state = initial_state(_scenario(node_link=True), [_group()])
    assert uniform_bins(state.topology, state.nodes) == [["a1", "a3"], ["a2"], ["b1"], ["c1"]]
    assert uniform_bins(initial_state(_scenario(), [_group()]).topology, state.nodes) == [
        ["a1", "a2", "a3"], ["b1"], ["c1"]]


def test_bin_path_brackets_brute_force(monkeypatch):
    """Forced onto the large-instance path (bin MILP, split bound, node refinement), the best placement
    found and the proven bound still bracket the true optimum, within 0..100."""
    monkeypatch.setattr(certified, "FULL_MODEL_MAX_COLUMNS", 0)
    group = _group({"front": 2})
    state = initial_state(_scenario("1"), [group])
    truth = _brute_force(state, group)
    optimum = certified_optimum(state, [group], memory_limit=None)
    assert optimum.achieved <= truth + 1e-6 <= optimum.bound + 2e-6
    assert 0.0 <= optimum.bound <= 100.0


def test_matches_the_node_level_milp_on_the_paper_testbed():
    scenario, groups = load_inputs(ROOT / "scenarios" / "paper-testbed.yaml",
                                   ROOT / "scenarios" / "online-boutique-appgroup.yaml")
    state = initial_state(scenario, groups)
    old = optimum_placement(state, groups)
    new = certified_optimum(state, groups, memory_limit=2**30)
    assert old.exact and new.exact
    assert new.achieved == pytest.approx(old.bound, abs=1e-6)


def test_over_the_memory_limit_is_a_one_line_message_and_no_bound():
    scenario, groups = load_inputs(ROOT / "scenarios" / "four-regions-94.yaml",
                                   ROOT / "scenarios" / "three-tenants-appgroups.yaml")
    optimum = certified_optimum(initial_state(scenario, groups), groups, memory_limit=1)
    assert optimum.status == "memory limit"
    assert "\n" not in optimum.message and "raise --memory-limit" in optimum.message
    assert optimum.bound != optimum.bound and optimum.placements == {}


def test_a_cluster_too_small_says_so():
    group = _group()
    state = initial_state(_scenario("1"), [replace(group, workloads=tuple(
        replace(w, cpu_request_millicores=4000) for w in group.workloads))])
    optimum = certified_optimum(state, list(state.appgroups), memory_limit=None)
    assert optimum.status == "infeasible" and "cannot hold every pod" in optimum.message


def test_the_planners_candidate_survives_a_zone_split_into_bins():
    """A zone with a node link of its own splits into bins; the planner's node-level plan still gives the
    search its candidate (before, such a zone dropped it and a large case had no placement in time)."""
    group = _group({"front": 2})
    state = initial_state(_scenario("2", node_link=True), [group])
    model = certified.build_model(state, [group])
    assert len(model.bins) == 4  # {a1, a3}, {a2}, {b1}, {c1}
    counts = certified.planner_candidate(state, [group], model)
    assert counts is not None and counts.sum(axis=1).tolist() == model.replicas.tolist()
    plan = certified.best_joint_plans(state, [group])[0]
    bin_of = {node: b for b, members in enumerate(model.bins) for node in members}
    for w, (_ns, _name, workload) in enumerate(model.names):  # each pod counted in its own node's bin
        expected = [0.0] * len(model.bins)
        for node, n in plan.nodes_for(workload).items():
            expected[bin_of[node]] += n
        assert counts[w].tolist() == expected, workload
