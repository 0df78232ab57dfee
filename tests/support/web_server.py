"""The web server as the run command starts it (``manage.py run_web``, scripts/up.sh) as a subprocess
for tests, against the test database and Redis."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from tests.support.extender_server import database_url, free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class WebServer:
    url: str  # http://127.0.0.1:PORT
    proc: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        host, port = self.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()


@contextlib.contextmanager
def web_server(*, env: dict[str, str] | None = None, args: list[str] | None = None,
               timeout: float = 60.0) -> Iterator[WebServer]:
    """``manage.py run_web`` on a free port, once /healthz answers; stopped at exit."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="web-", suffix=".log")[1])
    full_env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL, "DEBUG": "false",
                "LOG_LEVEL": "WARNING", **(env or {})}
    full_env.pop("DATABASE_URL_FILE", None)
    proc = subprocess.Popen([sys.executable, "manage.py", "run_web", "--bind", f"127.0.0.1:{port}", *(args or [])],
                            cwd=ROOT, env=full_env, start_new_session=True, stdout=log.open("ab"),
                            stderr=subprocess.STDOUT)
    server = WebServer(f"http://127.0.0.1:{port}", proc, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the web server exited: {log.read_text()[-3000:]}")
            with contextlib.suppress(OSError):
                if server.get("/healthz")[0] == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"the web server did not answer /healthz: {log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield server
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
