"""Celery application: Redis broker, tasks autodiscovered from the apps."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")

app = Celery("netaware")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task outcomes for /metrics (netaware_celery_tasks_total), counted in Redis so that every worker
# process and pod adds to the same totals (netaware_site/metrics.py).
from celery.signals import task_failure, task_retry, task_success  # noqa: E402

PUBLISH_TASK = "apps.appgroups.tasks.publish_network_topology"


def _task_name(sender: object) -> str:
    return str(getattr(sender, "name", None) or sender or "unknown")


@task_success.connect
def _count_success(sender: object = None, result: object = None, **_: object) -> None:
    from . import metrics

    name = _task_name(sender)
    metrics.increment("netaware_celery_tasks_total", {"task": name, "outcome": "success"})
    if name == PUBLISH_TASK and isinstance(result, dict) and result.get("version") and not result.get("error"):
        _record_publish(int(result["version"]))


def _record_publish(version: int) -> None:
    from apps.topology.models import TopologySnapshot

    from . import metrics

    try:
        data_until = TopologySnapshot.objects.filter(version=version).values_list("data_until", flat=True).first()
    except Exception:  # database trouble: publish lag is not updated this time
        return
    metrics.record_publish(version=version, data_until=data_until.timestamp() if data_until else None)


@task_failure.connect
def _count_failure(sender: object = None, **_: object) -> None:
    from . import metrics

    metrics.increment("netaware_celery_tasks_total", {"task": _task_name(sender), "outcome": "failure"})


@task_retry.connect
def _count_retry(sender: object = None, **_: object) -> None:
    from . import metrics

    metrics.increment("netaware_celery_tasks_total", {"task": _task_name(sender), "outcome": "retry"})
