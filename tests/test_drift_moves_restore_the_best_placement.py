"""Drift (apps/scheduler/evaluation/drift.py) on a tiny synthetic cluster: a degraded zone pair shows as
drift > 0 with single-pod moves, each an improvement on its own, that restore >= 99 % of the best
score; an optimal placement has no move; moves never overfill a node."""

from __future__ import annotations

import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation.drift import PlacedPod, apply_moves, assess_drift, drift_ratio
from apps.scheduler.evaluation.metrics import network_metrics
from apps.scheduler.evaluation.report import initial_state
from apps.scheduler.evaluation.simulate import appgroup_pods, bind
from apps.scheduler.scoring.state import evolve
from apps.topology.scenario_topology import topology_from_scenario

LAT = Sensitivity(0.6, 0.1, 0.3)


def _scenario(ab_rtt: float, ab_loss: float, *, b_cpu: str = "4"):
    return load_scenario({
        "name": "drift",
        "regions": [{"name": "r1", "zones": [
            {"name": "A", "nodes": [{"name": "a1", "cpu": "4"}, {"name": "a2", "cpu": "4"}]},
            {"name": "B", "nodes": [{"name": "b1", "cpu": b_cpu}, {"name": "b2", "cpu": b_cpu}]},
            {"name": "C", "nodes": [{"name": "c1", "cpu": "4"}, {"name": "c2", "cpu": "4"}]},
        ]}],
        "links": [
            {"between": ["A", "A"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["B", "B"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["C", "C"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["A", "B"], "latency_ms": ab_rtt, "loss_pct": ab_loss, "bandwidth_mbps": 5000},
            {"between": ["A", "C"], "latency_ms": 5.0, "loss_pct": 0.5, "bandwidth_mbps": 1000},
            {"between": ["B", "C"], "latency_ms": 5.0, "loss_pct": 0.5, "bandwidth_mbps": 1000},
        ],
    })


def _group() -> AppGroupSpec:
    def w(name, replicas, deps=()):
        return WorkloadSpec(name, LabelSelector({"app": name}), 1.0, tuple(DependencySpec(d, LAT) for d in deps),
                            replicas=replicas, cpu_request_millicores=1000, memory_request_bytes=2**28)
    return AppGroupSpec("shop", "app", (w("front", 2, ("cart", "db")), w("cart", 2, ("db",)), w("db", 1)))


def _placed(scenario, group, where):
    """State with ``where`` (workload -> nodes) bound, as the extender's state counts them."""
    state = initial_state(scenario, [group])
    sims = {s.pod.name: s for s in appgroup_pods([group])}
    for workload, nodes in where.items():
        for i, node in enumerate(nodes):
            state = bind(state, sims[f"{workload}-{i}"], node)
    return state


# Planned when A-B was a good link: front in A, cart and db in B.
SPLIT = {"front": ("a1", "a2"), "cart": ("b1", "b2"), "db": ("b1",)}


def test_a_degraded_zone_pair_shows_drift_and_moves_that_restore_the_best_score():
    group = _group()
    healthy = assess_drift(state=_placed(_scenario(0.3, 0.0), group, SPLIT), group=group)
    state = _placed(_scenario(0.3, 0.0), group, SPLIT)
    degraded = evolve(state, topology=topology_from_scenario(_scenario(40.0, 3.0)))
    report = assess_drift(state=degraded, group=group)
    assert report.drift > 0.1 > healthy.drift
    assert report.drift == pytest.approx(drift_ratio(report.current_score, report.best_score))
    assert report.current_latency_ms > report.best_latency_ms
    assert report.moves
    score = report.current_score
    moved = degraded
    for move in report.moves:  # each move pays on its own, in the order given
        moved = apply_moves(moved, group, [move])
        now = network_metrics(moved, [group]).average
        assert now == pytest.approx(score + move.expected_gain, abs=1e-4)
        assert move.expected_gain > 0
        score = now
    assert score >= 0.99 * report.best_score
    assert report.recovered >= 0.99


def test_a_placement_at_the_best_has_no_move_and_no_drift():
    group = _group()
    state = _placed(_scenario(0.3, 0.0), group, SPLIT)
    degraded = evolve(state, topology=topology_from_scenario(_scenario(40.0, 3.0)))
    first = assess_drift(state=degraded, group=group)
    settled = apply_moves(degraded, group, first.moves)
    again = assess_drift(state=settled, group=group)
    assert again.moves == ()
    assert again.drift == pytest.approx(0.0, abs=1e-6)
    assert again.current_score == pytest.approx(first.best_score, abs=1e-4)


def test_moves_never_overfill_a_node():
    group = _group()
    # With 4-CPU nodes both front pods join cart and db on b2; with 2-CPU nodes B has room for one more pod.
    state = _placed(_scenario(0.3, 0.0, b_cpu="2"), group, SPLIT)
    degraded = evolve(state, topology=topology_from_scenario(_scenario(40.0, 3.0, b_cpu="2")))
    pods = [PlacedPod(f"shop/{w}-{i}", w, n) for w, nodes in SPLIT.items() for i, n in enumerate(nodes)]
    report = assess_drift(state=degraded, group=group, pods=pods)
    assert report.moves and report.drift > 0
    assert {m.pod for m in report.moves} <= {p.pod for p in pods}
    assert sum(m.to_node.startswith("b") for m in report.moves) <= 1
    final = apply_moves(degraded, group, report.moves)
    for node in final.nodes.values():
        assert node.requested_cpu_millicores <= node.allocatable_cpu_millicores, node.name
    assert report.recovered >= 0.99


def test_moves_keep_the_pods_that_are_already_well_placed():
    group = _group()
    state = _placed(_scenario(0.3, 0.0), group, SPLIT)
    degraded = evolve(state, topology=topology_from_scenario(_scenario(40.0, 3.0)))
    report = assess_drift(state=degraded, group=group)
    # cart and db already share zone B: moving the two front pods there is enough
    assert sorted((m.workload, m.to_node[0]) for m in report.moves) == [("front", "b"), ("front", "b")]


def test_pending_pods_are_not_counted_in_the_best_placement():
    group = _group()  # front has 2 replicas; only one runs
    running = {"front": ("a1",), "cart": ("b1", "b2"), "db": ("b1",)}
    state = _placed(_scenario(0.3, 0.0), group, running)
    degraded = evolve(state, topology=topology_from_scenario(_scenario(40.0, 3.0)))
    report = assess_drift(state=degraded, group=group)
    assert [m.pod for m in report.moves] == ["shop/front-0"]
    assert report.score_after_moves == pytest.approx(report.best_score)
