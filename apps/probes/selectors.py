"""Reads of the pipeline's time-series tables for the topology builder and the scheduler.

Both selectors go straight to a raw cursor: building 40k model instances per series would cost
far more than the query itself, and the callers want numpy arrays anyway.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from .choices import NodeSeries, PairSeries
from .models import NodeSample, PairLatest, PairSample
from .usage import NodeUsage

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper

PairValues = tuple[list[str], list[str], np.ndarray, np.ndarray]

_T = PairSample._meta.db_table
# Each query returns one row of four aligned arrays: ~4x faster to fetch than 40k row tuples.
_AGG = (
    "SELECT array_agg(source), array_agg(target), array_agg(value), array_agg(epoch) FROM ({inner}) AS x"
)
_COLS = "source, target, value, EXTRACT(EPOCH FROM ts)::float8 AS epoch"
# The same answer straight from the raw table (what PairLatest saves; kept for comparison in tests).
_LATEST_SQL = (
    f"SELECT DISTINCT ON (source, target) {_COLS} FROM {_T} WHERE series = %s AND ts >= %s "
    f"ORDER BY source, target, ts DESC"
)
_L = PairLatest._meta.db_table
# Must equal the interval in the trigger of migrations/0006_pair_latest.py.
LATEST_REFRESH_SECONDS = 120
_FROM_LATEST_SQL = f"SELECT {_COLS} FROM {_L} WHERE series = %s AND ts >= %s ORDER BY source, target"
_NEWEST_SQL = f"SELECT max(ts) FROM {_T} WHERE series = %s AND ts >= %s"
_OVERLAY_SQL = (
    f"SELECT DISTINCT ON (source, target) {_COLS} FROM ("
    f"SELECT source, target, value, ts FROM {_L} WHERE series = %(series)s AND ts >= %(since)s "
    f"UNION ALL SELECT source, target, value, ts FROM {_T} WHERE series = %(series)s AND ts >= %(recent)s"
    f") AS u ORDER BY source, target, ts DESC"
)


def _fetch(cursor: CursorWrapper, inner: str, params: Any) -> PairValues:
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


def _latest(cursor: CursorWrapper, series: str, since: datetime) -> PairValues:
    """PairLatest (one row per pair, at most LATEST_REFRESH_SECONDS older than the pair's newest sample)
    overlaid with the raw windows of the last LATEST_REFRESH_SECONDS before the newest one (exact there).

    With a rotating probe fan-out every stored window holds a different pair set, so the newest value per
    pair over the raw table meant scanning every window of the look-back (335 s for one series at 1,000
    nodes, measured); this reads one row per pair plus a few windows. A pair that left the fan-out is
    reported with a sample at most LATEST_REFRESH_SECONDS older than its last one.
    """
    cursor.execute(_NEWEST_SQL, [series, since])
    newest = cursor.fetchone()[0]
    if newest is None:
        return _sorted(_fetch(cursor, _FROM_LATEST_SQL, [series, since]))
    recent = max(since, newest - timedelta(seconds=LATEST_REFRESH_SECONDS))
    return _sorted(_fetch(cursor, _OVERLAY_SQL, {"series": series, "since": since, "recent": recent}))


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
