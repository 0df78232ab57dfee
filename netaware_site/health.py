"""Liveness and readiness endpoints.

``/healthz`` only says the process serves requests; ``/readyz`` checks every dependency the
service needs to do its job (database, Redis, Prometheus) and answers 503 naming the ones that fail.
What works less well without taking the web out of service (no Celery worker alive: nothing pulls
metrics, derives the topology or syncs AppGroups; the Kubernetes API does not answer the worker that
syncs AppGroups and publishes the NetworkTopology) is listed under ``degraded``, still 200.
"""

from __future__ import annotations

import time

import redis
import requests
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from netaware_core import shared_heartbeat


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "not ready"
        return f"database: {exc.__class__.__name__}: {exc}".strip()
    return None


def _check_redis() -> str | None:
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
        client.ping()
    except Exception as exc:
        return f"redis: {exc.__class__.__name__}: {exc}"
    return None


def _check_prometheus() -> str | None:
    try:
        response = requests.get(f"{settings.PROMETHEUS_URL.rstrip('/')}/-/ready", timeout=2)
        if response.status_code != 200:
            return f"prometheus: HTTP {response.status_code} from /-/ready"
    except requests.RequestException as exc:
        return f"prometheus: {exc.__class__.__name__}: {exc}"
    return None


def _degraded() -> list[str]:
    """Queues no live Celery worker consumes (heartbeats in Redis, netaware_core/shared_heartbeat.py)."""
    try:
        alive = shared_heartbeat.alive(url=settings.CELERY_BROKER_URL, kind="worker")
    except redis.RedisError:
        return []  # Redis itself is a failed check
    served = {name.split(":", 1)[0] for name in alive}
    expected = [settings.CELERY_TASK_DEFAULT_QUEUE] + ([settings.KUBE_TASK_QUEUE] if settings.KUBE_TASK_QUEUE else [])
    notes = [f"celery worker: no worker heartbeat on queue {queue!r} in the last {3 * shared_heartbeat.period():g} s; "
             + ("metric pulls and topology updates are not running" if queue == settings.CELERY_TASK_DEFAULT_QUEUE
                else "AppGroup syncs and NetworkTopology publishing are not running")
             for queue in expected if queue not in served]
    try:
        failed = shared_heartbeat.failed_checks(url=settings.CELERY_BROKER_URL, check="kubeapi")
    except redis.RedisError:
        failed = {}
    now = time.time()
    notes += [f"kubernetes api: {error} (worker {who.split(':', 1)[-1]}, {max(0.0, now - at):.0f} s ago); "
              "AppGroup syncs and NetworkTopology publishing fail until it answers"
              for who, (error, at) in sorted(failed.items())]
    return notes


def readyz(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    checks = {"database": _check_database(), "redis": _check_redis(), "prometheus": _check_prometheus()}
    failures = {name: msg for name, msg in checks.items() if msg}
    body = {
        "status": "ok" if not failures else "unavailable",
        "checks": {name: (msg or "ok") for name, msg in checks.items()},
        "degraded": _degraded(),
        "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
    }
    return JsonResponse(body, status=200 if not failures else 503)
