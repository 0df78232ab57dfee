"""The extender's decision log: every filter/prioritize/bind/preempt answer and why, off the hot path.

On the request path a decision is a dict appended to a list (O(1)). A background thread of the
extender process encodes pending records (orjson header + zlib'd breakdown) and ships them in
batches: RPUSH to a Redis list, from which the ``scheduler.drain_decisions`` Celery task moves them
into Postgres. Without Redis the thread writes to Postgres itself; without both it keeps a bounded
buffer (the newest ``DECISION_BUFFER_MAX``) and counts what it drops. Every record carries a UUID
and the Postgres insert ignores UUIDs it already has, so a drain redone after a worker died
mid-batch never stores a decision twice.
"""

from __future__ import annotations

import contextlib
import logging
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

import orjson
import redis
from django.db import DatabaseError, InterfaceError, connection
from django.utils import timezone

from netaware_core import deadletter

from .models import Decision

log = logging.getLogger(__name__)

DECISION_QUEUE_KEY = "netaware:scheduler:decisions"
DRAIN_LOCK_KEY = "netaware:scheduler:decisions:drain"
DEAD_LETTER_QUEUE = "decisions"
_HEADER = struct.Struct("!I")
_FIELDS = ("verb", "pod_namespace", "pod_name", "pod_uid", "profile", "workload", "node", "candidates",
           "result", "error", "duration_ms")
_JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


# Column widths of the decision log: a name longer than Kubernetes allows (the request is refused or
# answered anyway) is cut to fit, so its record never fails the drain (issue 21; fuzzing found it).
_COLUMN_LIMITS: dict[str, int] = {f.name: limit for f in Decision._meta.fields
                                  if (limit := getattr(f, "max_length", None)) and f.name != "verb"}


def new_record(*, verb: str, pod_namespace: str = "", pod_name: str = "", pod_uid: str = "", profile: str = "",
               workload: str = "", node: str = "", candidates: int = 0, result: Mapping[str, Any] | None = None,
               breakdown: Mapping[str, Any] | None = None, error: str = "", duration_ms: float = 0.0) -> dict[str, Any]:
    """One decision as ``DecisionLog.add`` takes it, its names cut to the columns' widths."""
    record: dict[str, Any] = {
        "ts": timezone.now().isoformat(), "verb": str(verb), "pod_namespace": pod_namespace, "pod_name": pod_name,
        "pod_uid": pod_uid, "profile": profile, "workload": workload, "node": node, "candidates": candidates,
        "result": dict(result or {}), "breakdown": breakdown, "error": error, "duration_ms": duration_ms,
    }
    for name, limit in _COLUMN_LIMITS.items():
        value = record.get(name)
        if isinstance(value, str) and len(value) > limit:
            record[name] = value[: limit - 1] + "…"
    return record


def encode(record: Mapping[str, Any]) -> bytes:
    """Header JSON (everything but the breakdown) + the breakdown as zlib'd JSON (level 1: far
    cheaper than jsonb parsing or TOAST's pglz, and zlib runs without the GIL)."""
    header = orjson.dumps({k: v for k, v in record.items() if k != "breakdown"}, option=_JSON_OPTIONS)
    breakdown = record.get("breakdown")
    body = zlib.compress(orjson.dumps(breakdown, option=_JSON_OPTIONS), 1) if breakdown else b""
    return _HEADER.pack(len(header)) + header + body


def decode(blob: bytes) -> Decision:
    (size,) = _HEADER.unpack_from(blob)
    header = orjson.loads(blob[_HEADER.size : _HEADER.size + size])
    return Decision(
        ts=datetime.fromisoformat(header["ts"]),
        event_id=header.get("id") or None,
        breakdown=blob[_HEADER.size + size :],
        **{k: header[k] for k in _FIELDS if k in header},
    )


def write(blobs: Sequence[bytes]) -> None:
    """Insert decisions into Postgres; ones already stored (same event id) are skipped."""
    Decision.objects.bulk_create([decode(b) for b in blobs], ignore_conflicts=True)


def prune(*, keep: int) -> int:
    """Delete all but the newest ``keep`` decisions (one indexed DELETE)."""
    cutoff = Decision.objects.order_by("-id").values_list("id", flat=True)[keep : keep + 1].first()
    if cutoff is None:
        return 0
    deleted, _ = Decision.objects.filter(id__lte=cutoff).delete()
    return deleted


def close_broken_connection() -> None:
    with contextlib.suppress(Exception):
        connection.close_if_unusable_or_obsolete()


