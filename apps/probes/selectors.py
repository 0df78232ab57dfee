"""Reads of the pipeline's time-series tables for the topology builder and the scheduler.

Both selectors go straight to a raw cursor: building 40k model instances per series would cost
far more than the query itself, and the callers want numpy arrays anyway.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.scheduler.scoring.state import NodeUsage

from .choices import NodeSeries, PairSeries
from .models import NodeSample, PairSample, WindowDigest

PairValues = tuple[list[str], list[str], np.ndarray, np.ndarray]

_T = PairSample._meta.db_table
_D = WindowDigest._meta.db_table
# Each query returns one row of four aligned arrays: ~4x faster to fetch than 40k row tuples.
_AGG = (
    "SELECT array_agg(source), array_agg(target), array_agg(value), array_agg(epoch) FROM ({inner}) AS x"
)
_COLS = "source, target, value, EXTRACT(EPOCH FROM ts)::float8 AS epoch"
# Any data, however written: newest row per pair over the whole look-back (cost grows with it).
_LATEST_SQL = (
    f"SELECT DISTINCT ON (source, target) {_COLS} FROM {_T} WHERE series = %s AND ts >= %s "
    f"ORDER BY source, target, ts DESC"
)
_NEWEST_TS_SQL = f"SELECT max(ts) FROM {_T} WHERE series = %s AND ts >= %s"
_DIGESTS_SQL = f"SELECT ts, digest FROM {_D} WHERE series = %s AND ts >= %s AND ts <= %s"
_WINDOW_SQL = f"SELECT {_COLS} FROM {_T} WHERE series = %(series)s AND ts = %(newest)s ORDER BY source, target"
# Pairs of the listed older windows that the newest window lacks, newest row each.
_TAIL_SQL = (
    f"SELECT DISTINCT ON (o.source, o.target) o.source, o.target, o.value, "
    f"EXTRACT(EPOCH FROM o.ts)::float8 AS epoch "
    f"FROM {_T} o WHERE o.series = %(series)s AND o.ts = ANY(%(stamps)s) AND NOT EXISTS ("
    f"SELECT 1 FROM {_T} n WHERE n.series = %(series)s AND n.ts = %(newest)s "
    f"AND n.source = o.source AND n.target = o.target) ORDER BY o.source, o.target, o.ts DESC"
)
_EMPTY: PairValues = ([], [], np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64))


def _fetch(cursor, inner: str, params: object) -> PairValues:  # type: ignore[no-untyped-def]
    cursor.execute(_AGG.format(inner=inner), params)
    sources, targets, values, stamps = cursor.fetchone()
    if not sources:
        return [], [], np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64)
    return sources, targets, np.asarray(values, dtype=np.float64), np.asarray(stamps, dtype=np.float64)


def _sorted(parts: PairValues) -> PairValues:
    """Order by (source, target); the aggregates keep their input order, which is checked, not assumed."""
    sources, targets, values, stamps = parts
    keys = list(zip(sources, targets, strict=True))
    if all(a < b for a, b in pairwise(keys)):
        return parts
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [sources[i] for i in order], [targets[i] for i in order], values[order], stamps[order]


def _latest(cursor, series: str, since: datetime) -> PairValues:  # type: ignore[no-untyped-def]
    """Newest window in full, plus only those older windows whose pair set differs from it.

    Windows stored by the pipeline carry a WindowDigest; an older window with the newest window's
    digest holds no pair the newest lacks, so it is skipped. Without a digest for the newest window
    (rows written some other way) this falls back to one DISTINCT ON over the whole look-back.
    """
    cursor.execute(_NEWEST_TS_SQL, [series, since])
    newest = cursor.fetchone()[0]
    if newest is None:
        return _EMPTY
    cursor.execute(_DIGESTS_SQL, [series, since, newest])
    digests = dict(cursor.fetchall())
    head_digest = digests.get(newest)
    if head_digest is None:
        return _sorted(_fetch(cursor, _LATEST_SQL, [series, since]))
    head = _fetch(cursor, _WINDOW_SQL, {"series": series, "newest": newest})
    stamps = [ts for ts, digest in digests.items() if ts != newest and digest != head_digest]
    if not stamps:
        return _sorted(head)
    tail = _fetch(cursor, _TAIL_SQL, {"series": series, "stamps": stamps, "newest": newest})
    if not tail[0]:
        return _sorted(head)
    return _sorted((
        list(head[0]) + list(tail[0]),
        list(head[1]) + list(tail[1]),
        np.concatenate([head[2], tail[2]]),
        np.concatenate([head[3], tail[3]]),
    ))


def latest_pair_values(*, series: Sequence[str], since: datetime) -> dict[str, PairValues]:
    """Newest sample per directed (source, target) pair at or after ``since``, for each series.

    Returns ``{series: (sources, targets, values, ts_epoch_seconds)}``; ``values`` and the timestamps
    are float64 arrays aligned with the two name lists, sorted by (source, target). Series with no
    sample map to empty lists/arrays. Units are those of the store: seconds, ratio 0..1, bits/s.
    """
    valid = set(PairSeries.values)
    unknown = [name for name in series if name not in valid]
    if unknown:
        raise ValueError(f"series: unknown {unknown!r} (valid: {sorted(valid)})")
    with connection.cursor() as cursor:
        return {name: _latest(cursor, name, since) for name in series}


_USAGE_SQL = f"""
SELECT node, series,
       AVG(value) FILTER (WHERE ts >= %(t15m)s),
       AVG(value) FILTER (WHERE ts >= %(t1h)s),
       AVG(value),
       STDDEV_SAMP(value) FILTER (WHERE ts >= %(t1h)s),
       MAX(ts)
