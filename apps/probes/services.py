"""Writes of the metrics pipeline: pull aligned windows from Prometheus, store them, roll them up.

See docs/pipeline.md. The invariants:

* a window ``(end - W, end]`` is stored in one transaction together with the watermarks it advances,
  so a crash or an unreachable Prometheus never leaves half a window behind;
* storing is an upsert keyed by (ts, series, source, target) that only touches rows whose value
  differs, so re-pulling a window, overlapping or out-of-order windows change nothing;
* NaN and ±Inf (``histogram_quantile`` with no observations, 0/0) mean "no data": the point is
  skipped, never stored as 0.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg.errors
from django.conf import settings
from django.db import IntegrityError, ProgrammingError, connection, transaction
from django.utils import timezone

from .models import NodeRollup, NodeSample, PairRollup, PairSample, PullWatermark, WindowDigest
from .prometheus import PrometheusClient, Window, align_down, windows_between
from .queries import NodeQuery, PairQuery, QuerySet, configured_queries

logger = logging.getLogger(__name__)

PAIR_TABLE = PairSample._meta.db_table
NODE_TABLE = NodeSample._meta.db_table
WATERMARK_TABLE = PullWatermark._meta.db_table
DIGEST_TABLE = WindowDigest._meta.db_table
# Windows fetched per Prometheus request during catch-up; bounds memory for large clusters.
FETCH_CHUNK_WINDOWS = 10
_PULL_LOCK_KEY = 0x6E61_7077  # pg advisory lock: one pull at a time ("napw")
_RETENTION_LOCK_KEY = 0x6E61_7274

# (sources, targets, values) of one pair series at one window end; (nodes, values) for node series.
PairPoints = tuple[Sequence[str], Sequence[str], np.ndarray]
NodePoints = tuple[Sequence[str], np.ndarray]


@dataclass
class StoreResult:
    rows_written: int = 0  # inserted or changed; 0 when a window is stored again unchanged
    points_skipped: int = 0  # NaN/Inf/negative values dropped


@dataclass
class PullResult:
    windows: int = 0
    rows_written: int = 0
    points_skipped: int = 0
    nodes_seen: int = 0
    last_end: datetime | None = None


# --- storing ----------------------------------------------------------------------------------------

_ARRAY_SPECIAL = re.compile(r'[{}",\\\s]|(?:^|\x00)(?:null)?(?:\x00|$)', re.IGNORECASE)


def _quote_element(item: str) -> str:
    if not item or item.upper() == "NULL" or re.search(r'[{}",\\\s]', item):
        return '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return item


def _pg_text_array(items: Sequence[str]) -> str:
    """A Postgres text[] literal: one string adapts ~3x faster than a 40k-item list.

    Node names are DNS labels, so the common case is one join plus one regex scan; only a
    list containing an empty, NULL-like or special-character item is quoted element by element.
    """
    joined = "\x00".join(items)
    if not items or _ARRAY_SPECIAL.search(joined):
        return "{" + ",".join(_quote_element(item) for item in items) + "}"
    return "{" + joined.replace("\x00", ",") + "}"


def _pg_float_array(values: np.ndarray) -> str:
    return "{" + ",".join(map(repr, values.tolist())) + "}"


def _clean(values: np.ndarray, *, unit_interval: bool) -> np.ndarray:
    """Mask of points to keep, after clipping ratios into [0, 1] in place."""
    keep = np.isfinite(values)
    if unit_interval:
        np.clip(values, 0.0, 1.0, out=values, where=keep)
    else:
        keep &= values >= 0
    return keep


_PAIR_BATCH = f"""
WITH batch AS (
    SELECT s, d, v FROM unnest(%(sources)s::text[], %(targets)s::text[], %(values)s::float8[]) AS u(s, d, v)
), digest AS (
    INSERT INTO {DIGEST_TABLE} AS w (series, ts, pair_count, digest)
    SELECT %(series)s, %(ts)s, count(*),
           (sum(hashtextextended(s || chr(31) || d, 0)) %% 9223372036854775807)::bigint FROM batch
    ON CONFLICT (series, ts) DO UPDATE SET
        pair_count = GREATEST(w.pair_count, EXCLUDED.pair_count),
        digest = CASE WHEN w.digest = EXCLUDED.digest AND w.pair_count = EXCLUDED.pair_count
                      THEN w.digest END
    WHERE w.digest IS DISTINCT FROM EXCLUDED.digest OR w.pair_count <> EXCLUDED.pair_count
)
"""
# A window seen for the first time: a plain INSERT skips the speculative-insertion WAL record and
# conflict check per row that ON CONFLICT costs (0.23 s instead of 0.34 s per 40k rows).
_PAIR_INSERT = _PAIR_BATCH + f"""
INSERT INTO {PAIR_TABLE} (ts, series, source, target, value) SELECT %(ts)s, %(series)s, s, d, v FROM batch
"""
_PAIR_UPSERT = _PAIR_BATCH + f"""
INSERT INTO {PAIR_TABLE} AS t (ts, series, source, target, value) SELECT %(ts)s, %(series)s, s, d, v FROM batch
ON CONFLICT (ts, series, source, target) DO UPDATE SET value = EXCLUDED.value
WHERE t.value IS DISTINCT FROM EXCLUDED.value
"""
_WINDOW_EXISTS = f"SELECT EXISTS (SELECT 1 FROM {PAIR_TABLE} WHERE ts = %s AND series = %s)"

_NODE_UPSERT = f"""
INSERT INTO {NODE_TABLE} AS t (ts, series, node, value)
SELECT %s, %s, n, v FROM unnest(%s::text[], %s::float8[]) AS u(n, v)
ON CONFLICT (ts, series, node) DO UPDATE SET value = EXCLUDED.value
WHERE t.value IS DISTINCT FROM EXCLUDED.value
"""


class _ArrayTexts:
    """Text literals of name lists, reused when consecutive series list the same pairs in the same order."""

    def __init__(self) -> None:
        self._last: list[tuple[Sequence[str], str]] = []

    def __call__(self, items: Sequence[str]) -> str:
        for seen, text in self._last:
            if seen is items or (len(seen) == len(items) and seen == items):
                return text
        text = _pg_text_array(items)
        self._last = [*self._last[-1:], (items, text)]
        return text


def store_pair_points(*, ts: datetime, series: str, sources: Sequence[str], targets: Sequence[str],
                      values: np.ndarray, unit_interval: bool = False,
                      texts: _ArrayTexts | None = None) -> StoreResult:
    """Upsert one pair series at one window end (inside the caller's transaction)."""
    texts = texts or _ArrayTexts()
    values = np.array(values, dtype=np.float64)
    keep = _clean(values, unit_interval=unit_interval)
    result = StoreResult(points_skipped=int(keep.size - keep.sum()))
    if not keep.any():
        return result
    if not keep.all():
        idx = np.flatnonzero(keep)
        sources = [sources[i] for i in idx]
        targets = [targets[i] for i in idx]
        values = values[keep]
    params = {"ts": ts, "series": series, "sources": texts(sources), "targets": texts(targets),
              "values": _pg_float_array(values)}
    with connection.cursor() as cursor:
        cursor.execute(_WINDOW_EXISTS, [ts, series])
        sql = _PAIR_UPSERT if cursor.fetchone()[0] else _PAIR_INSERT
    for _attempt in range(3):
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, params)
                result.rows_written = max(cursor.rowcount, 0)
            return result
        except IntegrityError as exc:
            # A concurrent writer stored part of this window first, or the batch repeats a pair.
            if not isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise
            sql = _PAIR_UPSERT
        except ProgrammingError as exc:
            if not isinstance(exc.__cause__, psycopg.errors.CardinalityViolation):
                raise
            # One upsert may not touch a row twice; a custom query can yield a pair twice (e.g. two
            # smokeping targets resolving to one node). Rare, so handled here rather than checked
            # for on every window: the last one wins, deterministically.
            last = dict(zip(zip(sources, targets, strict=True), range(len(sources)), strict=False))
            idx = np.fromiter(sorted(last.values()), dtype=np.int64, count=len(last))
            result.points_skipped += len(sources) - len(last)
            params = {"ts": ts, "series": series, "sources": _pg_text_array([sources[i] for i in idx]),
                      "targets": _pg_text_array([targets[i] for i in idx]),
                      "values": _pg_float_array(values[idx])}
    raise RuntimeError(f"could not store {series} at {ts}")  # unreachable: the third attempt is a clean upsert


