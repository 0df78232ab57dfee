"""Keep a test session apart from a running netaware (``scripts/up.sh``) and from other test sessions.

A test session gets, before Django reads its settings (tests/conftest.py calls :func:`isolate`):

* its own ``redis-server`` on a free port (``REDIS_URL``; broker, results and cache), stopped when the
  session ends and killed with it if pytest dies (``PR_SET_PDEATHSIG``);
* a database name unique to the run: ``<name of DATABASE_URL>_<pid>``, so pytest-django's test database
  is ``test_<name>_<pid>`` and two sessions against one PostgreSQL server never share one;
* a Celery queue of its own (``CELERY_TASK_DEFAULT_QUEUE=netaware-test-<pid>``).

A running stack therefore never sees the tests' tasks, keys or tables, and the tests never see its.
``NETAWARE_TEST_REDIS_URL`` names an existing Redis to use instead of starting one.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from tests.support.processes import stop_process

ROOT = Path(__file__).resolve().parents[2]
_PR_SET_PDEATHSIG = 1


class IsolationError(RuntimeError):
    """The session cannot be isolated; the message says what to install or change."""


@dataclass
class RedisServer:
    url: str
    process: subprocess.Popen[bytes]
    workdir: Path

    def stop(self) -> None:
        stop_process(self.process)
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class Isolation:
    redis_url: str
    database_url: str
    celery_queue: str
    redis: RedisServer | None
    previous_environment: dict[str, str | None]

    def stop(self) -> None:
        if self.redis is not None:
            self.redis.stop()

    def restore_environment(self, environ: os._Environ[str] = os.environ) -> None:
        """Undo :func:`isolate` for this process's environment and stop its Redis.

        A pytest-xdist controller runs no tests: its workers must start from the original environment
        (no ``DJANGO_SETTINGS_MODULE``, the original database URL) and isolate themselves."""
        for name, value in self.previous_environment.items():
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = value
        self.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel sends SIGTERM when pytest exits, even on SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start_redis_server(*, attempts: int = 5, timeout: float = 10.0) -> RedisServer:
    """Start a private, diskless redis-server on a free loopback port."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise IsolationError("redis-server is not installed: the tests start their own "
                             "(apt-get install redis-server; scripts/test.sh installs it)")
    last_log = ""
    for _ in range(attempts):
        port = _free_port()
        workdir = Path(tempfile.mkdtemp(prefix="netaware-test-redis-"))
        log = workdir / "redis.log"
        with log.open("wb") as log_fd:
            process = subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(workdir), "--daemonize", "no", "--databases", "16"],
                stdout=log_fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            if _answers_ping(port):
                return RedisServer(url=f"redis://127.0.0.1:{port}/0", process=process, workdir=workdir)
            time.sleep(0.05)
        # Another process took the port between the probe and redis' bind, or redis failed: retry.
        RedisServer(url="", process=process, workdir=Path("/nonexistent")).stop()
        last_log = log.read_text(errors="replace")[-500:]
        shutil.rmtree(workdir, ignore_errors=True)
    raise IsolationError(f"could not start redis-server for the tests after {attempts} attempts: {last_log}")


def run_database_url(base_url: str, pid: int) -> str:
    """``base_url`` with its database name made unique to this run (``<name>_<pid>``)."""
    parts = urlsplit(base_url)
    name = parts.path.lstrip("/") or "netaware"
    return urlunsplit(parts._replace(path=f"/{name}_{pid}"))


def base_database_url(environ: dict[str, str] | os._Environ[str]) -> str:
    file_path = environ.get("DATABASE_URL_FILE")
    if file_path:
        try:
            value = Path(file_path).read_text().strip()
        except OSError as exc:
            raise IsolationError(f"DATABASE_URL_FILE={file_path!r} cannot be read: {exc}") from exc
        if value:
            return value
    if environ.get("DATABASE_URL"):
        return environ["DATABASE_URL"]
    # What scripts/test.sh set up last (the role netaware_test, with a password): a plain pytest run
    # after it needs no variable. No password-less default: Debian's PostgreSQL has no trust login.
    state = Path(environ.get("NETAWARE_STATE_DIR") or ROOT / "var")
    saved = state / "secrets" / "test-database-url"
    if saved.is_file() and saved.read_text().strip():
        return saved.read_text().strip()
    raise IsolationError(f"no database for the tests: set DATABASE_URL (or DATABASE_URL_FILE) to a PostgreSQL "
                         f"URL whose user may create databases, or run bash scripts/test.sh once (it sets up "
                         f"the role netaware_test and keeps its URL in {saved})")


def isolate(environ: os._Environ[str] = os.environ) -> Isolation:
    """Point this process (and every process it starts) at session-private Redis, database and queue."""
    pid = os.getpid()
    changed = ("REDIS_URL", "DATABASE_URL", "CELERY_TASK_DEFAULT_QUEUE", "DATABASE_URL_FILE", "REDIS_URL_FILE",
               "CELERY_BROKER_URL", "CELERY_BROKER_URL_FILE", "CELERY_RESULT_BACKEND", "CELERY_RESULT_BACKEND_FILE",
               "CELERY_TASK_DEFAULT_QUEUE_FILE", "DJANGO_SETTINGS_MODULE")
    previous = {name: environ.get(name) for name in changed}
    redis: RedisServer | None = None
    redis_url = environ.get("NETAWARE_TEST_REDIS_URL", "")
    if not redis_url:
        redis = start_redis_server()
        redis_url = redis.url
    database_url = run_database_url(base_database_url(environ), pid)
    queue = f"netaware-test-{pid}"
    environ["REDIS_URL"] = redis_url
    environ["DATABASE_URL"] = database_url
    environ["CELERY_TASK_DEFAULT_QUEUE"] = queue
    # Explicit broker/backend/secret-file overrides would bypass the isolation.
    for name in ("DATABASE_URL_FILE", "REDIS_URL_FILE", "CELERY_BROKER_URL", "CELERY_BROKER_URL_FILE",
                 "CELERY_RESULT_BACKEND", "CELERY_RESULT_BACKEND_FILE", "CELERY_TASK_DEFAULT_QUEUE_FILE"):
        environ.pop(name, None)
    isolation = Isolation(redis_url=redis_url, database_url=database_url, celery_queue=queue, redis=redis,
                          previous_environment=previous)
    atexit.register(isolation.stop)
    return isolation


def database_url(settings_dict: dict[str, object]) -> str:
    """A URL for Django's connection settings (the test database), password included, for subprocesses."""
    user = quote(str(settings_dict.get("USER") or ""), safe="")
    password = str(settings_dict.get("PASSWORD") or "")
    credentials = f"{user}:{quote(password, safe='')}" if password else user
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{credentials}@{host}:{port}/{quote(str(settings_dict['NAME']), safe='')}"