FROM {NodeSample._meta.db_table}
WHERE ts >= %(t1d)s AND ts <= %(now)s
GROUP BY node, series
"""


def _float(value: object) -> float | None:
    if value is None:
        return None
    number = float(value)  # type: ignore[arg-type]
    return None if math.isnan(number) else number


def node_usage(*, now: datetime | None = None) -> dict[str, NodeUsage]:
    """Measured utilisation per node from NodeSample over the load-aware scorers' windows.

    cpu/mem means over the last 15 min, 1 h and 1 d; cpu/mem sample stddev over 1 h (None with fewer
    than two samples); net_used mean/stddev over 1 h in bits/s. ``stale`` is True when the node's
    newest sample of any series is older than STALE_AFTER_SECONDS. ``net_capacity_bps`` is not
    measured here and stays None.
    """
    now = now or timezone.now()
    params = {
        "now": now,
        "t15m": now - timedelta(minutes=15),
        "t1h": now - timedelta(hours=1),
        "t1d": now - timedelta(days=1),
    }
    stale_before = now - timedelta(seconds=settings.NETAWARE["STALE_AFTER_SECONDS"])
    per_node: dict[str, dict[str, tuple]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_USAGE_SQL, params)
        for node, series, avg15, avg1h, avg1d, std1h, newest in cursor.fetchall():
            per_node.setdefault(node, {})[series] = (avg15, avg1h, avg1d, std1h, newest)
    usage: dict[str, NodeUsage] = {}
    for node, by_series in per_node.items():
        cpu = by_series.get(NodeSeries.CPU.value, (None,) * 5)
        mem = by_series.get(NodeSeries.MEMORY.value, (None,) * 5)
        net = by_series.get(NodeSeries.NET_USED.value, (None,) * 5)
        newest = max(row[4] for row in by_series.values())
        usage[node] = NodeUsage(
            cpu_15m=_float(cpu[0]),
            cpu_1h=_float(cpu[1]),
            cpu_1d=_float(cpu[2]),
            mem_15m=_float(mem[0]),
            mem_1h=_float(mem[1]),
            mem_1d=_float(mem[2]),
            cpu_stddev_1h=_float(cpu[3]),
            mem_stddev_1h=_float(mem[3]),
            net_used_bps_mean=_float(net[1]),
            net_used_bps_stddev=_float(net[3]),
            stale=newest < stale_before,
        )
    return usage
