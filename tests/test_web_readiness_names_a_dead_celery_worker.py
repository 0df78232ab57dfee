"""The web's /readyz (``manage.py run_web``, as the run command starts it) says when no Celery worker
is alive — a real prefork worker, SIGKILLed — under ``degraded``, while /healthz and readiness stay
up: the web still serves, but nothing pulls metrics or derives the topology (issue 21)."""

from __future__ import annotations

import json
import os
import signal

import pytest
from django.conf import settings

from tests.support.processes import celery, wait_for
from tests.support.web_server import web_server

pytestmark = pytest.mark.slow
BEAT = "1"  # seconds between the worker's heartbeats; its key lives three


def _own_redis_database() -> str:
    """The session's Redis, another database: workers other tests left running beat elsewhere."""
    return settings.REDIS_URL.rsplit("/", 1)[0] + "/11"


def test_readyz_lists_the_dead_worker_and_stays_ready(tmp_path, transactional_db):
    env = {"REDIS_URL": _own_redis_database(), "CELERY_BROKER_URL": _own_redis_database(),
           "CELERY_RESULT_BACKEND": _own_redis_database(), "NETAWARE_WORKER_HEARTBEAT_SECONDS": BEAT,
           "NETAWARE_REQUIRE_AUTH": "true"}

    with web_server(env=env) as web:
        def readiness() -> dict:
            status, body = web.get("/readyz", timeout=10)
            return {"status": status, **json.loads(body)}

        before = readiness()
        assert any("celery worker" in note for note in before["degraded"]), before
        with celery("worker", env=env, log=tmp_path / "worker.log") as worker:
            wait_for(lambda: not readiness()["degraded"], 120, "the worker's heartbeat in /readyz")
            os.kill(worker.pid, signal.SIGKILL)  # no clean shutdown: the key has to expire
            after = wait_for(lambda: (r := readiness())["degraded"] and r, 30, "the dead worker in /readyz")
        assert any(note.startswith("celery worker: no worker heartbeat") for note in after["degraded"]), after
        assert after["status"] == before["status"]  # degradation never fails readiness by itself
        assert web.get("/healthz")[0] == 200
