"""``/metrics`` of the web process, in the Prometheus text format (docs/metrics.md).

Everything is computed when Prometheus scrapes, from the shared state, so any web replica reports
the same cluster-wide values and nothing is lost when a process restarts:

* topology age, read-time staleness, version and pair counts: the current snapshot in PostgreSQL;
* pipeline lag per step: the pull watermarks, the current snapshot and the last successful publish;
* Celery task outcomes and sync conflicts: counters in one Redis hash (``COUNTERS_KEY``), incremented
  by Celery signals in every worker process (``netaware_site.celery``) and by the AppGroup sync. Redis
  without persistence forgets them on a restart; Prometheus' ``rate()``/``increase()`` treat that as
  a counter reset.

A source that cannot be read (database or Redis down) drops its series for that scrape and sets
``netaware_metrics_source_up{source}`` to 0: the scrape itself never fails.

Access: ``Authorization: Bearer <NETAWARE_METRICS_TOKEN>``. Without a token configured ``/metrics``
answers 404 in production and is open in development (``METRICS_OPEN_WITHOUT_TOKEN``).
"""

from __future__ import annotations

import functools
import hmac
import json
import logging
import time
from collections.abc import Iterator, Mapping

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

log = logging.getLogger(__name__)

# The classic text format every Prometheus 2.x parses (our names need no UTF-8 escaping).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
COUNTERS_KEY = "netaware:metrics:counters"
PUBLISHED_KEY = "netaware:metrics:published"
# Counters this process may increment, with their label names (a typo fails loudly, not silently).
COUNTERS: dict[str, tuple[str, ...]] = {
    "netaware_celery_tasks_total": ("task", "outcome"),
    "netaware_sync_conflicts_total": (),
}
COUNTER_HELP = {
    "netaware_celery_tasks_total": "Celery tasks finished, by task name and outcome (success|failure|retry).",
    "netaware_sync_conflicts_total": "AppGroups edited in netaware and in the cluster since the last sync "
                                     "(the cluster's version won).",
}


@functools.lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)


def redis_client() -> redis.Redis:
    return _client(settings.REDIS_URL)


def _field(name: str, labels: Mapping[str, str]) -> str:
    expected = COUNTERS.get(name)
    if expected is None:
        raise ValueError(f"unknown counter {name!r}")
    if set(labels) != set(expected):
        raise ValueError(f"counter {name} takes labels {expected}, got {sorted(labels)}")
    return json.dumps([name, [[k, str(labels[k])] for k in expected]], separators=(",", ":"))


def increment(name: str, labels: Mapping[str, str] | None = None, amount: int = 1) -> None:
    """Add ``amount`` to a shared counter; never raises (metrics must not break the work)."""
    field = _field(name, labels or {})
    try:
        redis_client().hincrby(COUNTERS_KEY, field, amount)
    except redis.RedisError as exc:
        log.debug("metrics counter %s not incremented: %s", name, exc)


def record_publish(*, version: int, data_until: float | None) -> None:
    """Remember which topology (and data time) the cluster now has (publish lag)."""
    try:
        redis_client().hset(PUBLISHED_KEY, mapping={"version": version, "data_until": data_until or "",
                                                    "at": time.time()})
    except redis.RedisError as exc:
        log.debug("publish not recorded for metrics: %s", exc)


# --- collection ---------------------------------------------------------------------------------


def _topology_metrics(now: float) -> Iterator[Metric]:
    from apps.probes.models import PullWatermark
    from apps.topology import selectors
    from apps.topology.choices import SnapshotSource

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
        published = _published()
        if published is not None and data_until is not None:
            published_until = published.get("data_until")
            if published_until is not None:
                lag.add_metric(["publish"], max(0.0, data_until - published_until))
    yield lag


def _published() -> dict[str, float] | None:
    try:
        raw = redis_client().hgetall(PUBLISHED_KEY)
    except redis.RedisError:
        return None
    if not raw:
        return None
    out: dict[str, float] = {}
    for key, value in raw.items():
        try:
            out[key.decode()] = float(value)
        except ValueError:
            continue
    return out


def _counter_metrics() -> Iterator[Metric]:
    raw = redis_client().hgetall(COUNTERS_KEY)
    families = {name: CounterMetricFamily(name.removesuffix("_total"), COUNTER_HELP[name], labels=list(labels))
                for name, labels in COUNTERS.items()}
    seen: set[str] = set()
    for field, value in raw.items():
        try:
            name, pairs = json.loads(field)
            family = families[name]
            family.add_metric([v for _k, v in pairs], float(value))
            seen.add(name)
        except (ValueError, KeyError, TypeError):
            continue
    # An unlabelled counter that never moved is still 0, not absent (alerts on increase() need it).
    if "netaware_sync_conflicts_total" not in seen:
        families["netaware_sync_conflicts_total"].add_metric([], 0.0)
    yield from families.values()


class NetawareCollector:
    """Collects at scrape time; a source that fails is reported down instead of failing the scrape."""

    def collect(self) -> Iterator[Metric]:
        now = time.time()
        up = GaugeMetricFamily("netaware_metrics_source_up",
                               "1 when /metrics could read this source during the scrape.", labels=["source"])
        try:
            series = list(_topology_metrics(now))
        except Exception as exc:
            log.warning("/metrics: database unavailable: %s", exc)
            from django.db import close_old_connections

            close_old_connections()
            series = []
            up.add_metric(["database"], 0.0)
        else:
            up.add_metric(["database"], 1.0)
        yield from series
        try:
            counters = list(_counter_metrics())
        except redis.RedisError as exc:
            log.warning("/metrics: Redis unavailable: %s", exc)
            up.add_metric(["redis"], 0.0)
        else:
            up.add_metric(["redis"], 1.0)
            yield from counters
        yield up


# --- access -------------------------------------------------------------------------------------


def authorization_status(authorization: str | None) -> int:
    """200 when the ``Authorization`` header may read /metrics, else 401 (wrong or missing token)
    or 404 (no token configured in production). Shared with the extender's health server."""
    token = getattr(settings, "METRICS_TOKEN", "") or ""
    if not token:
        return 200 if getattr(settings, "METRICS_OPEN_WITHOUT_TOKEN", False) else 404
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return 200
    return 401


def render() -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NetawareCollector())  # type: ignore[arg-type]
    return generate_latest(registry)


def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse("method not allowed\n", status=405, content_type="text/plain")
        response["Allow"] = "GET, HEAD"
        return response
    status = authorization_status(request.META.get("HTTP_AUTHORIZATION"))
    if status == 404:
        return HttpResponse("not found\n", status=404, content_type="text/plain")
    if status == 401:
        response = HttpResponse("a valid bearer token is required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="netaware-metrics"'
        return response
    return HttpResponse(render(), content_type=CONTENT_TYPE)

