"""The observed-traffic series for ``/metrics`` (netaware_site/scrape.py), read from PostgreSQL at scrape time."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from .models import LearnedEdge, ObservedAppGroup, TrafficSource
from .selectors import learned_until


def traffic_metrics(now: float) -> Iterator[Metric]:
    """Learning lag, sources present, learned edges, refused series and drift against declared AppGroups."""
    until = learned_until()
    if until is not None:
        yield GaugeMetricFamily("netaware_traffic_learning_lag_seconds",
                                "now - end of the newest observed-traffic window learned from.",
                                value=max(0.0, now - until.timestamp()))
    present = GaugeMetricFamily("netaware_traffic_source_present",
                                "1 when a configured traffic source's metric has series in Prometheus.",
                                labels=["source"])
    rejected = GaugeMetricFamily("netaware_traffic_series_rejected",
                                 "Series or points of a traffic source refused in its last pull (NaN, negative, "
                                 "invalid names, over the edge cap).", labels=["source"])
    for source in TrafficSource.objects.filter(enabled=True).order_by("name"):
        present.add_metric([source.name], 1.0 if source.present else 0.0)
        rejected.add_metric([source.name], float(source.rejected_last_run))
    yield present
    yield rejected
    yield GaugeMetricFamily("netaware_traffic_learned_edges", "Observed edges currently learned (hysteresis kept).",
                            value=LearnedEdge.objects.count())
    drift = GaugeMetricFamily("netaware_traffic_declared_missing_hot_edges",
                              "Hot observed edges (>= NETAWARE_TRAFFIC_HOT_EDGE_REQUESTS req/s) that the declared "
                              "AppGroup compared with does not declare.", labels=["namespace", "appgroup", "observed"])
    reweighted = GaugeMetricFamily("netaware_traffic_declared_reweighted_hot_edges",
                                   "Hot observed edges the declared AppGroup declares with a weight share off by the "
                                   "weight drift ratio (2x) or more against the learned weight.",
                                   labels=["namespace", "appgroup", "observed"])
    for row in ObservedAppGroup.objects.exclude(declared="").order_by("namespace", "name").only(
            "namespace", "name", "declared", "hot_missing", "diff"):
        drift.add_metric([row.namespace, row.declared, row.name], float(row.hot_missing))
        reweighted.add_metric([row.namespace, row.declared, row.name], float((row.diff or {}).get("hot_reweighted", 0)))
    yield drift
    yield reweighted
