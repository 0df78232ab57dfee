"""Celery tasks of the topology app (thin: they call services)."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="apps.topology.tasks.rebuild_topology")
def rebuild_topology() -> int | None:
    """Re-derive the topology; returns the current version (None when there is nothing yet)."""
    snapshot = services.rebuild_topology()
    return snapshot.version if snapshot is not None else None
