"""Heartbeats other pods can see: a key in Redis that expires unless its process renews it.

The file heartbeats (netaware_core/heartbeat.py) tell the kubelet that a process is stuck; these
tell the *web* that a process elsewhere is gone (the Celery worker killed, its pod evicted), so its
``/readyz`` can say what is degraded. A worker beats from a thread of its main process every
``NETAWARE_WORKER_HEARTBEAT_SECONDS``; the key lives three periods.

A beat may carry a *check* of a dependency only that process uses (the worker running the Kubernetes
tasks asks the API server's ``/version``): its error, or none, lives as long as the beat, so the web
reports a hung Kubernetes API without credentials of its own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable

import redis

log = logging.getLogger(__name__)
PREFIX = "netaware:heartbeat:"
PERIOD_ENV = "NETAWARE_WORKER_HEARTBEAT_SECONDS"


def period() -> float:
    return float(os.environ.get(PERIOD_ENV) or 10.0)


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)


def beat(*, url: str, kind: str, name: str, ttl: float) -> None:
    """Record that ``kind`` process ``name`` is alive for the next ``ttl`` seconds."""
    _client(url).set(f"{PREFIX}{kind}:{name}", str(time.time()), px=max(1, int(ttl * 1000)))


def forget(*, url: str, kind: str, name: str) -> None:
    """A clean stop: the process is gone now, not in ``ttl`` seconds."""
    with contextlib.suppress(redis.RedisError):
        _client(url).delete(f"{PREFIX}{kind}:{name}")


def alive(*, url: str, kind: str) -> list[str]:
    """The names of the ``kind`` processes whose heartbeat has not expired."""
    client = _client(url)
    return sorted(key.decode().removeprefix(f"{PREFIX}{kind}:")
                  for key in client.scan_iter(match=f"{PREFIX}{kind}:*", count=100))


def record_check(*, url: str, kind: str, name: str, check: str, error: str | None, ttl: float) -> None:
    """Record the outcome of ``name``'s check ``check`` (``error`` None: it passed) for ``ttl`` seconds."""
    _client(url).set(f"{PREFIX}check:{check}:{kind}:{name}", json.dumps({"error": error or "", "at": time.time()}),
                     px=max(1, int(ttl * 1000)))


def failed_checks(*, url: str, check: str) -> dict[str, tuple[str, float]]:
    """``kind:name`` -> (error, when) for every live process whose last ``check`` failed."""
    client = _client(url)
    prefix = f"{PREFIX}check:{check}:"
    out: dict[str, tuple[str, float]] = {}
    for key in client.scan_iter(match=f"{prefix}*", count=100):
        raw = client.get(key)
        try:
            record = json.loads(raw) if raw else {}
        except ValueError:
            continue
        if record.get("error"):
            out[key.decode().removeprefix(prefix)] = (str(record["error"]), float(record.get("at") or 0.0))
    return out


def start(*, url: str, kind: str, name: str,
          checks: dict[str, Callable[[], str | None]] | None = None) -> threading.Event:
    """Beat every :func:`period` seconds from a daemon thread until the returned event is set; each
    of ``checks`` (name -> a call returning an error or None; it must time out well within a period)
    runs before the beat and its outcome is recorded beside it."""
    stop = threading.Event()
    every = period()

    def loop() -> None:
        while not stop.is_set():
            try:
                for check, run in (checks or {}).items():
                    try:
                        error = run()
                    except Exception as exc:  # a check that breaks is a failed check, never a dead beat
                        error = f"{exc.__class__.__name__}: {exc}"
                    record_check(url=url, kind=kind, name=name, check=check, error=error, ttl=3 * every)
                beat(url=url, kind=kind, name=name, ttl=3 * every)
            except redis.RedisError as exc:  # Redis down: the web's /readyz reports Redis itself
                log.warning("heartbeat of %s %s not recorded: %s", kind, name, exc)
            stop.wait(every)

    threading.Thread(target=loop, name=f"heartbeat-{kind}", daemon=True).start()
    return stop
