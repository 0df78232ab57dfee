"""``manage.py evaluate --degrade A:B:rtt_ms=..,loss=..``: once every pod is placed, a zone pair's link
degrades; the report gives score, latency, transfer cost and moves with the rebalancer off (the placement
stays) and on (the drift moves made as the rebalancer makes them: one at a time while the drift is above
its threshold). On the paper testbed, kube-scheduler's default placement spreads Online Boutique over A
and B: off its requests slow down, on it gets back to within the threshold (1 %) of the best now.
Bad --degrade values are a CommandError naming the part that is wrong."""

from __future__ import annotations

from dataclasses import replace
from io import StringIO
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation.adapter import load_appgroups
from apps.scheduler.evaluation.drift import assess_drift
from apps.scheduler.evaluation.metrics import network_metrics
from apps.scheduler.evaluation.replay import (
    REBALANCE_THRESHOLD,
    degrade_scenario,
    degraded_topology,
    parse_degradation,
    rebalance,
)
from apps.scheduler.evaluation.report import initial_state
from apps.scheduler.evaluation.simulate import appgroup_pods, parse_profile, simulate
from apps.scheduler.scoring.state import evolve

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = str(ROOT / "scenarios" / "paper-testbed.yaml")
APPGROUP = str(ROOT / "scenarios" / "online-boutique-appgroup.yaml")


def _run(**options) -> str:
    out = StringIO()
    call_command("evaluate", stdout=out, **{"scenario": SCENARIO, "appgroup": APPGROUP, "seeds": 1,
                                            "no_optimum": True, **options})
    return out.getvalue()


def test_rebalancer_on_recovers_what_a_degraded_link_costs_rebalancer_off():
    report = orjson.loads(_run(profiles="default,network", degrade="A:B:rtt_ms=40,loss=5", format="json"))
    assert report["degradation"] == "A<->B: rtt 40 ms, loss 5 %"
    by_profile = {r["profile"]: r["replay"] for r in report["profiles"]}
    spread = by_profile["default"]
    # The change slows the placement as it is down (its score is on the changed topology's own scale).
    assert spread["latency_off_ms"]["mean"] > spread["latency_before_ms"]["mean"]
    assert spread["moves"]["mean"] >= 1
    assert spread["score_on"]["mean"] > spread["score_off"]["mean"]
    assert spread["latency_on_ms"]["mean"] < spread["latency_off_ms"]["mean"]
    assert spread["on_fraction_of_best"]["mean"] >= 1 - REBALANCE_THRESHOLD
    # The network profile keeps Online Boutique in zone A: nothing crosses A<->B, nothing to move.
    packed = by_profile["network"]
    assert packed["moves"]["mean"] == 0 and packed["score_off"]["mean"] == pytest.approx(packed["score_before"]["mean"])
    table = _run(profiles="default", degrade="A:B:rtt_ms=40,loss=5")
    assert "after all pods are placed, A<->B: rtt 40 ms, loss 5 %" in table and "| score on" in table
    plain = orjson.loads(_run(profiles="default", format="json"))
    assert plain["degradation"] == "" and plain["profiles"][0]["replay"] is None


def test_the_replayed_rebalancer_moves_one_pod_at_a_time_only_while_drift_is_above_its_threshold():
    scenario = load_scenario(SCENARIO)
    groups = load_appgroups(APPGROUP)
    state0 = initial_state(scenario, groups)
    placed = simulate(state0, appgroup_pods(groups), parse_profile("default", {}), 0).final_state
    degraded = evolve(placed, topology=degraded_topology(scenario, parse_degradation("A:B:rtt_ms=40,loss=5")))
    (group,) = groups
    report = assess_drift(state=degraded, group=group)
    assert len(report.moves) >= 2 and report.best_score > 0

    def drift(state) -> float:
        return 1 - network_metrics(state, groups).average / report.best_score

    assert drift(degraded) > REBALANCE_THRESHOLD
    everything, all_moves = rebalance(degraded, group, report, threshold=0.0)
    assert all_moves == len(report.moves)  # each listed move raises the score: all are made
    assert drift(everything) <= 1e-6
    stepwise, made = rebalance(degraded, group, report)
    assert 1 <= made <= len(report.moves)
    assert drift(stepwise) <= REBALANCE_THRESHOLD  # it stopped within the threshold ...
    one_short, _ = rebalance(degraded, group, replace(report, moves=report.moves[:made - 1]), threshold=0.0)
    assert drift(one_short) > REBALANCE_THRESHOLD  # ... at the first move that got it there
    assert rebalance(degraded, group, report, threshold=0.99) == (degraded, 0)  # below it: nothing moves


def test_degrading_changes_only_the_zone_pair():
    scenario = load_scenario(SCENARIO)
    worse = degrade_scenario(scenario, parse_degradation("B:A:rtt_ms=40"))
    assert worse.zone_links[("A", "B")].latency_ms == worse.zone_links[("B", "A")].latency_ms == 40
    assert worse.zone_links[("A", "B")].loss_pct == scenario.zone_links[("A", "B")].loss_pct
    assert {k: v for k, v in worse.zone_links.items() if set(k) != {"A", "B"}} == \
        {k: v for k, v in scenario.zone_links.items() if set(k) != {"A", "B"}}


@pytest.mark.parametrize(("value", "message"), [
    ("A-B", "--degrade: expected ZONE:ZONE:"),
    ("A:B:speed=3", "'speed=3' is not one of rtt_ms=, loss=, bandwidth_mbps="),
    ("A:B:rtt_ms=fast", "--degrade: rtt_ms must be a number, got 'fast'"),
    ("A:B:loss=120", "--degrade: loss must be within 0..100"),
    ("A:B:bandwidth_mbps=0", "--degrade: bandwidth_mbps must be > 0"),
    ("A:B:rtt_ms=1,rtt_ms=2", "rtt_ms is given twice"),
    ("A:MOON:rtt_ms=40", "--degrade: zone 'MOON' is not in scenario 'paper-testbed'"),
])
def test_bad_degrade_values_are_a_command_error_naming_them(value, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(".", r"\.").replace("+", r"\+")):
        _run(profiles="default", degrade=value)
