"""The production extender server (``manage.py run_extender``) as a subprocess for tests, against the
test database, the test Redis and a demo-cluster API."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.support import isolation

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def database_url() -> str:
    return isolation.database_url(connection.settings_dict)


@dataclass
class ExtenderServer:
    url: str  # urlPrefix for kube-scheduler: http://127.0.0.1:PORT/scheduler
    health: str  # http://127.0.0.1:PORT
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])

    def get(self, path: str) -> tuple[int, bytes]:
        host, port = self.health.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last: object = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the extender exited: {self.log.read_text()[-3000:]}")
            with contextlib.suppress(OSError):
                status, body = self.get("/readyz")
                last = body
                if status == 200:
                    return
            time.sleep(0.1)
        raise AssertionError(f"the extender was not ready within {timeout}s: {last!r}\n{self.log.read_text()[-3000:]}")


@contextlib.contextmanager
def extender_server(*, kube_url: str, env: dict[str, str] | None = None, wait: bool = True,
                    args: list[str] | None = None) -> Iterator[ExtenderServer]:
    """``run_extender`` on free ports (``args``: more flags, e.g. TLS; the URL is https then)."""
    port, health = free_port(), free_port()
    log = Path(tempfile.mkstemp(prefix="extender-", suffix=".log")[1])
    full_env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL,
                "KUBE_API_URL": kube_url, "NETAWARE_EXTENDER_SOURCE": "kubernetes", "DEBUG": "false",
                "LOG_LEVEL": "WARNING", "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "run_extender", "--bind", f"127.0.0.1:{port}", "--health-bind",
         f"127.0.0.1:{health}", *(args or [])], cwd=ROOT, env=full_env, start_new_session=True,
        stdout=log.open("ab"), stderr=subprocess.STDOUT)
    scheme = "https" if "--certfile" in (args or []) else "http"
    server = ExtenderServer(f"{scheme}://127.0.0.1:{port}/scheduler", f"http://127.0.0.1:{health}", proc, log)
    try:
        if wait:
            server.wait_ready()
        yield server
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
