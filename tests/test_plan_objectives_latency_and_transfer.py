"""A profile's ``plan`` objective decides what the plan maximises: on a cluster where the close but lossy zone
pair has the best network score, the ``latency`` objective (loss costs retransmission timeouts) and the
``transfer-cost`` objective (the lossy pair crosses regions, when the profile's prices make a region cost
more than a zone) pick the other pair; the prices are the profile's, checked with the field's path."""

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


def _zones(objective, prices=plans.DEFAULT_TRANSFER_PRICES):
    state, group = _state()
    plan = compute_plan(state=state, group=group, objective=objective, prices=prices)
    return {z for zones in plan.zones.values() for z in zones}


def test_the_network_score_prefers_the_close_lossy_pair():
    assert _zones("network-score") == {"A", "B"}


def test_the_latency_objective_prefers_the_loss_free_pair():
    assert _zones("latency") == {"A", "C"}


def test_the_transfer_objective_prefers_one_region_when_regions_cost_more():
    assert _zones("transfer-cost", plans.TransferPrices(zone=0.02, region=0.05)) == {"A", "C"}


def test_the_transfer_objective_follows_the_prices_when_zones_cost_more_than_regions():
    # Priced the other way round (a cross-zone link billed above the inter-region one), the pair
    # across regions is the cheap one.
    assert _zones("transfer-cost", plans.TransferPrices(zone=0.09, region=0.01)) == {"A", "B"}


def _transfer_profile(plan_params):
    return {"apiVersion": engine.V1ALPHA1, "name": "cheap", "scorers": [{"name": "network-score", "weight": 1}],
            "filters": ["plan"], "params": {"plan": {"objective": "transfer-cost", **plan_params}}}


def test_a_profile_sets_the_transfer_prices_its_plans_use():
    profile = engine.parse_profile(_transfer_profile({"zone_usd_per_gb": 0.01, "region_usd_per_gb": 0.08}))
    (_, args), = profile.parsed.filters
    assert args.prices == plans.TransferPrices(zone=0.01, region=0.08)
    assert plans.objective_key("transfer-cost", args.prices) != plans.objective_key("transfer-cost")
    default = engine.parse_profile(_transfer_profile({}))
    assert default.parsed.filters[0][1].prices == plans.DEFAULT_TRANSFER_PRICES


@pytest.mark.parametrize(("params", "path", "message"), [
    ({"region_usd_per_gb": -1}, "params.plan.region_usd_per_gb", "must be >= 0"),
    ({"zone_usd_per_gb": "cheap"}, "params.plan.zone_usd_per_gb", "must be a number"),
    ({"zone_usd_per_gb": 0, "region_usd_per_gb": 0}, "params.plan.region_usd_per_gb", "cannot choose"),
])
def test_bad_transfer_prices_are_refused_naming_the_field(params, path, message):
    with pytest.raises(engine.ProfileError, match=message) as caught:
        engine.parse_profile(_transfer_profile(params)).parsed  # noqa: B018
    assert caught.value.field_path == path


def test_a_profile_names_the_objective_and_an_unknown_one_is_refused_naming_the_field():
    doc = {"apiVersion": engine.V1ALPHA1, "name": "lat", "scorers": [{"name": "network-score", "weight": 1}],
           "filters": ["plan"], "params": {"plan": {"objective": "latency"}}}
    assert engine.parse_profile(doc).params["plan"]["objective"] == "latency"
    with pytest.raises(engine.ProfileError, match="objective"):
        engine.parse_profile({**doc, "params": {"plan": {"objective": "cheapest"}}})
