"""The AppGroups' drift for the web process's ``/metrics`` (netaware_site/scrape.py), read from the
stored assessments (``DriftAssessment``, written by the task ``scheduler.assess_drift``) at scrape time:
a scrape never plans."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from .selectors import drift_assessments


def drift_metrics(now: float) -> Iterator[Metric]:
    """Per AppGroup: drift ratio, score now and possible, moves that close the gap, assessment age."""
    labels = ["namespace", "appgroup"]
    ratio = GaugeMetricFamily("netaware_appgroup_drift_ratio",
                              "1 - current / best average network score of the AppGroup's placement on the current "
                              "topology (0: nothing better found).", labels=labels)
    score = GaugeMetricFamily("netaware_appgroup_score",
                              "Average network score (0..100) of the AppGroup's current placement on the current "
                              "topology.", labels=labels)
    best = GaugeMetricFamily("netaware_appgroup_best_score",
                             "Best average network score (0..100) the planner and the moves find now.", labels=labels)
    moves = GaugeMetricFamily("netaware_appgroup_drift_moves",
                              "Single-pod moves, each an improvement on its own, that close the drift.", labels=labels)
    age = GaugeMetricFamily("netaware_appgroup_drift_age_seconds",
                            "now - when the AppGroup's drift was last assessed.", labels=labels)
    for row in drift_assessments():
        key = [row.appgroup.namespace, row.appgroup.name]
        ratio.add_metric(key, row.drift)
        if row.current_score is not None:
            score.add_metric(key, row.current_score)
        if row.best_score is not None:
            best.add_metric(key, row.best_score)
        moves.add_metric(key, float(len(row.moves or ())))
        age.add_metric(key, max(0.0, now - row.computed_at.timestamp()))
    yield from (ratio, score, best, moves, age)
