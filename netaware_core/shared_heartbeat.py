"""Heartbeats other pods can see: a key in Redis that expires unless its process renews it.

The file heartbeats (netaware_core/heartbeat.py) tell the kubelet that a process is stuck; these
tell the *web* that a process elsewhere is gone (the Celery worker killed, its pod evicted), so its
``/readyz`` can say what is degraded. A worker beats from a thread of its main process every
``NETAWARE_WORKER_HEARTBEAT_SECONDS``; the key lives three periods.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time

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


def start(*, url: str, kind: str, name: str) -> threading.Event:
    """Beat every :func:`period` seconds from a daemon thread until the returned event is set."""
    stop = threading.Event()
    every = period()

    def loop() -> None:
        while not stop.is_set():
            try:
                beat(url=url, kind=kind, name=name, ttl=3 * every)
            except redis.RedisError as exc:  # Redis down: the web's /readyz reports Redis itself
                log.warning("heartbeat of %s %s not recorded: %s", kind, name, exc)
            stop.wait(every)

    threading.Thread(target=loop, name=f"heartbeat-{kind}", daemon=True).start()
    return stop
