"""``/metrics`` of the web process: the shared counters (netaware_core/metrics.py) plus the topology's
series (apps/topology/metrics.py), the observed traffic's (apps/traffic/metrics.py) and the AppGroups'
drift (apps/scheduler/drift_metrics.py), collected when Prometheus scrapes. See netaware_core/metrics.py for
what each source is and docs/metrics.md for the series."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import redis
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from apps.scheduler.drift_metrics import drift_metrics
from apps.topology.metrics import topology_metrics
from apps.traffic.metrics import traffic_metrics
from netaware_core import metrics

log = logging.getLogger(__name__)


class NetawareCollector:
    """Collects at scrape time; a source that fails is reported down instead of failing the scrape."""

    def collect(self) -> Iterator[Metric]:
        now = time.time()
        up = GaugeMetricFamily("netaware_metrics_source_up",
                               "1 when /metrics could read this source during the scrape.", labels=["source"])
        try:
            series = [*topology_metrics(now), *traffic_metrics(now), *drift_metrics(now)]
        except Exception as exc:
            log.warning("/metrics: database unavailable: %s", exc)
            close_old_connections()
            series = []
            up.add_metric(["database"], 0.0)
        else:
            up.add_metric(["database"], 1.0)
        yield from series
        try:
            counters = list(metrics.counter_metrics())
        except redis.RedisError as exc:
            log.warning("/metrics: Redis unavailable: %s", exc)
            up.add_metric(["redis"], 0.0)
        else:
            up.add_metric(["redis"], 1.0)
            yield from counters
        yield up


def render() -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NetawareCollector())
    return generate_latest(registry)


def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse("method not allowed\n", status=405, content_type="text/plain")
        response["Allow"] = "GET, HEAD"
        return response
    status = metrics.authorization_status(request.META.get("HTTP_AUTHORIZATION"))
    if status == 404:
        return HttpResponse("not found\n", status=404, content_type="text/plain")
    if status == 401:
        response = HttpResponse("a valid bearer token is required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="netaware-metrics"'
        return response
    return HttpResponse(render(), content_type=metrics.CONTENT_TYPE)

