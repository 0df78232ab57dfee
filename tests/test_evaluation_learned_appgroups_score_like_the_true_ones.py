"""Evaluation harness, learned vs true (issue 18): on every shipped scenario the AppGroups learned from
the traffic their true graphs emit have exactly the true edges, and scheduling with them (network profile,
50 arrival orders) reaches >= 98 % of the network score reached with the true AppGroups, both scored
against the true graph; the modelled request latency is reported beside it."""

from __future__ import annotations

import math

import pytest

from apps.scheduler.evaluation.learned import compare, learn
from apps.scheduler.evaluation.report import load_inputs
from apps.traffic.learning import LearningParams

SHIPPED = [("paper-testbed", "online-boutique-appgroup"), ("multi-region-pressure", "social-network-appgroup"),
           ("metro-two-tenants", "two-tenants-appgroups")]


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "appgroups"), SHIPPED)
def test_learned_appgroups_reach_98_percent_of_the_true_score(scenario, appgroups):
    loaded, groups = load_inputs(f"scenarios/{scenario}.yaml", f"scenarios/{appgroups}.yaml")
    result = compare(loaded, groups, profile="network", seeds=range(50))
    assert not result.learned.missing_edges and not result.learned.phantom_edges
    assert sorted(g.name for g in result.learned.groups) == sorted(g.name for g in groups)  # split by part-of
    assert len(result.runs) == 50
    assert result.ratio >= 0.98, (result.true_mean, result.learned_mean)
    assert all(math.isfinite(r.learned_latency_ms) and r.learned_latency_ms > 0 for r in result.runs)


def test_a_learned_graph_that_lost_an_edge_is_seen_as_missing():
    _, groups = load_inputs("scenarios/paper-testbed.yaml", "scenarios/online-boutique-appgroup.yaml")
    # a threshold above the quietest edges' rates: those edges are never learned, and say so
    learned = learn(groups, params=LearningParams(min_requests=3.5, min_bytes=1e12))
    assert learned.missing_edges and not learned.phantom_edges