def store_node_points(*, ts: datetime, series: str, nodes: Sequence[str], values: np.ndarray,
                      unit_interval: bool = False) -> StoreResult:
    values = np.array(values, dtype=np.float64)
    keep = _clean(values, unit_interval=unit_interval)
    result = StoreResult(points_skipped=int(keep.size - keep.sum()))
    if not keep.any():
        return result
    last = {nodes[i]: i for i in np.flatnonzero(keep)}
    idx = np.fromiter(sorted(last.values()), dtype=np.int64, count=len(last))
    result.points_skipped += int(keep.sum()) - len(last)
    with connection.cursor() as cursor:
        cursor.execute(_NODE_UPSERT, [ts, series, _pg_text_array([nodes[i] for i in idx]),
                                      _pg_float_array(values[idx])])
        result.rows_written = max(cursor.rowcount, 0)
    return result


_UNIT_SERIES = {"loss_ratio", "cpu_utilization", "memory_utilization"}


def store_window(*, ts: datetime, pairs: Mapping[str, PairPoints] | None = None,
                 nodes: Mapping[str, NodePoints] | None = None,
                 watermark_keys: Iterable[str] = ()) -> StoreResult:
    """Store everything pulled for one window end and advance its watermarks, atomically.

    Watermarks only move forward (GREATEST), so re-pulling an old window never rewinds them.
    """
    total = StoreResult()
    texts = _ArrayTexts()
    with transaction.atomic():
        with connection.cursor() as cursor:
            # A window lost to a crash right after commit is lost together with its watermark and is
            # simply pulled again: no fsync wait needed (never corruption, see docs/pipeline.md).
            cursor.execute("SET LOCAL synchronous_commit = off")
        for series, (sources, targets, values) in (pairs or {}).items():
            part = store_pair_points(ts=ts, series=series, sources=sources, targets=targets, values=values,
                                     unit_interval=series in _UNIT_SERIES, texts=texts)
            total.rows_written += part.rows_written
            total.points_skipped += part.points_skipped
        for series, (names, values) in (nodes or {}).items():
            part = store_node_points(ts=ts, series=series, nodes=names, values=values,
                                     unit_interval=series in _UNIT_SERIES)
            total.rows_written += part.rows_written
            total.points_skipped += part.points_skipped
        keys = sorted(set(watermark_keys))
        if keys:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {WATERMARK_TABLE} (query, last_end, updated_at) "
                    f"SELECT k, %s, now() FROM unnest(%s::text[]) AS k "
                    f"ON CONFLICT (query) DO UPDATE SET last_end = GREATEST({WATERMARK_TABLE}.last_end, "
                    f"EXCLUDED.last_end), updated_at = now()",
                    [ts, keys],
                )
    return total


