"""Celery tasks of the scheduler app (thin: they call services)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from . import services


@shared_task(name="scheduler.prune_decisions")
def prune_decisions() -> int:
    """Keep only the newest NETAWARE["DECISION_RETENTION"] decisions (also pruned on insert)."""
    return services.prune_decisions(keep=int(settings.NETAWARE.get("DECISION_RETENTION", 20000)))
