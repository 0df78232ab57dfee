"""Celery application: Redis broker, tasks autodiscovered from the apps."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")

app = Celery("netaware")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task outcomes for /metrics (netaware_celery_tasks_total), counted in Redis so that every worker
# process and pod adds to the same totals (netaware_core/metrics.py).
from celery.signals import task_failure, task_retry, task_success  # noqa: E402

from netaware_core import metrics  # noqa: E402


def _task_name(sender: object) -> str:
    return str(getattr(sender, "name", None) or sender or "unknown")


@task_success.connect
def _count_success(sender: object = None, **_: object) -> None:
    metrics.increment("netaware_celery_tasks_total", {"task": _task_name(sender), "outcome": "success"})


@task_failure.connect
def _count_failure(sender: object = None, **_: object) -> None:
    metrics.increment("netaware_celery_tasks_total", {"task": _task_name(sender), "outcome": "failure"})


@task_retry.connect
def _count_retry(sender: object = None, **_: object) -> None:
    metrics.increment("netaware_celery_tasks_total", {"task": _task_name(sender), "outcome": "retry"})
