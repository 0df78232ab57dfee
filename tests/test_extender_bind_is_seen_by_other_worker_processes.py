"""Two separate gunicorn servers (two processes, each with its own cached ClusterState) over the
same Postgres and Redis: a bind answered by one is seen by its own very next prioritize at once,
and by the other's within NETAWARE_STATE_VERSION_CHECK_SECONDS, through the shared state version
alone (the periodic database check is switched off)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.db import connection

from tests.support.extender_wire import binding_args, extender_args, k8s_pod, load_testbed, save_boutique
from tests.support.fake_kube import FakeKube

ROOT = Path(__file__).resolve().parent.parent
VERSION_CHECK = 0.3  # seconds: the staleness bound for writes made by another process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, env: dict[str, str]) -> subprocess.Popen:
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    proc = subprocess.Popen(
        [gunicorn, "netaware_site.wsgi", "-w", "1", "-k", "gthread", "--threads", "1", "-b", f"127.0.0.1:{port}",
         "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("gunicorn did not start")


def post(port: int, verb: str, body: object):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", f"/scheduler/{verb}", body=orjson.dumps(body), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        return orjson.loads(response.read())
    finally:
        conn.close()


@pytest.mark.slow
def test_a_bind_in_one_process_reaches_the_next_prioritize_in_another(transactional_db):
    nodes = load_testbed()
    save_boutique()
    db = connection.settings_dict
    with FakeKube() as fake:
        created = fake.add_pod("boutique", "redis-cart-0", labels={"app": "redis-cart"})
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            "REDIS_URL": settings.REDIS_URL,
            "KUBE_API_URL": fake.url,
            "NETAWARE_STATE_DB_CHECK_SECONDS": "3600",
            "NETAWARE_STATE_MAX_AGE_SECONDS": "3600",
            "NETAWARE_STATE_VERSION_CHECK_SECONDS": str(VERSION_CHECK),
            "NETAWARE_DECISION_QUEUE": "false",
            "DEBUG": "false",
            "OPENBLAS_NUM_THREADS": "1",
        }
        ports = [free_port(), free_port()]
        servers = [start_server(port, env) for port in ports]
        try:
            cart = k8s_pod("cartservice-1", namespace="boutique", labels={"app": "cartservice"})
            args = extender_args(cart, node_names=nodes)
            before = [{e["Host"]: e["Score"] for e in post(port, "prioritize", args)} for port in ports]
            assert before[0] == before[1]  # both built their state, nothing placed: cold start

            redis_pod = k8s_pod("redis-cart-0", namespace="boutique", labels={"app": "redis-cart"},
                                uid=created["metadata"]["uid"])
            assert post(ports[0], "bind", binding_args(redis_pod, "n1412")) == {"Error": ""}

            # The process that answered the bind sees it on its very next call.
            local = {e["Host"]: e["Score"] for e in post(ports[0], "prioritize", args)}
            assert local != before[0]
            assert local["n1412"] == 8  # same node as its now-placed dependency (SameNodeScore 0.8)
            # The other process reads the shared version at most every VERSION_CHECK seconds.
            time.sleep(VERSION_CHECK)
            after = {e["Host"]: e["Score"] for e in post(ports[1], "prioritize", args)}
            assert after == local
        finally:
            for proc in servers:
                os.killpg(proc.pid, signal.SIGTERM)
            for proc in servers:
                proc.wait(20)
