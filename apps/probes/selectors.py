"""Reads of the pipeline's time-series tables for the topology builder and the scheduler.

Both selectors go straight to a raw cursor: building 40k model instances per series would cost
far more than the query itself, and the callers want numpy arrays anyway.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.scheduler.scoring.state import NodeUsage

from .choices import NodeSeries, PairSeries
from .models import NodeSample, PairSample

PairValues = tuple[list[str], list[str], np.ndarray, np.ndarray]

_LATEST_SQL = (
    f"SELECT DISTINCT ON (source, target) source, target, value, EXTRACT(EPOCH FROM ts)::float8 "
    f"FROM {PairSample._meta.db_table} WHERE series = %s AND ts >= %s "
    f"ORDER BY source, target, ts DESC"
)


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
    result: dict[str, PairValues] = {}
    with connection.cursor() as cursor:
        for name in series:
            cursor.execute(_LATEST_SQL, [name, since])
            rows = cursor.fetchall()
            if rows:
                sources, targets, values, stamps = zip(*rows, strict=True)
                result[name] = (
                    list(sources),
                    list(targets),
                    np.fromiter(values, dtype=np.float64, count=len(rows)),
                    np.fromiter(stamps, dtype=np.float64, count=len(rows)),
                )
            else:
                result[name] = ([], [], np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64))
    return result


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