# --- pulling ----------------------------------------------------------------------------------------

def _group_pair_matrix(matrix: list[dict], query: PairQuery) -> dict[int, PairPoints]:
    per_ts: dict[int, tuple[list[str], list[str], list[float]]] = {}
    missing = 0
    for item in matrix:
        labels = item.get("metric", {})
        source = labels.get(query.source_label)
        target = labels.get(query.target_label)
        if not source or not target:
            missing += 1
            continue
        for stamp, raw in item.get("values", ()):
            bucket = per_ts.setdefault(round(float(stamp)), ([], [], []))
            bucket[0].append(source)
            bucket[1].append(target)
            bucket[2].append(float(raw))  # "NaN", "+Inf" parse; _clean drops them
    if missing:
        logger.warning("%s: %d result series lack label %r or %r; skipped", query.series, missing,
                       query.source_label, query.target_label)
    return {ts: (s, t, np.asarray(v, dtype=np.float64)) for ts, (s, t, v) in per_ts.items()}


def _group_node_matrix(matrix: list[dict], query: NodeQuery) -> dict[int, NodePoints]:
    per_ts: dict[int, tuple[list[str], list[float]]] = {}
    for item in matrix:
        node = item.get("metric", {}).get(query.node_label)
        if not node:
            logger.warning("%s: a result series lacks label %r; skipped", query.series, query.node_label)
            continue
        for stamp, raw in item.get("values", ()):
            bucket = per_ts.setdefault(round(float(stamp)), ([], []))
            bucket[0].append(node)
            bucket[1].append(float(raw))
    return {ts: (n, np.asarray(v, dtype=np.float64)) for ts, (n, v) in per_ts.items()}


