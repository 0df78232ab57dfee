"""``manage.py evaluate --degrade A:B:rtt_ms=..,loss=..``: once every pod is placed, a zone pair's link
degrades; the report gives score, latency, transfer cost and moves with the rebalancer off (the placement
stays) and on (the drift moves applied). On the paper testbed, kube-scheduler's default placement spreads
Online Boutique over A and B: off its requests slow down, on it gets back to >= 99 % of the best now.
Bad --degrade values are a CommandError naming the part that is wrong."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.probes.scenario import load_scenario
from apps.scheduler.evaluation.replay import degrade_scenario, parse_degradation

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
    assert spread["on_fraction_of_best"]["mean"] >= 0.99
    # The network profile keeps Online Boutique in zone A: nothing crosses A<->B, nothing to move.
    packed = by_profile["network"]
    assert packed["moves"]["mean"] == 0 and packed["score_off"]["mean"] == pytest.approx(packed["score_before"]["mean"])
    table = _run(profiles="default", degrade="A:B:rtt_ms=40,loss=5")
    assert "after all pods are placed, A<->B: rtt 40 ms, loss 5 %" in table and "| score on" in table
    plain = orjson.loads(_run(profiles="default", format="json"))
    assert plain["degradation"] == "" and plain["profiles"][0]["replay"] is None


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
