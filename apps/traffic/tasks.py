"""Celery tasks of the observed-traffic pipeline (thin: they call services)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from apps.probes.prometheus import PrometheusUnavailable
from apps.probes.tasks import retry_countdown

from . import services

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="apps.traffic.tasks.pull_traffic", max_retries=None, acks_late=True,
             reject_on_worker_lost=True)
def pull_traffic(self: Any) -> dict[str, Any]:
    """Pull, store and learn the pending windows of every present traffic source, then ask for the observed
    AppGroups to be refreshed (``refresh_observed``: it reads the cluster's objects, so it runs on the
    Kubernetes queue). On an unreachable, slow or partial Prometheus: retry with backoff (nothing half-learned)."""
    try:
        result = services.pull_traffic(refresh=False)
    except PrometheusUnavailable as exc:
        retries = self.request.retries
        logger.warning("pull_traffic: %s (attempt %d)", exc, retries + 1)
        raise self.retry(exc=exc, countdown=retry_countdown(retries),
                         max_retries=int(settings.NETAWARE["PULL_MAX_RETRIES"])) from exc
    if result.windows:
        refresh_observed.delay()
    return {"windows": result.windows, "rows_written": result.rows_written, "sources": result.sources,
            "edges_learned": result.edges_learned, "rejected": result.rejected, "capped": result.capped,
            "applications": result.applications, "skipped_locked": result.skipped_locked,
            "last_end": result.last_end.isoformat() if result.last_end else None}


@shared_task(name="apps.traffic.tasks.refresh_observed", acks_late=True, reject_on_worker_lost=True)
def refresh_observed() -> dict[str, Any]:
    """Derive the observed applications from the learned edges (workloads mapped to selectors through the
    cluster's Pods and controllers), their diffs and drift; adopt where the mode says so. Idempotent."""
    rows = services.refresh_observed()
    return {"applications": len(rows)}


@shared_task(name="apps.traffic.tasks.apply_traffic_retention")
def apply_traffic_retention() -> dict[str, int]:
    """Roll old raw edge samples into hourly roll-ups and drop them."""
    result = services.apply_retention()
    return {"rollups": result.rollups, "raw_deleted": result.raw_deleted,
            "partitions_dropped": result.partitions_dropped, "rollups_deleted": result.rollups_deleted}
