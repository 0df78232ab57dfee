"""High availability (``minZones``, the pods' own zone topologySpreadConstraints): the placement plan builds
cells (every zone a workload uses also holds the chain it calls), the plan filter never lets a pod make
minZones unreachable nor break a DoNotSchedule zone spread, whatever the plan or the network score prefer,
and the evaluation reports, per profile, whether every AppGroup survives the loss of any one zone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation.report import evaluate, initial_state
from apps.scheduler.evaluation.simulate import appgroup_pods, bind
from apps.scheduler.scoring import engine
from apps.scheduler.scoring.plans import compute_plan, survives_zone_loss
from apps.scheduler.scoring.state import PodInfo
from apps.scheduler.wire import WireError, parse_pod

LAT = Sensitivity(0.9, 0.0, 0.1)
ZONES = ("A", "B", "C")


def _scenario():
    """Three zones: A and B close (one region), C far; every zone holds the whole AppGroup."""
    return load_scenario({
        "name": "ha",
        "regions": [{"name": "r1", "zones": [
            {"name": "A", "nodes": [{"name": "a1", "cpu": "8"}, {"name": "a2", "cpu": "8"}]},
            {"name": "B", "nodes": [{"name": "b1", "cpu": "8"}, {"name": "b2", "cpu": "8"}]},
        ]}, {"name": "r2", "zones": [{"name": "C", "nodes": [{"name": "c1", "cpu": "8"}]}]}],
        "links": [
            {"between": ["A", "A"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["B", "B"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["C", "C"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["A", "B"], "latency_ms": 1.0, "loss_pct": 0.0, "bandwidth_mbps": 5000},
            {"between": ["A", "C"], "latency_ms": 60.0, "loss_pct": 0.5, "bandwidth_mbps": 500},
            {"between": ["B", "C"], "latency_ms": 60.0, "loss_pct": 0.5, "bandwidth_mbps": 500},
        ],
    })


def _chain(min_zones: int = 1, *, replicas: int = 2, back_min_zones: int | None = None) -> AppGroupSpec:
    names = ("front", "mid", "back")
    return AppGroupSpec("default", "app", tuple(
        WorkloadSpec(w, LabelSelector({"app": w}), 1.0,
                     (DependencySpec(names[i + 1], LAT),) if i + 1 < len(names) else (), replicas=replicas,
                     cpu_request_millicores=500, memory_request_bytes=2**28,
                     min_zones=back_min_zones if w == "back" else None)
        for i, w in enumerate(names)), min_zones=min_zones)


def test_without_min_zones_the_plan_packs_one_zone_and_a_zone_loss_takes_the_appgroup_down():
    group = _chain()
    plan = compute_plan(state=initial_state(_scenario(), [group]), group=group)
    assert {z for zs in plan.zones.values() for z in zs} in ({"A"}, {"B"})
    assert not survives_zone_loss(group, plan.zones, ZONES)[0]


def test_min_zones_two_builds_a_complete_cell_in_each_of_two_close_zones():
    group = _chain(2)
    plan = compute_plan(state=initial_state(_scenario(), [group]), group=group)
    assert plan.zones == {w: {"A": 1, "B": 1} for w in ("front", "mid", "back")}, plan.zones
    assert survives_zone_loss(group, plan.zones, ZONES) == (True, ())
    assert survives_zone_loss(group, plan.zones, ZONES, chains=True) == (True, ())
    # The last link in one zone only: zone B's cell has no in-zone chain, and A's loss takes it down.
    broken = {**plan.zones, "back": {"A": 2}}
    assert survives_zone_loss(group, broken, ZONES, chains=True) == (False, ("A",))
    mid_elsewhere = {**plan.zones, "mid": {"A": 1, "C": 1}}
    assert survives_zone_loss(group, mid_elsewhere, ZONES) == (True, ())
    assert survives_zone_loss(group, mid_elsewhere, ZONES, chains=True) == (False, ("A",))


def test_an_exempt_workload_may_stay_in_one_zone():
    group = _chain(2, back_min_zones=1)
    plan = compute_plan(state=initial_state(_scenario(), [group]), group=group)
    assert len(plan.zones["front"]) == 2 and len(plan.zones["mid"]) == 2
    assert sum(plan.zones["back"].values()) == 2


def _pod(workload: str, n: int, **kw) -> PodInfo:
    return PodInfo("default", f"{workload}-{n}", labels={"app": workload}, cpu_request_millicores=500,
                   memory_request_bytes=2**28, **kw)


def _place(state, group, workload, nodes):
    sims = {s.pod.name: s for s in appgroup_pods([group])}
    for i, node in enumerate(nodes):
        state = bind(state, sims[f"{workload}-{i}"] if f"{workload}-{i}" in sims else next(
            s for s in sims.values() if s.workload.name == workload), node)
    return state


def test_the_filter_keeps_min_zones_reachable_whatever_the_plan_prefers():
    group = _chain(2, replicas=3)
    state = initial_state(_scenario(), [group])
    nodes = list(state.nodes)
    profile = engine.BUILTIN_PROFILES["network"]
    # Two of three front pods already in zone A: the last one must open a second zone.
    state = _place(state, group, "front", ["a1", "a2"])
    out = engine.run_filters(state, _pod("front", 2), nodes, profile)
    assert set(out.passed) <= {"b1", "b2", "c1"} and out.passed
    assert {out.unresolvable.get(n, out.failed.get(n)) is not None for n in ("a1", "a2")} == {True}
    assert "minZones 2" in (out.unresolvable.get("a1") or out.failed["a1"])
    # The same pod without minZones may join its siblings.
    plain = _chain(1, replicas=3)
    state = _place(initial_state(_scenario(), [plain]), plain, "front", ["a1", "a2"])
    passed = engine.run_filters(state, _pod("front", 2), nodes, profile).passed
    assert passed and set(passed) <= {"a1", "a2"}


def test_the_filter_keeps_the_pods_own_zone_spread_constraint():
    group = _chain(1, replicas=3)
    state = _place(initial_state(_scenario(), [group]), group, "front", ["a1"])
    nodes = list(state.nodes)
    out = engine.run_filters(state, _pod("front", 1, zone_max_skew=1), nodes, engine.BUILTIN_PROFILES["network"])
    assert "a1" not in out.passed and "a2" not in out.passed and out.passed
    assert "maxSkew 1" in (out.unresolvable.get("a1") or out.failed["a1"])


def test_the_wire_reads_hard_zone_spread_constraints_and_names_a_bad_one():
    def pod(constraints):
        return {"metadata": {"name": "p"}, "spec": {"containers": [], "topologySpreadConstraints": constraints}}

    zone = {"topologyKey": "topology.kubernetes.io/zone", "maxSkew": 2, "whenUnsatisfiable": "DoNotSchedule"}
    host = {**zone, "topologyKey": "kubernetes.io/hostname", "maxSkew": 1}
    soft = {**zone, "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}
    assert parse_pod(pod([host, soft, zone])).zone_max_skew == 2
    assert parse_pod({"metadata": {"name": "p"}, "spec": {"containers": []}}).zone_max_skew == 0
    with pytest.raises(WireError, match=r"spec\.topologySpreadConstraints\[0\]\.maxSkew"):
        parse_pod(pod([{**zone, "maxSkew": 0}]))


def test_the_evaluation_reports_zone_loss_survival_per_profile():
    scenario, group = _scenario(), _chain()
    plain = evaluate(scenario, [group], profiles=["network"], seeds=2, with_optimum=False)
    ha = evaluate(scenario, [group], profiles=["network"], seeds=2, with_optimum=False, min_zones=2,
                  routing="prefer-close")
    assert plain.profile("network").zone_loss_survived == 0
    assert ha.profile("network").zone_loss_survived == 2 and ha.profile("network").zone_loss_cells == 2
    assert ha.profile("network").unscheduled_pods == 0
    # Cells in two close zones cost a little score; with PreferClose the calls stay in zone.
    assert ha.profile("network").average_score.mean < plain.profile("network").average_score.mean
    uniform = evaluate(scenario, [replace(group, min_zones=2)], profiles=["network"], seeds=2, with_optimum=False)
    assert ha.profile("network").latency_ms.mean < uniform.profile("network").latency_ms.mean
