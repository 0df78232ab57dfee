"""Celery application: Redis broker, tasks autodiscovered from the apps."""

from __future__ import annotations

import os
from collections.abc import Callable

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


# The worker's heartbeat in Redis, so that the web's /readyz can say when no worker runs
# (netaware_core/shared_heartbeat.py). From the main process: it lives as long as the worker does.
from celery.signals import worker_ready, worker_shutdown  # noqa: E402

from netaware_core import shared_heartbeat  # noqa: E402

_heartbeat: dict[str, object] = {}


def _heartbeat_names(sender: object) -> list[str]:
    """``<queue>:<hostname>`` for every queue this worker consumes: the web checks each queue has one."""
    host = str(getattr(sender, "hostname", None) or os.getpid())
    consumed = getattr(getattr(app.amqp, "queues", None), "consume_from", None) or {}
    return [f"{queue}:{host}" for queue in (sorted(consumed) or [app.conf.task_default_queue])]


KUBE_CHECK_TIMEOUT = 2.0  # seconds; well within a heartbeat period


def _kube_api_check() -> str | None:
    """The Kubernetes API answers ``GET /version`` (readable by every authenticated identity: no extra
    RBAC) within :data:`KUBE_CHECK_TIMEOUT`; else what went wrong."""
    from netaware_core import kube

    try:
        kube.get_json("/version", timeout=KUBE_CHECK_TIMEOUT)
    except Exception as exc:
        return kube.describe(exc)
    return None


def _checks_for(name: str) -> dict[str, Callable[[], str | None]]:
    """The worker consuming the queue of the Kubernetes tasks checks the Kubernetes API with its beat."""
    from django.conf import settings

    from netaware_core import kube

    kube_queue = settings.KUBE_TASK_QUEUE or settings.CELERY_TASK_DEFAULT_QUEUE
    if name.split(":", 1)[0] != kube_queue or not kube.configured():
        return {}
    return {"kubeapi": _kube_api_check}


@worker_ready.connect
def _start_heartbeat(sender: object = None, **_: object) -> None:
    names = _heartbeat_names(sender)
    _heartbeat.update(names=names, stops=[shared_heartbeat.start(url=app.conf.broker_url, kind="worker", name=name,
                                                                 checks=_checks_for(name))
                                          for name in names])


@worker_shutdown.connect
def _stop_heartbeat(sender: object = None, **_: object) -> None:
    for stop in _heartbeat.get("stops", []):  # type: ignore[attr-defined]
        stop.set()
    for name in _heartbeat.get("names", []):  # type: ignore[attr-defined]
        shared_heartbeat.forget(url=app.conf.broker_url, kind="worker", name=name)
