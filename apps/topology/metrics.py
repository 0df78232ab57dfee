"""The topology's series for ``/metrics`` (netaware_site/scrape.py), read from PostgreSQL at scrape time."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from apps.probes.models import PullWatermark
from netaware_core import metrics

from . import selectors
from .choices import SnapshotSource


def topology_metrics(now: float) -> Iterator[Metric]:
    """Topology age, staleness, version, pair counts and the pipeline lag per step, read at scrape time."""
    snapshot = selectors.current_snapshot()
    lag = GaugeMetricFamily("netaware_pipeline_lag_seconds",
                            "How far each pipeline step is behind: pull = now - end of the newest window stored "
                            "for the slowest query; rebuild = pulled data not yet in the current topology; "
                            "publish = topology data not yet published to the cluster.", labels=["step"])
    watermarks = list(PullWatermark.objects.values_list("last_end", flat=True))
    if watermarks:
        lag.add_metric(["pull"], max(0.0, now - min(w.timestamp() for w in watermarks)))
    if snapshot is not None:
        fresh = selectors.freshness(snapshot=snapshot, now=now)
        yield GaugeMetricFamily("netaware_topology_age_seconds",
                                "Age of the newest measurement in the current topology (read time).",
                                value=fresh.age_seconds)
        yield GaugeMetricFamily("netaware_topology_stale",
                                "1 when the current topology is stale at read time (flagged, or its newest data "
                                "is older than NETAWARE_STALE_AFTER_SECONDS).", value=1.0 if fresh.stale else 0.0)
        yield GaugeMetricFamily("netaware_topology_version", "Version of the current topology snapshot.",
                                value=snapshot.version)
        pairs = GaugeMetricFamily("netaware_topology_pairs", "Node pairs of the current topology by kind.",
                                  labels=["kind"])
        pairs.add_metric(["measured"], snapshot.measured_pairs)
        pairs.add_metric(["inferred"], snapshot.inferred_pairs)
        pairs.add_metric(["stale"], snapshot.stale_pairs)
        yield pairs
        data_until = snapshot.data_until.timestamp() if snapshot.data_until else None
        if watermarks and data_until is not None and snapshot.source == SnapshotSource.MEASURED:
            newest_pulled = max(w.timestamp() for w in watermarks)
            lag.add_metric(["rebuild"], max(0.0, newest_pulled - data_until))
        published = metrics.published()
        if published is not None and data_until is not None:
            published_until = published.get("data_until")
            if published_until is not None:
                lag.add_metric(["publish"], max(0.0, data_until - published_until))
    yield lag
