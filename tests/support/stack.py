"""Run ``scripts/up.sh`` from a test, apart from any other instance and from the test session.

The stack gets its own state directory, free ports, a database of its own (created by up.sh with the
test session's PostgreSQL credentials, dropped afterwards) and a Redis database of the session's
private redis-server that the tests themselves never use.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from tests.support.prometheus import free_port

ROOT = Path(__file__).resolve().parent.parent.parent
UP = ["bash", str(ROOT / "scripts" / "up.sh")]


# Every port the run command listens on, read from up.sh itself (``${NETAWARE_<WHAT>_PORT:-default}``),
# so a port added there is moved by every test that runs it beside a stack on the default ports.
DEFAULT_PORTS = {name: int(port) for name, port in
                 re.findall(r"\$\{(NETAWARE_\w+_PORT):-(\d+)\}", (ROOT / "scripts" / "up.sh").read_text())}


def own_ports() -> dict[str, str]:
    """A free port for each of :data:`DEFAULT_PORTS`."""
    return {name: str(free_port()) for name in DEFAULT_PORTS}


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def with_redis_db(url: str, db: int) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


def drop_database(url: str, name: str) -> None:
    """Drop ``name`` with the credentials of ``url`` (its owner), closing its connections."""
    with psycopg.connect(with_database(url, "postgres"), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def base_env(**overrides: str) -> dict[str, str]:
    """The test process' environment minus what the test session set for itself."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"DJANGO_SETTINGS_MODULE", "CELERY_TASK_DEFAULT_QUEUE", "PROMETHEUS_URL",
                        "DATABASE_URL_FILE", "PYTEST_CURRENT_TEST"}}
    env.update(overrides)
    return env


def run_up(env: Mapping[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*UP, *args], env=dict(env), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@dataclass
class Stack:
    web: str
    env: dict[str, str]
    state: Path
    result: subprocess.CompletedProcess[str]

    def log(self, name: str) -> str:
        path = self.state / "log" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextmanager
def running_stack(label: str, **overrides: str) -> Iterator[Stack]:
    """``bash scripts/up.sh`` with everything of its own; stopped (and its database dropped) at exit."""
    state = Path(tempfile.mkdtemp(prefix=f"netaware-{label}-"))
    ports = own_ports()
    db_name = f"netaware_{label}_{os.getpid()}"
    session_db_url = os.environ["DATABASE_URL"]
    env = base_env(
        NETAWARE_STATE_DIR=str(state),
        **ports,
        # The demo rollout waits for the first measured topology: tests run it themselves
        # (`up.sh rollout`) when they want it, so start-up stays quick.
        NETAWARE_DEMO_ROLLOUT="0",
        DATABASE_URL=with_database(session_db_url, db_name),
        REDIS_URL=with_redis_db(os.environ["REDIS_URL"], 3),
    )
    env.update(overrides)
    drop_database(session_db_url, db_name)
    try:
        result = run_up(env)
        yield Stack(web=f"http://127.0.0.1:{ports['NETAWARE_WEB_PORT']}", env=env, state=state, result=result)
    finally:
        run_up(env, "stop", timeout=120)
        logs = state / "log"
        if logs.exists():
            for log in sorted(logs.glob("*.log")):
                print(f"--- {log.name} (tail) ---")
                print("\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        shutil.rmtree(state, ignore_errors=True)
        drop_database(session_db_url, db_name)
