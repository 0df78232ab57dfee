"""A profile's ``plan`` objective decides what the plan maximises: on a cluster where the close but lossy zone
pair has the best network score, the ``latency`` objective (loss costs retransmission timeouts) and the
``transfer-cost`` objective (the lossy pair crosses regions, when a region costs more than a zone) pick the
other pair."""

from __future__ import annotations

import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation.report import initial_state
from apps.scheduler.scoring import engine, plans
from apps.scheduler.scoring.plans import compute_plan


def _state():
    """Three one-node zones that hold one pod each: A-B close (1 ms) but lossy (2 %) across regions,
    A-C 10 ms without loss in one region, B-C worst."""
    scenario = load_scenario({
        "name": "objectives",
        "regions": [{"name": "r1", "zones": [{"name": "A", "nodes": [{"name": "a1", "cpu": "1"}]},
                                             {"name": "C", "nodes": [{"name": "c1", "cpu": "1"}]}]},
                    {"name": "r2", "zones": [{"name": "B", "nodes": [{"name": "b1", "cpu": "1"}]}]}],
        "links": [
            *({"between": [z, z], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000} for z in "ABC"),
            {"between": ["A", "B"], "latency_ms": 1.0, "loss_pct": 2.0, "bandwidth_mbps": 10000},
            {"between": ["A", "C"], "latency_ms": 10.0, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["B", "C"], "latency_ms": 50.0, "loss_pct": 5.0, "bandwidth_mbps": 100},
        ],
    })
    group = AppGroupSpec("default", "pair", (
        WorkloadSpec("front", LabelSelector({"app": "front"}), 1.0, (DependencySpec("back", Sensitivity(0.9, 0.0, 0.1)),),
                     cpu_request_millicores=1000),
        WorkloadSpec("back", LabelSelector({"app": "back"}), 1.0, (), cpu_request_millicores=1000)))
    return initial_state(scenario, [group]), group


def _zones(objective):
    state, group = _state()
    plan = compute_plan(state=state, group=group, objective=objective)
    return {z for zones in plan.zones.values() for z in zones}


def test_the_network_score_prefers_the_close_lossy_pair():
    assert _zones("network-score") == {"A", "B"}


def test_the_latency_objective_prefers_the_loss_free_pair():
    assert _zones("latency") == {"A", "C"}


def test_the_transfer_objective_prefers_one_region_when_regions_cost_more(monkeypatch):
    monkeypatch.setitem(plans.TRANSFER_USD_PER_GB, "region", 0.05)
    assert _zones("transfer-cost") == {"A", "C"}


def test_a_profile_names_the_objective_and_an_unknown_one_is_refused_naming_the_field():
    doc = {"apiVersion": engine.V1ALPHA1, "name": "lat", "scorers": [{"name": "network-score", "weight": 1}],
           "filters": ["plan"], "params": {"plan": {"objective": "latency"}}}
    assert engine.parse_profile(doc).params["plan"]["objective"] == "latency"
    with pytest.raises(engine.ProfileError, match="objective"):
        engine.parse_profile({**doc, "params": {"plan": {"objective": "cheapest"}}})
