"""The sources of ``/metrics`` (served by ``netaware_site/scrape.py``; docs/metrics.md) that every app may
write: shared counters in Redis, the last publish, and the bearer-token check.

Everything is computed when Prometheus scrapes, from the shared state, so any web replica reports
the same cluster-wide values and nothing is lost when a process restarts:

* topology age, read-time staleness, version and pair counts: the current snapshot in PostgreSQL
  (``apps/topology/metrics.py``);
* pipeline lag per step: the pull watermarks, the current snapshot and the last successful publish
  (``record_publish``, called by the publish task);
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
from typing import cast

import redis
from django.conf import settings
from prometheus_client.core import CounterMetricFamily, Metric

log = logging.getLogger(__name__)

# The classic text format every Prometheus 2.x parses (our names need no UTF-8 escaping).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
COUNTERS_KEY = "netaware:metrics:counters"
PUBLISHED_KEY = "netaware:metrics:published"
# Counters this process may increment, with their label names (a typo fails loudly, not silently).
COUNTERS: dict[str, tuple[str, ...]] = {
    "netaware_celery_tasks_total": ("task", "outcome"),
    "netaware_sync_conflicts_total": (),
    "netaware_dead_letters_total": ("queue",),
    "netaware_rebalancer_passes_total": (),
    "netaware_rebalancer_moves_total": ("outcome",),
    "netaware_rebalancer_halts_total": ("reason",),
    "netaware_rebalancer_errors_total": ("kind",),
}
COUNTER_HELP = {
    "netaware_celery_tasks_total": "Celery tasks finished, by task name and outcome (success|failure|retry).",
    "netaware_sync_conflicts_total": "AppGroups edited in netaware and in the cluster since the last sync "
                                     "(the cluster's version won).",
    "netaware_dead_letters_total": "Records a queue could not store, set aside so the rest flows "
                                   "(netaware_core.deadletter), by queue (decisions|placements|samples).",
    "netaware_rebalancer_passes_total": "Rebalancer passes over the AppGroups in rebalanceMode dry-run or on "
                                        "(the Lease holder's only).",
    "netaware_rebalancer_moves_total": "Rebalancer moves, by outcome: evicted (an Eviction accepted), refused "
                                       "(by a PodDisruptionBudget or the API), dry-run (proposed only).",
    "netaware_rebalancer_halts_total": "Times the rebalancer stopped moving an AppGroup's pods, by reason: "
                                       "no_improvement (a move did not raise the measured score), not_ready (a "
                                       "replacement was not Ready in time: its workload is blocked).",
    "netaware_rebalancer_errors_total": "Rebalancer steps that failed, by kind: retryable (retried next pass) "
                                        "or permanent (reported in the AppGroup's status).",
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


# --- reading back (netaware_site.scrape, apps.topology.metrics) -------------------------------


def published() -> dict[str, float] | None:
    try:
        raw = cast("dict[bytes, bytes]", redis_client().hgetall(PUBLISHED_KEY))  # no decode_responses
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


def counter_metrics() -> Iterator[Metric]:
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
    for name in ("netaware_sync_conflicts_total", "netaware_rebalancer_passes_total"):
        if name not in seen:
            families[name].add_metric([], 0.0)
    yield from families.values()


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
