"""Celery tasks of the appgroups app (thin: they call apps.appgroups.sync / apps.topology.publish)."""

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


@shared_task(name="apps.appgroups.tasks.publish_network_topology", ignore_result=True)
def publish_network_topology() -> dict[str, Any]:
    """Publish the current topology snapshot as NetworkTopology resources (skipped when unchanged)."""
    from apps.topology import publish
    from netaware_site import kube

    try:
        return publish.publish().summary()
    except ConfigException as exc:
        log.info("NetworkTopology publish skipped: no Kubernetes API configured (%s)", exc)
        return {"skipped": str(exc)}
    except Exception as exc:
        if not kube.is_retryable(exc):
            raise
        # API server down or busy: the next run re-publishes (the aggregate is applied last, so a
        # half-written set is never marked as published).
        log.warning("NetworkTopology publish failed, will retry on the next run: %s", kube.describe(exc))
        return {"error": kube.describe(exc)}
