"""Celery tasks of the appgroups app (thin: they call apps.appgroups.sync / apps.topology.publish)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction
from kubernetes.config import ConfigException

from . import sync

log = logging.getLogger(__name__)

# A queued per-AppGroup sync older than this is redundant: the periodic resync (every 60 s) has
# covered it. Expiring it keeps a worker that comes back after an outage from replaying a backlog.
SYNC_TASK_EXPIRES = 300


def kube_configured() -> bool:
    """Cheap check (no I/O beyond a stat) that some Kubernetes API is configured, in the same
    order as ``netaware_site.kube``: KUBE_API_URL, in-cluster service account, kubeconfig."""
    if (settings.NETAWARE.get("KUBE_API_URL") or "").strip():
        return True
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    paths = os.environ.get("KUBECONFIG") or "~/.kube/config"
    return any(Path(p).expanduser().is_file() for p in paths.split(os.pathsep) if p)


def enqueue_sync(*, namespace: str, name: str) -> None:
    """Reconcile one AppGroup in a worker once the current transaction commits.

    Skipped without a Kubernetes API; a broker that is down is logged, never raised: the edit is
    already saved and the periodic resync applies it anyway.
    """
    if not kube_configured():
        return

    def send() -> None:
        try:
            # retry=False: with the broker down, fail at once instead of stalling the request.
            sync_appgroup.apply_async((namespace, name), retry=False, expires=SYNC_TASK_EXPIRES)
        except Exception as exc:
            log.warning(
                "could not enqueue the sync of AppGroup %s/%s (the periodic resync will apply it): %s",
                namespace,
                name,
                exc,
            )

    transaction.on_commit(send, robust=True)


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
