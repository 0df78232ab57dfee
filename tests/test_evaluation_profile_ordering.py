"""A small evaluation on the paper's testbed reproduces the paper's ordering and keeps FAR empty.

Assertions are the ordering (default-like below network-aware) and the no-FAR rule for the
network-only and hybrid weight 5 profiles, over a few arrival orders — not exact scores.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from apps.scheduler.evaluation import report_figure, run_evaluation

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "paper-testbed.yaml"
APPGROUP = ROOT / "scenarios" / "online-boutique-appgroup.yaml"


@pytest.fixture(scope="module")
def report():
    return run_evaluation(SCENARIO, APPGROUP, profiles=["default", "network", "hybrid-1", "hybrid-5", "load-aware"],
                          seeds=5)


def test_default_like_scores_below_the_network_aware_profiles(report):
    default = report.profile("default").average_score.mean
    assert default < report.profile("network").average_score.mean
    assert default < report.profile("hybrid-5").average_score.mean
    assert default < report.profile("hybrid-1").average_score.mean


def test_network_only_and_hybrid_5_never_use_the_far_zone(report):
    for name in ("network", "hybrid-5"):
        result = report.profile(name)
        assert result.seeds_with_pods_in["FAR"] == 0, name
        assert result.pods_per_zone["FAR"].maximum == 0, name
        assert result.unscheduled_pods == 0
    # The default-like scheduler spreads over every zone (it is network-blind).
    assert report.profile("default").seeds_with_pods_in["FAR"] > 0


def test_every_pod_is_placed_and_accounted_per_zone(report):
    for result in report.profiles:
        assert sum(stat.mean for stat in result.pods_per_zone.values()) == pytest.approx(report.pods)
        assert len(result.per_seed_average) == 5


def test_no_profile_beats_the_optimum(report):
    assert report.optimum is not None and report.optimum.exact
    for result in report.profiles:
        assert result.average_score.maximum <= report.optimum.bound + 1e-6
        assert 0 < result.fraction_of_optimum <= 1 + 1e-9


def test_network_aware_placement_is_faster_in_the_latency_model(report):
    assert report.profile("network").latency_ms.mean < report.profile("default").latency_ms.mean


def test_report_serializes_and_the_figure_has_both_panels(report):
    payload = orjson.loads(orjson.dumps(report.as_dict()))
    assert [p["profile"] for p in payload["profiles"]] == ["default", "network", "hybrid-1", "hybrid-5", "load-aware"]
    figure = report_figure(report)
    orjson.dumps(figure)
    names = [trace.get("name") for trace in figure["data"]]
    assert "average score" in names and "zone FAR" in names
    bars = next(t for t in figure["data"] if t.get("name") == "average score")
    assert list(bars["x"]) == [r.profile for r in report.profiles]
