"""Celery tasks of the metrics pipeline (thin: they call services)."""

from __future__ import annotations

import importlib
import logging
import random
from typing import Any

from celery import shared_task
from django.conf import settings

from . import services
from .prometheus import PrometheusUnavailable

logger = logging.getLogger(__name__)


def retry_countdown(retries: int) -> float:
    """Exponential backoff with full jitter: uniform in [base/2, min(max, base * 2**retries)]."""
    conf = settings.NETAWARE
    base = float(conf["PULL_RETRY_BACKOFF_SECONDS"])
    ceiling = min(float(conf["PULL_RETRY_BACKOFF_MAX_SECONDS"]), base * (2**retries))
    return random.uniform(min(base / 2, ceiling), ceiling)


def _enqueue_rebuild() -> None:
    try:
        module = importlib.import_module("apps.topology.tasks")
    except ImportError as exc:
        logger.info("apps.topology.tasks not importable (%s); no rebuild enqueued", exc)
        return
    task = getattr(module, "rebuild_topology", None)
    if task is not None:
        task.delay()


@shared_task(bind=True, name="apps.probes.tasks.pull_metrics", max_retries=None, acks_late=True)
def pull_metrics(self: Any) -> dict[str, Any]:
    """Pull pending windows; on an unreachable/slow Prometheus mark the topology stale and retry."""
    try:
        result = services.pull_metrics()
    except PrometheusUnavailable as exc:
        retries = self.request.retries
        max_retries = int(settings.NETAWARE["PULL_MAX_RETRIES"])
        logger.warning("pull_metrics: %s (attempt %d of %d)", exc, retries + 1, max_retries + 1)
        mark_stale = services.topology_hook("mark_stale")
        if mark_stale is not None:
            mark_stale(reason=f"metrics pull failed: {exc}")
        raise self.retry(exc=exc, countdown=retry_countdown(retries), max_retries=max_retries) from exc
    if result.rows_written:
        _enqueue_rebuild()
    return {
        "windows": result.windows,
        "rows_written": result.rows_written,
        "points_skipped": result.points_skipped,
        "nodes_seen": result.nodes_seen,
        "last_end": result.last_end.isoformat() if result.last_end else None,
    }


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
