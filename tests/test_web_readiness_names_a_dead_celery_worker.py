"""The web's /readyz (``manage.py run_web``, as the run command starts it) says under ``degraded`` when
no Celery worker is alive — a real prefork worker, SIGKILLed — and when the Kubernetes API hangs for the
worker that syncs AppGroups and publishes the NetworkTopology (its heartbeat carries a ``GET /version``
check), while /healthz and readiness stay up: the web still serves (issue 21)."""

from __future__ import annotations

import json
import os
import signal

import pytest
from django.conf import settings

from apps.demo.kubeapi import FakeKube
from tests.support.processes import celery, wait_for
from tests.support.web_server import web_server

pytestmark = pytest.mark.slow
BEAT = "1"  # seconds between the worker's heartbeats; its key lives three


def _own_redis_database() -> str:
    """The session's Redis, another database: workers other tests left running beat elsewhere."""
    return settings.REDIS_URL.rsplit("/", 1)[0] + "/11"


@pytest.fixture
def kube_api():
    server = FakeKube().start()
    yield server
    server.stop()


def _env(kube_api: FakeKube) -> dict[str, str]:
    return {"REDIS_URL": _own_redis_database(), "CELERY_BROKER_URL": _own_redis_database(),
            "CELERY_RESULT_BACKEND": _own_redis_database(), "NETAWARE_WORKER_HEARTBEAT_SECONDS": BEAT,
            "NETAWARE_REQUIRE_AUTH": "true", "KUBE_API_URL": kube_api.url}


def test_readyz_lists_the_dead_worker_and_stays_ready(tmp_path, transactional_db, kube_api):
    env = _env(kube_api)

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


def test_readyz_names_a_hung_kubernetes_api_until_it_answers_again(tmp_path, transactional_db, kube_api):
    env = _env(kube_api)
    with web_server(env=env) as web, celery("worker", env=env, log=tmp_path / "worker.log"):
        statuses: set[int] = set()

        def degraded() -> list[str]:
            status, body = web.get("/readyz", timeout=10)
            statuses.add(status)
            return json.loads(body)["degraded"]

        wait_for(lambda: not degraded(), 120, "the worker's heartbeat in /readyz")
        assert kube_api.count("GET", "/version") >= 1  # the worker checks the API with its beats
        kube_api.slow(30.0, method="GET", path="/version", times=1000)  # answers long after the 2 s check gives up
        notes = wait_for(lambda: [n for n in degraded() if n.startswith("kubernetes api:")], 30,
                         "the hung Kubernetes API in /readyz")
        assert "AppGroup syncs and NetworkTopology publishing fail" in notes[0], notes
        assert "timed out" in notes[0].lower() or "timeout" in notes[0].lower(), notes
        kube_api.clear_faults()
        wait_for(lambda: not degraded(), 30, "/readyz to drop the note once the API answers")
        assert len(statuses) == 1  # degradation never changes readiness by itself (no Prometheus here: 503)
        assert web.get("/healthz")[0] == 200
