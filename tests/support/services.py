"""Real PostgreSQL and Redis servers owned by one test, so the test can stop, restart or hang them
without touching the machine's shared ones (or another test run's)."""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import redis

from tests.support.extender_server import free_port


def _wait(check, what: str, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not come up within {timeout}s")


class RedisServer:
    """``redis-server`` on a free port with a data directory of its own; ``args`` are its persistence
    flags (default: nothing on disk)."""

    def __init__(self, *, args: tuple[str, ...] = ("--save", "", "--appendonly", "no")) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="netaware-redis-"))
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen([binary, "--port", str(self.port), "--bind", "127.0.0.1", *self.args,
                                      "--dir", str(self.dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(lambda: redis.Redis(port=self.port, socket_timeout=0.5).ping(), "redis-server")
        return self

    def stop(self) -> None:
        """SIGTERM: a clean shutdown (what a Deployment's restart sends), which syncs its files."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def pause(self) -> None:
        """Hang: the process stops answering but keeps its connections open."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


class PostgresServer:
    """A PostgreSQL cluster of its own (initdb in a temporary directory, run as the ``postgres``
    system user when root), listening on its private socket and 127.0.0.1 with ``scram-sha-256``
    and a generated password, as Debian configures TCP: nothing here works only under ``trust``."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="netaware-pg-"))
        self.data = self.dir / "data"
        self.socket_dir = self.dir / "sock"
        bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not bindir:
            raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin")
        self.bin = Path(bindir[-1])
        self.password = secrets.token_urlsafe(18)

    def _as_postgres(self, *argv: str) -> None:
        cmd = list(argv)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def url(self, database: str) -> str:
        return f"postgres://postgres:{self.password}@127.0.0.1:{self.port}/{database}"

    def init(self) -> PostgresServer:
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
            shutil.chown(self.socket_dir, "postgres")
        pwfile = self.dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres")
        self._as_postgres(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                          "--auth=scram-sha-256", f"--pwfile={pwfile}", "--no-sync")
        pwfile.unlink()
        return self

    def start(self) -> PostgresServer:
        self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-l", str(self.dir / "log"), "-o",
                          f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        _wait(lambda: psycopg.connect(self.url("postgres"), connect_timeout=1).close() is None, "postgres")
        return self

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-m", mode, "stop")

    def _pids(self) -> list[int]:
        """The postmaster and every process under it (backends, background workers)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        pids, todo = [], [postmaster]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*"):
                with contextlib.suppress(OSError):
                    todo += [int(c) for c in (task / "children").read_text().split()]
        return pids

    def pause(self) -> None:
        """Hang the whole server (SIGSTOP): connections stay open, nothing answers, new connections
        are accepted by the kernel and then wait."""
        for pid in self._pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self._pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
