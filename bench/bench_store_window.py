"""Store one pull window of a 200-node full mesh into Postgres (issue 2 target: <= 2 s).

39,800 directed pairs x 5 series = 199,000 points through ``apps.probes.services.store_window`` (the
code path of the periodic pull: one transaction, upsert keyed by (ts, series, source, target),
watermarks advanced). Each timed run stores a fresh window; each is followed by a re-run of the
same window, which must change no row (idempotency) and shows what a duplicate pull costs.

The table is pre-filled with ``--prefill`` windows first, so the figures hold for a table that
already has history (index inserts slow down as a B-tree grows when the key does not lead with ts).
Rows are stamped in 2100 and deleted afterwards; nothing else in the database is touched.

    psql "$(sed 's|/[^/]*$|/postgres|' var/secrets/test-database-url)" -c 'CREATE DATABASE netaware_pl'   # the tests' role (scripts/test.sh)
    DATABASE_URL="$(sed 's|/[^/]*$|/netaware_pl|' var/secrets/test-database-url)" .venv/bin/python bench/bench_store_window.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")

import django

django.setup()

import numpy as np  # noqa: E402
from django.db import connection  # noqa: E402

from apps.probes import selectors  # noqa: E402
from apps.probes.models import PairSample, PullWatermark  # noqa: E402
from apps.probes.queries import PairQuery  # noqa: E402
from apps.probes.selectors import latest_pair_values  # noqa: E402
from apps.probes.services import _group_pair_matrix, store_window  # noqa: E402

BASE = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp())
WIDTH = 60
SERIES = ("rtt_p50", "rtt_p90", "rtt_p99", "loss_ratio", "bandwidth_bps")


def window(n_nodes: int, rng: np.random.Generator) -> dict:
    names = [f"node-{i:04d}" for i in range(n_nodes)]
    sources = [a for a in names for b in names if a != b]
    targets = [b for a in names for b in names if a != b]
    p50 = rng.uniform(0.0002, 0.02, len(sources))
    values = {
        "rtt_p50": p50,
        "rtt_p90": p50 * 1.3,
        "rtt_p99": p50 * 1.8,
        "loss_ratio": rng.uniform(0.0, 0.05, len(sources)),
        "bandwidth_bps": rng.uniform(2e7, 1e9, len(sources)),
    }
    return {series: (sources, targets, values[series]) for series in SERIES}


def timed_store(ts: int, pairs: dict) -> tuple[float, int]:
    start = time.perf_counter()
    result = store_window(ts=datetime.fromtimestamp(ts, tz=UTC), pairs=pairs,
                          watermark_keys=[f"bench:{s}" for s in SERIES])
    return time.perf_counter() - start, result.rows_written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--prefill", type=int, default=10, help="windows stored before timing")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n_pairs = args.nodes * (args.nodes - 1)

    def cleanup() -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {PairSample._meta.db_table} WHERE ts >= %s",
                           [datetime.fromtimestamp(BASE, tz=UTC)])
        PullWatermark.objects.filter(query__startswith="bench:").delete()

    cleanup()
    try:
        ts = BASE
        for _ in range(args.prefill):
            ts += WIDTH
            store_window(ts=datetime.fromtimestamp(ts, tz=UTC), pairs=window(args.nodes, rng))
        fresh, rerun = [], []
        for _ in range(args.runs):
            ts += WIDTH
            pairs = window(args.nodes, rng)
            seconds, written = timed_store(ts, pairs)
            assert written == n_pairs * len(SERIES), written
            fresh.append(seconds)
            seconds, written = timed_store(ts, pairs)
            assert written == 0, f"re-run changed {written} rows"
            rerun.append(seconds)
        total_rows = PairSample.objects.filter(ts__gte=datetime.fromtimestamp(BASE, tz=UTC)).count()

        # The topology's read: newest value per pair for three series over the last 10 windows.
        reads = []
        for _ in range(5):
            start = time.perf_counter()
            latest = latest_pair_values(series=["rtt_p90", "bandwidth_bps", "loss_ratio"],
                                        since=datetime.fromtimestamp(ts - 10 * WIDTH, tz=UTC))
            reads.append(time.perf_counter() - start)
            assert all(len(v[0]) == n_pairs for v in latest.values())
        # Without digests (rows written some other way): one DISTINCT ON over the whole look-back.
        fallback = []
        for _ in range(3):
            start = time.perf_counter()
            with connection.cursor() as cursor:
                for series in ("rtt_p90", "bandwidth_bps", "loss_ratio"):
                    got = selectors._fetch(cursor, selectors._LATEST_SQL,
                                           [series, datetime.fromtimestamp(ts - 10 * WIDTH, tz=UTC)])
                    assert len(got[0]) == n_pairs
            fallback.append(time.perf_counter() - start)

        # Parsing a Prometheus matrix of one window into arrays (the step before storing).
        names = [f"node-{i:04d}" for i in range(args.nodes)]
        matrix = [{"metric": {"source": a, "target": b}, "values": [[ts, "0.0123"]]}
                  for a in names for b in names if a != b]
        start = time.perf_counter()
        _group_pair_matrix(matrix, PairQuery(series="rtt_p90", query=""))
        parse_one = time.perf_counter() - start
    finally:
        cleanup()

    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        version = cursor.fetchone()[0].split(" on ")[0]
    median_fresh = statistics.median(fresh)
    median_rerun = statistics.median(rerun)
    print(f"Store one window: {args.nodes} nodes, {n_pairs:,} directed pairs x {len(SERIES)} series = "
          f"{n_pairs * len(SERIES):,} points; {args.runs} runs after {args.prefill} pre-filled windows "
          f"({total_rows:,} rows in the table at the end); {version}; load average "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| fresh window, median | {median_fresh:.3f} s (min {min(fresh):.3f}, max {max(fresh):.3f}) | ≤ 2 s |")
    print(f"| ratio to target | {median_fresh / 2.0:.2f} | ≤ 1 |")
    print(f"| throughput | {n_pairs * len(SERIES) / median_fresh:,.0f} points/s | |")
    print(f"| re-run of the same window (0 rows changed), median | {median_rerun:.3f} s "
          f"(min {min(rerun):.3f}, max {max(rerun):.3f}) | |")
    print(f"| re-run / fresh | {median_rerun / median_fresh:.2f} | |")
    print(f"| parse one series' Prometheus matrix ({n_pairs:,} results) | {parse_one:.3f} s | |")
    print(f"| latest_pair_values, 3 series x {n_pairs:,} pairs over 10 windows, median of 5 | "
          f"{statistics.median(reads):.3f} s | |")
    print(f"| same read without window digests (DISTINCT ON over all 10 windows), median of 3 | "
          f"{statistics.median(fallback):.3f} s | |")


if __name__ == "__main__":
    main()
