"""Dead letters: records a queue could not store, set aside so they never block the rest (issue 21).

Every queue the pipeline drains (the extender's decisions and placements, the probe samples) stores
its records in batches. A batch the database refuses for one record's content (a NUL in a name, an
untranslatable character, a value out of range) used to fail again on every retry, with everything
queued behind it. Now the batch is retried record by record, each in its own transaction; a record
the database still refuses is *set aside*: logged with the reason, counted in
``netaware_dead_letters_total{queue}`` (``/metrics``) and kept, newest first, in the Redis list
``netaware:deadletter:<queue>`` (at most ``KEEP`` entries) for whoever wants to look at it. Connection
errors (database away) are not a record's fault: they propagate, and the caller retries the batch.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import orjson
import redis
from django.db import InterfaceError, OperationalError, transaction

from . import metrics

log = logging.getLogger(__name__)

KEEP = 1000
T = TypeVar("T")

# The database (or the connection to it) failed, not the record: retry the batch later.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


def key(queue: str) -> str:
    return f"netaware:deadletter:{queue}"


def _printable(record: object) -> str:
    text = record.decode("utf-8", "backslashreplace") if isinstance(record, bytes) else str(record)
    return text.encode("unicode_escape").decode("ascii")[:300]


def set_aside(*, queue: str, record: object, reason: str, redis_client: redis.Redis | None = None) -> None:
    """Log, count and keep one record that cannot be stored; never raises."""
    log.warning("dead letter in queue %s: %s; record: %s", queue, reason, _printable(record))
    metrics.increment("netaware_dead_letters_total", {"queue": queue})
    raw = record if isinstance(record, bytes) else str(record).encode("utf-8", "backslashreplace")
    entry = orjson.dumps({"at": time.time(), "reason": reason[:2000],
                          "record_b64": base64.b64encode(raw[:65536]).decode()})
    try:
        client = redis_client or metrics.redis_client()
        pipe = client.pipeline(transaction=False)
        pipe.lpush(key(queue), entry)
        pipe.ltrim(key(queue), 0, KEEP - 1)
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("dead letter of queue %s not kept in Redis: %s", queue, exc)


def store_each(*, queue: str, records: Iterable[T], store: Callable[[list[T]], object],
               raw: Callable[[T], object] = lambda r: r, redis_client: redis.Redis | None = None) -> tuple[int, int]:
    """Store ``records`` one at a time (``store([record])`` in its own transaction) after their batch
    failed; returns (stored, set aside). A connection error propagates (the caller keeps the batch)."""
    stored = aside = 0
    for record in records:
        try:
            with transaction.atomic():
                store([record])
        except CONNECTION_ERRORS:
            raise
        except Exception as exc:
            set_aside(queue=queue, record=raw(record), reason=f"{type(exc).__name__}: {exc}".strip(),
                      redis_client=redis_client)
            aside += 1
        else:
            stored += 1
    return stored, aside


def store_batch(*, queue: str, records: list[T], store: Callable[[list[T]], object],
                raw: Callable[[T], object] = lambda r: r, redis_client: redis.Redis | None = None) -> int:
    """Store ``records`` in one transaction; if the database refuses the batch for anything but a
    connection error, record by record (:func:`store_each`). Returns how many were set aside."""
    try:
        with transaction.atomic():
            store(records)
        return 0
    except CONNECTION_ERRORS:
        raise
    except Exception as exc:
        log.warning("queue %s: a batch of %d failed (%s: %s); storing record by record", queue, len(records),
                    type(exc).__name__, exc)
    _stored, aside = store_each(queue=queue, records=records, store=store, raw=raw, redis_client=redis_client)
    return aside