class DecisionLog:
    """Records of answered requests wait in ``pending`` (raw dicts) until the shipper thread encodes
    and ships them; ``outbox`` holds encoded records that could not be shipped yet."""

    POLL_SECONDS = 0.05

    def __init__(self, *, redis_client: Callable[[], redis.Redis], queue_max: int = 20000,
                 buffer_max: int = 5000, retention: int = 10000) -> None:
        self.redis_client = redis_client
        self.queue_max = queue_max
        self.buffer_max = buffer_max
        self.retention = retention
        self.lock = threading.Lock()
        self.pending: list[dict[str, Any]] = []
        self.outbox: list[bytes] = []
        self.recorded = 0  # records added by requests (recorded - logged - dropped are still here)
        self.logged = 0  # records shipped (Redis or Postgres)
        self.dropped = 0  # records lost to the buffer bound (Redis and Postgres away for long)
        self.failing = ""  # why the last shipment failed ("" = fine)
        self._since_prune = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def add(self, record: dict[str, Any]) -> None:
        if "id" not in record:
            record["id"] = str(uuid.uuid4())
        if "ts" not in record:  # (setdefault would read the clock for every record)
            record["ts"] = timezone.now().isoformat()
        with self.lock:
            self.pending.append(record)
            self.recorded += 1

    # --- shipping (background thread; ``stop`` ships the rest at shutdown) -------------------

    def ship(self) -> int:
        """Encode what is pending and send it; returns how many records left the process."""
        with self.lock:
            batch, self.pending = self.pending, []
        blobs = [encode(r) for r in batch]
        with self.lock:
            blobs, self.outbox = self.outbox + blobs, []
        if not blobs:
            return 0
        try:
            pipe = self.redis_client().pipeline(transaction=False)
            pipe.rpush(DECISION_QUEUE_KEY, *blobs)
            pipe.ltrim(DECISION_QUEUE_KEY, -self.queue_max, -1)
            pipe.execute()
            self._shipped(len(blobs))
            return len(blobs)
        except redis.RedisError as exc:
            self.failing = f"redis: {type(exc).__name__}: {exc}"
        try:
            deadletter.store_batch(queue=DEAD_LETTER_QUEUE, records=blobs, store=write)
        except (DatabaseError, InterfaceError) as exc:
            self.failing = f"{self.failing + '; ' if self.failing else ''}database: {type(exc).__name__}: {exc}"
            close_broken_connection()
            self._keep(blobs)
            return 0
        self._shipped(len(blobs))
        self._maybe_prune(len(blobs))
        return len(blobs)

    def _shipped(self, count: int) -> None:
        self.logged += count
        self.failing = ""

    def _keep(self, blobs: list[bytes]) -> None:
        with self.lock:
            self.outbox = blobs + self.outbox
            if len(self.outbox) > self.buffer_max:
                drop = len(self.outbox) - self.buffer_max
                del self.outbox[:drop]
                self.dropped += drop

    def _maybe_prune(self, count: int) -> None:
        self._since_prune += count
        if self._since_prune >= max(1, self.retention // 20):
            self._since_prune = 0
            try:
                prune(keep=self.retention)
            except (DatabaseError, InterfaceError) as exc:
                log.warning("decision log prune failed: %s", exc)
                close_broken_connection()

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="decision-log", daemon=True)
        self._thread.start()

    def stop(self, *, ship: bool = True) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if ship:
            self.ship()

    def _run(self) -> None:
        retry_at = 0.0
        while not self._stop.is_set():
            self._wake.wait(self.POLL_SECONDS)
            self._wake.clear()
            if time.monotonic() < retry_at or not (self.pending or self.outbox):
                continue
            try:
                self.ship()
            except Exception:
                log.exception("decision log: shipping failed")
            retry_at = time.monotonic() + 1.0 if self.failing else 0.0
        connection.close()  # the Postgres fallback's connection belongs to this thread


# Trim the batch just stored only if it is still the head of the queue (its first and last records,
# each unique by event id, where they were read): a second drainer, or the extender's overflow trim,
# may have moved the head meanwhile, and trimming blindly would drop records nobody stored.
_TRIM_IF_HEAD = """
local n = tonumber(ARGV[1])
if redis.call('LINDEX', KEYS[1], 0) == ARGV[2] and redis.call('LINDEX', KEYS[1], n - 1) == ARGV[3] then
  redis.call('LTRIM', KEYS[1], n, -1)
  return 1
end
return 0
"""


def drain(*, redis_client: redis.Redis, limit: int = 5000, retention: int = 10000,
          lock_seconds: float = 30.0) -> int:
    """Move queued decisions from Redis into Postgres: read a batch, store it, then trim it from the
    queue. A worker that dies between the two leaves the batch queued; the next drain stores it
    again and the event ids make that a no-op. The trim checks that the batch is still the queue's
    head, so the Redis lock (one drainer at a time) only saves duplicate work: a lock left by a killed
    worker expires after ``lock_seconds`` without risking a record."""
    moved = 0
    lock = redis_client.lock(DRAIN_LOCK_KEY, timeout=lock_seconds, blocking_timeout=0.1)
    if not lock.acquire():
        return 0
    trim = redis_client.register_script(_TRIM_IF_HEAD)
    try:
        while True:
            blobs = redis_client.lrange(DECISION_QUEUE_KEY, 0, limit - 1)
            if not blobs:
                break
            # A record Postgres refuses is set aside (dead letter), never retried with the rest.
            deadletter.store_batch(queue=DEAD_LETTER_QUEUE, records=cast("list[bytes]", blobs),  # no decode_responses
                                   store=write, redis_client=redis_client)
            if not trim(keys=[DECISION_QUEUE_KEY], args=[len(blobs), blobs[0], blobs[-1]]):
                break  # the head moved: the next drain re-reads (already stored records are skipped)
            moved += len(blobs)
            if len(blobs) < limit:
                break
            with contextlib.suppress(redis.RedisError):
                lock.extend(lock_seconds, replace_ttl=True)
    finally:
        with contextlib.suppress(redis.RedisError):
            lock.release()
    if moved:
        prune(keep=retention)
    return moved
