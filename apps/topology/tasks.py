"""Celery tasks of the topology app (thin: they call services and publish)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from kubernetes.config import ConfigException

from netaware_core import kube

from . import publish, services

log = logging.getLogger(__name__)


@shared_task(name="apps.topology.tasks.rebuild_topology")
def rebuild_topology() -> int | None:
    """Re-derive the topology; returns the current version (None when there is nothing yet)."""
    snapshot = services.rebuild_topology()
    return snapshot.version if snapshot is not None else None


@shared_task(name="apps.topology.tasks.publish_network_topology", ignore_result=True)
def publish_network_topology() -> dict[str, Any]:
    """Publish the current topology snapshot as NetworkTopology objects (skipped when unchanged)."""
    try:
        report = publish.publish()
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
    if report.version:
        publish.record_published(version=report.version)
    return report.summary()
