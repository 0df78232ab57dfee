"""Celery tasks of the dashboard (thin: they call services)."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="dashboard.run_evaluation", ignore_result=True)
def run_evaluation_task(run_id: int) -> None:
    """One evaluation run, off the request (100 seeds × many profiles take seconds to minutes)."""
    services.execute_evaluation(run_id=run_id)
