"""Per-dependency weights steer placement: of two AppGroups identical except one edge's weight, the
planner and the MILP optimum co-locate the heavy pair (whichever edge is heavy), the network scorers rank
the heavy partner's node first, and the evaluation's score weighs each edge; only the ratio of weights
matters, so scaling them all changes nothing."""

from __future__ import annotations

import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation.adapter import engine_profile, extender_answer
from apps.scheduler.evaluation.metrics import network_metrics
from apps.scheduler.evaluation.optimum import optimum_placement
from apps.scheduler.evaluation.report import initial_state
from apps.scheduler.evaluation.simulate import SimPod, bind
from apps.scheduler.scoring.plans import compute_plan
from apps.scheduler.scoring.state import PodInfo

LAT = Sensitivity(0.9, 0.0, 0.1)


def _scenario():
    """Three zones of two 1-CPU nodes each, every zone pair alike: the hub (1-CPU pods) shares its zone with
    one of its two partners, never both, and nothing but the edges' weights tells the partners apart."""
    zones = [{"name": z, "nodes": [{"name": f"{z.lower()}{i}", "cpu": "1", "memory": "8Gi"} for i in (1, 2)]}
             for z in "ABC"]
    links = [{"between": [a, b], "latency_ms": 0.2 if a == b else 2.0, "loss_pct": 0.0 if a == b else 0.5,
              "bandwidth_mbps": 10000 if a == b else 1000} for i, a in enumerate("ABC") for b in "ABC"[i:]]
    return load_scenario({"name": "hub", "regions": [{"name": "r1", "zones": zones}], "links": links})


def _hub(x_weight: float = 1.0, y_weight: float = 1.0) -> AppGroupSpec:
    def workload(name, deps=()):
        return WorkloadSpec(name, LabelSelector({"app": name}), 1.0, deps, replicas=1,
                            cpu_request_millicores=1000, memory_request_bytes=2**28)
    return AppGroupSpec("default", "hub", (
        workload("hub", (DependencySpec("x", LAT, weight=x_weight), DependencySpec("y", LAT, weight=y_weight))),
        workload("x"), workload("y")))


def _pod(group: AppGroupSpec, workload: str) -> SimPod:
    spec = group.workload(workload)
    return SimPod(group, spec, PodInfo(group.namespace, f"{workload}-0", labels=dict(spec.selector.match_labels),
                                       cpu_request_millicores=1000, memory_request_bytes=2**28))


def _only_zone(plan, workload):
    (zone,) = plan.zones_for(workload)
    return zone


@pytest.mark.parametrize(("heavy", "light"), [("x", "y"), ("y", "x")])
def test_the_planner_and_the_optimum_co_locate_the_heavy_pair(heavy, light):
    group = _hub(**{f"{heavy}_weight": 10.0})
    state = initial_state(_scenario(), [group])
    plan = compute_plan(state=state, group=group, budget_s=2.0)
    assert not plan.unplaced
    assert _only_zone(plan, "hub") == _only_zone(plan, heavy) != _only_zone(plan, light)
    placed = optimum_placement(state, [group]).placements
    zone = {w: {state.nodes[n].zone for n in placed[("default", "hub", w)]} for w in ("hub", "x", "y")}
    assert zone["hub"] == zone[heavy] != zone[light]


@pytest.mark.parametrize("profile", ["network-noplan", "network-overhead", "balanced"])
def test_the_scorers_rank_the_heavy_partners_node_first(profile):
    """x on a1, y on b1: without weights a2 and b2 tie for the hub; a heavy x (or y) breaks the tie its way."""
    def scores(group):
        state = initial_state(_scenario(), [group])
        state = bind(bind(state, _pod(group, "x"), "a1"), _pod(group, "y"), "b1")
        answer = extender_answer(state, _pod(group, "hub").pod, ["a2", "b2", "c1"], engine_profile(profile))
        return answer.scores

    plain = scores(_hub())
    assert plain["a2"] == plain["b2"]
    heavy_x, heavy_y = scores(_hub(x_weight=10.0)), scores(_hub(y_weight=10.0))
    assert heavy_x["a2"] > heavy_x["b2"] and heavy_y["b2"] > heavy_y["a2"]


def test_the_evaluation_score_is_the_weighted_mean_of_the_edges():
    plain, heavy = _hub(), _hub(x_weight=3.0)
    state = initial_state(_scenario(), [plain])
    state = bind(bind(bind(state, _pod(plain, "x"), "a1"), _pod(plain, "y"), "b1"), _pod(plain, "hub"), "a2")
    unweighted, weighted = network_metrics(state, [plain]), network_metrics(state, [heavy])
    near, far = unweighted.per_workload["x"], unweighted.per_workload["y"]  # their one edge is to the hub
    assert near > far
    assert unweighted.per_workload["hub"] == pytest.approx((near + far) / 2)
    assert weighted.per_workload["hub"] == pytest.approx((3 * near + far) / 4)
    assert weighted.average > unweighted.average


def test_scaling_every_weight_changes_neither_plans_nor_scores():
    base, scaled = _hub(x_weight=4.0, y_weight=1.0), _hub(x_weight=10.0, y_weight=2.5)
    state = initial_state(_scenario(), [base])
    plans = [compute_plan(state=state, group=g, budget_s=2.0) for g in (base, scaled)]
    assert plans[0].zones == plans[1].zones and plans[0].value == pytest.approx(plans[1].value)
    placed = bind(bind(bind(state, _pod(base, "x"), "a1"), _pod(base, "y"), "b1"), _pod(base, "hub"), "c1")
    assert network_metrics(placed, [base]).average == pytest.approx(network_metrics(placed, [scaled]).average)


def test_evaluation_with_learned_weights_on_a_shipped_scenario_reports_the_score():
    from apps.scheduler.evaluation.learned import compare
    from apps.scheduler.evaluation.report import load_inputs

    scenario, groups = load_inputs("scenarios/metro-two-tenants.yaml", "scenarios/two-tenants-appgroups.yaml")
    weighted = compare(scenario, groups, profile="network", seeds=range(5))
    unweighted = compare(scenario, groups, profile="network", seeds=range(5), edge_weights=False)
    learned = {d.weight for g in weighted.learned.groups for w in g.workloads for d in w.dependencies}
    assert len(learned) > 1 and 1.0 in learned  # traffic tells edges apart; the median edge weighs 1
    assert {d.weight for g in unweighted.learned.groups for w in g.workloads for d in w.dependencies} == {1.0}
    for result in (weighted, unweighted):
        assert len(result.runs) == 5 and 0 < result.learned_mean <= 100 + 1e-9
        assert result.ratio >= 0.98, (result.true_mean, result.learned_mean)
