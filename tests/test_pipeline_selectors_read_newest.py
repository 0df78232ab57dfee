"""latest_pair_values returns the newest sample per pair since T; node_usage aggregates the load windows."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from apps.probes.models import NodeSample, PairSample
from apps.probes.selectors import latest_pair_values, node_usage

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def test_latest_pair_values_newest_per_pair_since():
    rows = [
        # (seconds before NOW, series, source, target, value)
        (120, "rtt_p90", "a", "b", 0.001),
        (60, "rtt_p90", "a", "b", 0.002),  # newest a->b
        (600, "rtt_p90", "b", "a", 0.009),  # too old for since=NOW-300s
        (30, "rtt_p90", "b", "c", 0.003),
        (10, "rtt_p50", "a", "b", 0.0005),  # other series
        (10, "loss_ratio", "c", "a", 0.25),
    ]
    PairSample.objects.bulk_create([
        PairSample(ts=NOW - timedelta(seconds=ago), series=s, source=a, target=b, value=v) for ago, s, a, b, v in rows
    ])
    got = latest_pair_values(series=["rtt_p90", "loss_ratio", "bandwidth_bps"], since=NOW - timedelta(seconds=300))
    sources, targets, values, stamps = got["rtt_p90"]
    assert (sources, targets) == (["a", "b"], ["b", "c"])
    assert values.dtype == np.float64 and values.tolist() == [0.002, 0.003]
    assert stamps.tolist() == [(NOW - timedelta(seconds=60)).timestamp(), (NOW - timedelta(seconds=30)).timestamp()]
    assert got["loss_ratio"][:2] == (["c"], ["a"]) and got["loss_ratio"][2].tolist() == [0.25]
    empty = got["bandwidth_bps"]
    assert empty[0] == [] and empty[2].shape == (0,) and empty[3].shape == (0,)
    with pytest.raises(ValueError, match="series: unknown"):
        latest_pair_values(series=["rtt_p95"], since=NOW)


def test_node_usage_windows_and_staleness(settings):
    settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": 600}
    cpu = {5: 0.8, 10: 0.6, 30: 0.4, 120: 0.2, 600: 0.1}  # minutes ago -> value
    rows = [NodeSample(ts=NOW - timedelta(minutes=m), series="cpu_utilization", node="fresh", value=v)
            for m, v in cpu.items()]
    rows += [NodeSample(ts=NOW - timedelta(minutes=m), series="memory_utilization", node="fresh", value=0.5)
             for m in (5, 20)]
    rows += [NodeSample(ts=NOW - timedelta(minutes=m), series="net_used_bps", node="fresh", value=v)
             for m, v in ((5, 1e6), (40, 3e6))]
    rows += [NodeSample(ts=NOW - timedelta(minutes=30), series="cpu_utilization", node="quiet", value=0.3)]
    rows += [NodeSample(ts=NOW + timedelta(minutes=5), series="cpu_utilization", node="fresh", value=1.0)]  # future
    NodeSample.objects.bulk_create(rows)

    usage = node_usage(now=NOW)
    fresh = usage["fresh"]
    assert fresh.cpu_15m == pytest.approx(0.7)
    assert fresh.cpu_1h == pytest.approx(0.6)
    assert fresh.cpu_1d == pytest.approx(statistics.mean(cpu.values()))
    assert fresh.cpu_stddev_1h == pytest.approx(statistics.stdev([0.8, 0.6, 0.4]))
    assert (fresh.mem_15m, fresh.mem_1h, fresh.mem_stddev_1h) == (0.5, 0.5, 0.0)
    assert fresh.net_used_bps_mean == pytest.approx(2e6)
    assert fresh.net_used_bps_stddev == pytest.approx(statistics.stdev([1e6, 3e6]))
    assert fresh.net_capacity_bps is None and not fresh.stale
    quiet = usage["quiet"]
    assert quiet.stale and quiet.cpu_15m is None and quiet.cpu_1h == 0.3 and quiet.cpu_stddev_1h is None
    assert quiet.mem_1h is None


def test_latest_pair_values_over_pipeline_windows_uses_digests():
    """Windows stored by the pipeline: older windows with the newest window's pair set are skipped,
    yet a pair missing from the newest window (or added to an old one later) is still found."""
    from apps.probes.models import WindowDigest
    from apps.probes.services import store_window

    def window(minutes_ago: int, pairs: list[tuple[str, str]], value: float) -> None:
        store_window(ts=NOW - timedelta(minutes=minutes_ago),
                     pairs={"rtt_p90": ([a for a, _ in pairs], [b for _, b in pairs], np.full(len(pairs), value))})

    full = [("a", "b"), ("b", "a"), ("a", "c")]
    window(4, full, 0.004)
    window(3, full, 0.003)
    window(2, [("a", "b"), ("b", "a")], 0.002)  # a->c went quiet
    window(1, [("a", "b"), ("b", "a")], 0.001)
    digests = dict(WindowDigest.objects.values_list("ts", "digest"))
    assert len(digests) == 4 and digests[NOW - timedelta(minutes=1)] == digests[NOW - timedelta(minutes=2)]
    assert digests[NOW - timedelta(minutes=3)] != digests[NOW - timedelta(minutes=1)]

    sources, targets, values, stamps = latest_pair_values(series=["rtt_p90"], since=NOW - timedelta(minutes=10))[
        "rtt_p90"]
    assert list(zip(sources, targets, values.tolist(), stamps.tolist(), strict=True)) == [
        ("a", "b", 0.001, (NOW - timedelta(minutes=1)).timestamp()),
        ("a", "c", 0.003, (NOW - timedelta(minutes=3)).timestamp()),
        ("b", "a", 0.001, (NOW - timedelta(minutes=1)).timestamp()),
    ]

    # An old window re-stored with another pair set: its digest becomes unknown, and the pair is found.
    window(2, [("c", "a")], 0.0025)
    assert WindowDigest.objects.get(ts=NOW - timedelta(minutes=2)).digest is None
    got = latest_pair_values(series=["rtt_p90"], since=NOW - timedelta(minutes=10))["rtt_p90"]
    assert list(zip(got[0], got[1], got[2].tolist(), strict=True)) == [
        ("a", "b", 0.001), ("a", "c", 0.003), ("b", "a", 0.001), ("c", "a", 0.0025)]
    # The same selection as the plain DISTINCT ON over everything.
    from django.db import connection

    from apps.probes.selectors import _LATEST_SQL

    with connection.cursor() as cursor:
        cursor.execute(_LATEST_SQL, ["rtt_p90", NOW - timedelta(minutes=10)])
        assert [row[:3] for row in cursor.fetchall()] == list(zip(got[0], got[1], got[2].tolist(), strict=True))


def test_latest_pair_values_with_a_rotating_plan_reads_one_row_per_pair():
    """Pairs come and go (a rotating probe fan-out): the newest window's pairs are exact, and a pair that
    left the plan comes from PairLatest, at most LATEST_REFRESH_SECONDS older than its last sample."""
    from apps.probes.models import PairLatest
    from apps.probes.selectors import _LATEST_SQL, LATEST_REFRESH_SECONDS
    from apps.probes.services import store_window

    for minutes_ago in range(10, 0, -1):
        pairs = [("a", "b")] + ([("c", "d")] if minutes_ago >= 6 else [])
        store_window(ts=NOW - timedelta(minutes=minutes_ago), pairs={"rtt_p90": (
            [s for s, _ in pairs], [t for _, t in pairs], np.full(len(pairs), 0.001 * (11 - minutes_ago)))})
    # most windows wrote nothing to PairLatest: only rows more than the refresh interval apart
    assert PairLatest.objects.count() == 2
    got = latest_pair_values(series=["rtt_p90"], since=NOW - timedelta(minutes=30))["rtt_p90"]
    assert (got[0], got[1]) == (["a", "c"], ["b", "d"])
    assert got[2][0] == pytest.approx(0.010) and got[3][0] == (NOW - timedelta(minutes=1)).timestamp()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(_LATEST_SQL, ["rtt_p90", NOW - timedelta(minutes=30)])
        exact = {(s, t): (v, ts) for s, t, v, ts in cursor.fetchall()}
    last_cd = exact[("c", "d")][1]
    assert last_cd - LATEST_REFRESH_SECONDS <= got[3][1] <= last_cd
