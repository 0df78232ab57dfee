"""Real processes for tests: starting and stopping the services tests run (Prometheus,
VictoriaMetrics, redis-server), and for fault tests a prefork ``celery worker`` and ``celery beat`` as
subprocesses on the test database (or any other), which a test can kill, stop and restart."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import requests

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll ``predicate`` until it returns something true; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@contextlib.contextmanager
def together(*managers: AbstractContextManager) -> Iterator[tuple]:  # type: ignore[type-arg]
    """Enter context managers at the same time (threads), so that slow start-ups overlap; yields
    their values. Those that started are exited (in reverse) even if another failed to start."""
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(len(managers)) as pool:
        futures = [pool.submit(m.__enter__) for m in managers]
        values, error = [], None
        for manager, future in zip(managers, futures, strict=True):
            try:
                values.append(future.result())
                stack.push(manager.__exit__)
            except BaseException as exc:
                error = error or exc
        if error is not None:
            raise error
        yield tuple(values)


def pipeline_every_second(*tasks: str) -> None:
    """Run ``tasks`` (periodic task names) every second and switch every other periodic task off:
    beat then drives only what a test watches, at a pace a test can wait for."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    for task in PeriodicTask.objects.all():
        task.enabled = task.task in tasks
        task.interval = second if task.enabled else task.interval
        task.save()
    enabled = set(PeriodicTask.objects.filter(enabled=True).values_list("task", flat=True))
    assert enabled == set(tasks), (enabled, list(PeriodicTask.objects.values_list("name", "task", "enabled")))


def pool_children(pid: int) -> list[int]:
    """The pool processes of a prefork worker (its child processes)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(p) for p in (task / "children").read_text().split()]
    return out


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (a warm shutdown), SIGKILL if it does not end within 30 s."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def celery(kind: str, *, env: dict[str, str], log: Path, args: tuple[str, ...] = ()) -> Iterator[
        subprocess.Popen[bytes]]:
    """``celery -A netaware_site worker|beat`` with ``env`` over this process's environment (which holds
    the session's Redis and Celery queue); a worker is prefork with one pool process."""
    if kind == "worker":
        argv = ["worker", "--pool", "prefork", "--concurrency", "1", "--without-gossip", "--without-mingle",
                "--without-heartbeat", "-n", f"fault-{os.getpid()}-{time.monotonic_ns()}@%h"]
    else:
        argv = ["beat", "--pidfile=", "--max-interval", "1", "--schedule", str(log.with_suffix(".beat"))]
    proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "netaware_site", *argv, "--loglevel", "INFO",
                             *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        stop(proc)


def stop_process(process: subprocess.Popen, *, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within ``timeout``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until_ready(process: subprocess.Popen, *, url: str, log: Path, name: str, timeout: float) -> None:
    """Poll ``url`` until it answers 2xx; raise with the log's tail if the process exits first."""

    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(requests.RequestException):
            return requests.get(url, timeout=1).ok
        return False

    wait_for(answers, timeout, f"{name} to become ready")
