"""Celery tasks of the scheduler app (thin: they call services)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from . import services


@shared_task(name="scheduler.drain_decisions", ignore_result=True)
def drain_decisions() -> int:
    """Move queued extender decisions from Redis into Postgres (and prune to the retention)."""
    return services.drain_decisions()


@shared_task(name="scheduler.prune_decisions")
def prune_decisions() -> int:
    """Keep only the newest NETAWARE["DECISION_RETENTION"] decisions (also pruned on insert)."""
    return services.prune_decisions(keep=int(settings.NETAWARE["DECISION_RETENTION"]))


@shared_task(name="scheduler.assess_drift", ignore_result=True)
def assess_drift() -> int:
    """Store every placed AppGroup's drift against the plan found now (beat: every 60 s)."""
    return services.assess_all_drift()