def topology_hook(name: str, module: str = "apps.topology.services") -> Callable[..., Any] | None:
    """A function the topology app may provide (it is built in parallel); None when absent."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        logger.info("%s not importable (%s); skipping %s", module, exc, name)
        return None
    func = getattr(mod, name, None)
    if func is None:
        logger.info("%s.%s does not exist; skipping", module, name)
    return func


def raw_cutoff(now: datetime) -> datetime:
    """Raw samples stamped before this hour boundary belong to the roll-ups, not the raw table."""
    hours = settings.NETAWARE["RAW_RETENTION_HOURS"]
    return (now - timedelta(hours=hours)).replace(minute=0, second=0, microsecond=0)


def pending_windows(*, queries: QuerySet, now: datetime) -> dict[str, list[Window]]:
    """Per watermark key, the aligned windows still to pull, oldest first, bounded per run."""
    conf = settings.NETAWARE
    width = int(conf["PULL_WINDOW_SECONDS"])
    newest_end = align_down(now.timestamp() - width, width)
    floor = max(align_down(raw_cutoff(now).timestamp(), width), newest_end - width * int(conf["PULL_INITIAL_WINDOWS"]))
    marks = {m.query: int(m.last_end.timestamp()) for m in PullWatermark.objects.all()}
    pending: dict[str, list[Window]] = {}
    for query in (*queries.pairs, *queries.nodes):
        mark = marks.get(query.watermark_key)
        limit = int(conf["PULL_MAX_WINDOWS_PER_RUN"])
        if mark is None:  # first run: the newest windows only
            windows = list(windows_between(floor, newest_end, width))[-limit:]
        else:  # catch up in order from the watermark, so everything before it stays stored
            after = max(mark, align_down(raw_cutoff(now).timestamp(), width))
            windows = list(windows_between(after, newest_end, width))[:limit]
        pending[query.watermark_key] = windows
    return pending


def pull_node_info(*, client: PrometheusClient, queries: QuerySet, at: int) -> list[tuple[str, str, str]]:
    if queries.node_info is None:
        return []
    info = queries.node_info
    nodes: dict[str, tuple[str, str, str]] = {}
    for item in client.instant(info.query, at=at):
        labels = item.get("metric", {})
        name = labels.get(info.node_label)
        if name:
            nodes[name] = (name, labels.get(info.zone_label, ""), labels.get(info.region_label, ""))
    return sorted(nodes.values())


def _pull_ends(*, client: PrometheusClient, queries: QuerySet, pending: Mapping[str, Sequence[int]], step: int,
               advance_watermarks: bool, result: PullResult) -> None:
    """Fetch ``pending`` window ends per watermark key in chunks; store one transaction per window end."""
    by_key = {q.watermark_key: q for q in (*queries.pairs, *queries.nodes)}
    all_ends = sorted({end for ends in pending.values() for end in ends})
    for i in range(0, len(all_ends), FETCH_CHUNK_WINDOWS):
        chunk = all_ends[i: i + FETCH_CHUNK_WINDOWS]
        lo, hi = chunk[0], chunk[-1]
        pair_data: dict[int, dict[str, PairPoints]] = {}
        node_data: dict[int, dict[str, NodePoints]] = {}
        keys_for: dict[int, set[str]] = {end: set() for end in chunk}
        for key, key_ends in pending.items():
            ends = [end for end in key_ends if lo <= end <= hi]
            if not ends:
                continue
            query = by_key[key]
            matrix = client.range_points(query.query, first_end=ends[0], last_end=ends[-1], step=step)
            for end in ends:
                keys_for[end].add(key)
            if isinstance(query, PairQuery):
                for ts, points in _group_pair_matrix(matrix, query).items():
                    if key in keys_for.get(ts, ()):
                        pair_data.setdefault(ts, {})[query.series] = points
            else:
                for ts, npoints in _group_node_matrix(matrix, query).items():
                    if key in keys_for.get(ts, ()):
                        node_data.setdefault(ts, {})[query.series] = npoints
        # Everything of the chunk is fetched before the first write: an outage mid-chunk stores nothing.
        for end in chunk:
            stored = store_window(ts=datetime.fromtimestamp(end, tz=UTC), pairs=pair_data.get(end),
                                  nodes=node_data.get(end),
                                  watermark_keys=keys_for[end] if advance_watermarks else ())
            result.windows += 1
            result.rows_written += stored.rows_written
            result.points_skipped += stored.points_skipped
            result.last_end = datetime.fromtimestamp(end, tz=UTC)


def _hand_nodes_to_topology(*, client: PrometheusClient, queries: QuerySet, result: PullResult) -> None:
    if result.last_end is None:
        return
    nodes = pull_node_info(client=client, queries=queries, at=int(result.last_end.timestamp()))
    result.nodes_seen = len(nodes)
    upsert = topology_hook("upsert_nodes_from_metrics") if nodes else None
    if upsert is not None:
        try:
            upsert(nodes=nodes)
        except Exception:  # the windows are stored; a topology-side bug must not fail the pull
            logger.exception("upsert_nodes_from_metrics failed for %d nodes", len(nodes))


def pull_metrics(*, now: datetime | None = None, prometheus_url: str | None = None,
                 timeout: float | None = None, queries: QuerySet | None = None) -> PullResult:
    """Pull every pending aligned window from Prometheus into Postgres.

    Raises PrometheusUnavailable when Prometheus is down or slow (the task retries) and
    PrometheusQueryError when it rejects a query. Windows are fetched in chunks (one range query per
    query and chunk) and stored one transaction per window, so an outage part-way keeps only
    complete windows; the next run resumes from the watermarks.
    """
    now = now or timezone.now()
    queries = queries or configured_queries()
    width = int(settings.NETAWARE["PULL_WINDOW_SECONDS"])
    url = prometheus_url or settings.PROMETHEUS_URL
    timeout = float(timeout if timeout is not None else settings.PROMETHEUS_TIMEOUT_SECONDS)
    result = PullResult()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_PULL_LOCK_KEY])
        if not cursor.fetchone()[0]:
            logger.info("another pull_metrics run holds the lock; skipping")
            return result
    try:
        pending = {key: [w.end for w in windows]
                   for key, windows in pending_windows(queries=queries, now=now).items()}
        with PrometheusClient(url, timeout=timeout) as client:
            _pull_ends(client=client, queries=queries, pending=pending, step=width, advance_watermarks=True,
                       result=result)
            _hand_nodes_to_topology(client=client, queries=queries, result=result)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_PULL_LOCK_KEY])
    if result.points_skipped:
        logger.info("pull: skipped %d NaN/Inf/negative points (no data)", result.points_skipped)
    return result


def pull_window(*, start: datetime, end: datetime, prometheus_url: str | None = None,
                timeout: float | None = None, queries: QuerySet | None = None) -> PullResult:
    """Pull one explicit window ``(start, end]`` (stamped ``end``, whole seconds) without touching watermarks.

    For backfills and tests that need a window at a chosen time; idempotent like the periodic pull.
    """
    end_s, start_s = round(end.timestamp()), round(start.timestamp())
    if end_s <= start_s:
        raise ValueError("end: must be after start")
    queries = queries or configured_queries()
    url = prometheus_url or settings.PROMETHEUS_URL
    timeout = float(timeout if timeout is not None else settings.PROMETHEUS_TIMEOUT_SECONDS)
    result = PullResult()
    pending = {q.watermark_key: [end_s] for q in (*queries.pairs, *queries.nodes)}
    with PrometheusClient(url, timeout=timeout) as client:
        _pull_ends(client=client, queries=queries, pending=pending, step=end_s - start_s,
                   advance_watermarks=False, result=result)
        _hand_nodes_to_topology(client=client, queries=queries, result=result)
    return result


# --- retention --------------------------------------------------------------------------------------

@dataclass
class RetentionResult:
    pair_rollups: int = 0
    node_rollups: int = 0
    raw_deleted: int = 0
    rollups_deleted: int = 0


def apply_retention(*, now: datetime | None = None) -> RetentionResult:
    """Roll raw samples older than RAW_RETENTION_HOURS into hourly roll-ups and delete them.

    Merging (count-weighted mean, min/max) into an existing roll-up rather than overwriting it makes
    this correct even when a late sample lands in an hour already rolled up; since the raw rows are
    deleted in the same transaction, each raw sample is counted exactly once, and a second run finds
    nothing to do. Roll-ups older than ROLLUP_RETENTION_DAYS are dropped.
    """
    now = now or timezone.now()
    cutoff = raw_cutoff(now)
    rollup_cutoff = now - timedelta(days=settings.NETAWARE["ROLLUP_RETENTION_DAYS"])
    result = RetentionResult()
    merge = (
        "count = r.count + EXCLUDED.count, minimum = LEAST(r.minimum, EXCLUDED.minimum), "
        "maximum = GREATEST(r.maximum, EXCLUDED.maximum), "
        "mean = (r.mean * r.count + EXCLUDED.mean * EXCLUDED.count) / (r.count + EXCLUDED.count)"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_RETENTION_LOCK_KEY])
        cursor.execute(
            f"INSERT INTO {PairRollup._meta.db_table} AS r (bucket, series, source, target, count, minimum, "
            f"maximum, mean) SELECT date_trunc('hour', ts), series, source, target, count(*), min(value), "
            f"max(value), avg(value) FROM {PAIR_TABLE} WHERE ts < %s GROUP BY 1, 2, 3, 4 "
            f"ON CONFLICT (bucket, series, source, target) DO UPDATE SET {merge}",
            [cutoff],
        )
        result.pair_rollups = cursor.rowcount
        cursor.execute(
            f"INSERT INTO {NodeRollup._meta.db_table} AS r (bucket, series, node, count, minimum, maximum, mean) "
            f"SELECT date_trunc('hour', ts), series, node, count(*), min(value), max(value), avg(value) "
            f"FROM {NODE_TABLE} WHERE ts < %s GROUP BY 1, 2, 3 "
            f"ON CONFLICT (bucket, series, node) DO UPDATE SET {merge}",
            [cutoff],
        )
        result.node_rollups = cursor.rowcount
        cursor.execute(f"DELETE FROM {PAIR_TABLE} WHERE ts < %s", [cutoff])
        result.raw_deleted = cursor.rowcount
        cursor.execute(f"DELETE FROM {NODE_TABLE} WHERE ts < %s", [cutoff])
        result.raw_deleted += cursor.rowcount
        cursor.execute(f"DELETE FROM {DIGEST_TABLE} WHERE ts < %s", [cutoff])
        cursor.execute(f"DELETE FROM {PairRollup._meta.db_table} WHERE bucket < %s", [rollup_cutoff])
        result.rollups_deleted = cursor.rowcount
        cursor.execute(f"DELETE FROM {NodeRollup._meta.db_table} WHERE bucket < %s", [rollup_cutoff])
        result.rollups_deleted += cursor.rowcount
    return result


__all__ = [
    "PullResult",
    "RetentionResult",
    "StoreResult",
    "apply_retention",
    "pending_windows",
    "pull_metrics",
    "pull_window",
    "store_node_points",
    "store_pair_points",
    "store_window",
    "topology_hook",
]
