"""Celery tasks of the metrics pipeline (thin: they call services)."""

from __future__ import annotations

import logging
import random
from typing import Any

from celery import shared_task
from django.conf import settings

from . import services, signals
from .prometheus import PrometheusUnavailable

logger = logging.getLogger(__name__)


def retry_countdown(retries: int) -> float:
    """Exponential backoff with full jitter: uniform in [base/2, min(max, base * 2**retries)]."""
    conf = settings.NETAWARE
    base = float(conf["PULL_RETRY_BACKOFF_SECONDS"])
    ceiling = min(float(conf["PULL_RETRY_BACKOFF_MAX_SECONDS"]), base * (2**retries))
    return random.uniform(min(base / 2, ceiling), ceiling)


def _retry(task: Any, exc: Exception, what: str) -> Any:
    retries = task.request.retries
    max_retries = int(settings.NETAWARE["PULL_MAX_RETRIES"])
    logger.warning("%s: %s (attempt %d of %d)", what, exc, retries + 1, max_retries + 1)
    signals.send(signals.pull_failed, sender=task, reason=f"metrics pull failed: {exc}")
    return task.retry(exc=exc, countdown=retry_countdown(retries), max_retries=max_retries)


def _summary(result: services.PullResult) -> dict[str, Any]:
    return {
        "windows": result.windows,
        "rows_written": result.rows_written,
        "points_skipped": result.points_skipped,
        "nodes_seen": result.nodes_seen,
        "last_end": result.last_end.isoformat() if result.last_end else None,
        "skipped_locked": result.skipped_locked,
        "series_already_stored": result.series_already_stored,
    }


@shared_task(bind=True, name="apps.probes.tasks.pull_metrics", max_retries=None, acks_late=True,
             reject_on_worker_lost=True)
def pull_metrics(self: Any) -> dict[str, Any]:
    """Pull pending windows; with NETAWARE_PULL_SHARDS > 1, refresh the node list and fan out one
    ``pull_shard`` task per shard so that more workers pull more pairs at once.

    On an unreachable, slow or partial Prometheus: mark the topology stale and retry with backoff.
    """
    shards = int(settings.NETAWARE["PULL_SHARDS"])
    if shards > 1:
        try:
            services.refresh_shard_nodes()
        except PrometheusUnavailable as exc:
            raise _retry(self, exc, "pull_metrics") from exc
        for shard in range(shards):
            pull_shard.delay(shard, shards)
        return {"shards": shards}
    try:
        result = services.pull_metrics()
    except PrometheusUnavailable as exc:
        raise _retry(self, exc, "pull_metrics") from exc
    if result.rows_written:
        signals.send(signals.window_stored, sender=pull_metrics)
    return _summary(result)


@shared_task(bind=True, name="apps.probes.tasks.pull_shard", max_retries=None, acks_late=True,
             reject_on_worker_lost=True)
def pull_shard(self: Any, shard: int, shards: int) -> dict[str, Any]:
    """Pull one shard's pending windows. A worker dying mid-window is redelivered (acks late, rejected
    on worker loss) and redoes the window: its transaction never committed, its watermark did not move."""
    try:
        result = services.pull_metrics(shard=shard, shards=shards)
    except PrometheusUnavailable as exc:
        raise _retry(self, exc, f"pull_shard {shard}/{shards}") from exc
    if result.rows_written and result.window_complete:
        signals.send(signals.window_stored, sender=pull_shard)  # the shard that completes a window asks for the rebuild
    return {"shard": shard, "shards": shards, **_summary(result)}


@shared_task(name="apps.probes.tasks.apply_retention")
def apply_retention() -> dict[str, int]:
    """Roll old raw samples into hourly roll-ups, delete them, and drop expired roll-ups."""
    result = services.apply_retention()
    return {
        "pair_rollups": result.pair_rollups,
        "node_rollups": result.node_rollups,
        "raw_deleted": result.raw_deleted,
        "rollups_deleted": result.rollups_deleted,
    }
