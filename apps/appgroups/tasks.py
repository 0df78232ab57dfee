"""Celery tasks of the appgroups app (thin: they call apps.appgroups.sync)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from kubernetes.config import ConfigException

from . import sync

log = logging.getLogger(__name__)


@shared_task(name="apps.appgroups.tasks.resync_cluster", ignore_result=True)
def resync_cluster() -> dict[str, Any]:
    """Periodic level-triggered pass: converges both sides after restarts and missed events."""
    try:
        return sync.sync_once().summary()
    except ConfigException as exc:  # no API server configured (development without a cluster)
        log.info("AppGroup resync skipped: no Kubernetes API configured (%s)", exc)
        return {"skipped": str(exc)}


@shared_task(name="apps.appgroups.tasks.sync_appgroup", ignore_result=True)
def sync_appgroup(namespace: str, name: str) -> dict[str, Any]:
    """Reconcile one AppGroup now; enqueue after an edit (``transaction.on_commit``)."""
    try:
        return sync.sync_appgroup(namespace=namespace, name=name).summary()
    except ConfigException as exc:
        log.info("AppGroup sync skipped: no Kubernetes API configured (%s)", exc)
        return {"skipped": str(exc)}

