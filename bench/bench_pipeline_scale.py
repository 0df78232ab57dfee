"""The pipeline pieces at 5,000 nodes with generated data (issue 13): one pull window stored by 1 and by
2 workers (sharded by source, each worker a process with its own connection, as Celery workers are),
and the topology rebuild from those samples.

Run (own database, created with the tests' role of scripts/test.sh; it is filled with ~1M rows per run):
    psql "$(sed 's|/[^/]*$|/postgres|' var/secrets/test-database-url)" -c 'CREATE DATABASE netaware_pl_scale'
    DATABASE_URL="$(sed 's|/[^/]*$|/netaware_pl_scale|' var/secrets/test-database-url)" .venv/bin/python bench/bench_pipeline_scale.py
then ``--rebuild-only --runs 5`` times the rebuild alone again on the stored samples.

Data: 5,000 nodes in 50 zones of 100 (5 regions); the default fan-out (K = 24, 8 bandwidth peers) gives
120,000 probed pairs: rtt_p50/p90/p99 and loss for each, bandwidth for 40,000, i.e. 520,000 pair points
plus 15,000 node points per window -- exactly what ``store_window`` gets from the pull. Each store is a
new window (new timestamp, first-write path) through the real ``services.store_window`` with the
watermark guard, into the hourly-partitioned table. The rebuild is ``services.rebuild_topology``
(reads the newest samples, derives 5,000 x 5,000, stores the snapshot), timed in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

N_NODES, N_ZONES, N_REGIONS = 5000, 50, 5


def nodes() -> list[tuple[str, str, str]]:
    per = N_NODES // N_ZONES
    return [(f"z{z}-{i}", f"z{z}", f"r{z % N_REGIONS}") for z in range(N_ZONES) for i in range(per)]


def window(seed: int) -> tuple[dict, dict]:
    """(pairs by series, nodes by series) of one pull window under the default fan-out."""
    from apps.probes import fanout

    triples = nodes()
    lay = fanout.layout(fanout.as_fanout_nodes(triples))
    probe = fanout.FanoutSettings(max_peers=24)
    bandwidth = fanout.FanoutSettings(max_peers=8)
    rng = np.random.default_rng(seed)
    zone = {name: z for name, z, _ in triples}
    region = {name: r for name, _, r in triples}
    src, dst, bsrc, bdst = [], [], [], []
    for name, _, _ in triples:
        for target in fanout.peers_of(lay, name, probe, 0):
            src.append(name)
            dst.append(target)
        for target in fanout.peers_of(lay, name, bandwidth, 0):
            bsrc.append(name)
            bdst.append(target)
    base = np.array([0.0005 if zone[s] == zone[t] else 0.004 if region[s] == region[t] else 0.06
                     for s, t in zip(src, dst, strict=True)])
    noise = rng.lognormal(0.0, 0.05, base.size)
    pairs = {
        "rtt_p50": (src, dst, base * 0.88 * noise),
        "rtt_p90": (src, dst, base * noise),
        "rtt_p99": (src, dst, base * 1.11 * noise),
        "loss_ratio": (src, dst, np.clip(rng.normal(0.01, 0.005, base.size), 0, 1)),
        "bandwidth_bps": (bsrc, bdst, rng.uniform(1e8, 1e10, len(bsrc))),
    }
    names = [n for n, _, _ in triples]
    node_series = {series: (names, rng.uniform(0.1, 0.9, len(names)))
                   for series in ("cpu_utilization", "memory_utilization")}
    node_series["net_used_bps"] = (names, rng.uniform(1e6, 1e8, len(names)))
    return pairs, node_series


def shard_part(pairs: dict, node_series: dict, shard: int, shards: int) -> tuple[dict, dict]:
    from apps.probes.services import shard_of

    if shards == 1:
        return pairs, node_series
    out = {}
    for series, (s, t, v) in pairs.items():
        keep = [i for i, name in enumerate(s) if shard_of(name, shards) == shard]
        out[series] = ([s[i] for i in keep], [t[i] for i in keep], v[keep])
    return out, (node_series if shard == 0 else {})


def store(ts: int, shard: int, shards: int, start_at: float) -> dict:
    import django

    django.setup()
    from apps.probes import services

    pairs, node_series = shard_part(*window(ts), shard, shards)
    suffix = f"@{shard}/{shards}" if shards > 1 else ""
    guard = {series: f"pair:{series}{suffix}" for series in pairs}
    guard.update({series: f"node:{series}" for series in node_series})
    points = sum(len(v[0]) for v in pairs.values()) + sum(len(v[0]) for v in node_series.values())
    services.ensure_partitions(start=datetime.fromtimestamp(ts, tz=UTC))  # made ahead in production too
    while time.time() < start_at:
        time.sleep(0.005)
    began = time.time()
    result = services.store_window(ts=datetime.fromtimestamp(ts, tz=UTC), pairs=pairs, nodes=node_series,
                                   watermark_keys=set(guard.values()), guard=guard,
                                   shard=services.shard_label(shard, shards))
    return {"began": began, "ended": time.time(), "points": points, "rows": result.rows_written}


def run_workers(ts: int, shards: int) -> tuple[float, int]:
    start_at = time.time() + 25.0  # every worker has generated its data by then
    procs = [subprocess.Popen([sys.executable, __file__, "--store", str(ts), str(shard), str(shards), str(start_at)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT) for shard in range(shards)]
    reports = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("a worker failed")
    wall = max(r["ended"] for r in reports) - min(r["began"] for r in reports)
    return wall, sum(r["rows"] for r in reports)


def rebuild(now_ts: int) -> dict:
    import django

    django.setup()
    from apps.topology.services import rebuild_topology

    began = time.perf_counter()
    snapshot = rebuild_topology(now=datetime.fromtimestamp(now_ts, tz=UTC))
    took = time.perf_counter() - began
    peak = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("VmHWM:")))
    return {"seconds": took, "version": snapshot.version if snapshot else None, "peak_mib": peak / 1024,
            "nodes": snapshot.node_count if snapshot else 0}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--store":
        ts, shard, shards, start_at = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
        print(json.dumps(store(ts, shard, shards, start_at)))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--rebuild":
        print(json.dumps(rebuild(int(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rebuild-only", action="store_true",
                        help="time --runs rebuilds (each in a fresh process, snapshots deleted first) from the "
                             "samples an earlier run stored")
    args = parser.parse_args()
    import django

    django.setup()
    from apps.topology.models import Node, TopologySnapshot

    if args.rebuild_only:
        rebuild_runs(args.runs, TopologySnapshot)
        return

    Node.objects.bulk_create([Node(name=n, zone=z, region=r, source="scenario") for n, z, r in nodes()],
                             ignore_conflicts=True)
    pairs, node_series = window(0)
    points = sum(len(v[0]) for v in pairs.values()) + sum(len(v[0]) for v in node_series.values())
    print(f"# bench_pipeline_scale.py, {time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}; "
          f"{N_NODES:,} nodes, {len(pairs['rtt_p90'][0]):,} probed pairs, {points:,} points per window")
    base = (int(time.time()) // 60) * 60 - 3600
    results: dict[int, list[float]] = {1: [], 2: []}
    step = 0
    for _run in range(args.runs):
        for shards in (1, 2):
            step += 1
            wall, rows = run_workers(base + 60 * step, shards)
            results[shards].append(wall)
            print(f"store one window, {shards} worker(s): {wall:.2f} s ({rows:,} rows)", flush=True)
    for shards, walls in results.items():
        print(f"| store one 5,000-node window, {shards} worker(s) | median {statistics.median(walls):.2f} s "
              f"(min {min(walls):.2f}, max {max(walls):.2f}) over {len(walls)} runs |")
    ratio = statistics.median(results[2]) / statistics.median(results[1])
    print(f"| 2 workers / 1 worker | {ratio:.2f} |")
    report = rebuild_child(base + 60 * step + 5)
    print(f"| rebuild_topology, 5,000 nodes | {report['seconds']:.2f} s, peak RSS {report['peak_mib']:.0f} MiB "
          f"(version {report['version']}, {report['nodes']} nodes) |")


def rebuild_child(now_ts: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--rebuild", str(now_ts)], capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        print(out.stderr[-2000:])
        raise SystemExit("rebuild failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def rebuild_runs(runs: int, snapshots: Any) -> None:
    """The rebuild alone, on the newest stored window (an identical rebuild would return the current
    snapshot, so each run starts without snapshots)."""
    from apps.probes.models import PairSample

    newest = PairSample.objects.order_by("-ts").values_list("ts", flat=True).first()
    if newest is None:
        raise SystemExit("no samples stored: run the bench without --rebuild-only first")
    reports = []
    for _ in range(runs):
        snapshots.objects.all().defer("payload").delete()
        reports.append(rebuild_child(int(newest.timestamp()) + 5))
        print(f"rebuild: {reports[-1]['seconds']:.2f} s, peak RSS {reports[-1]['peak_mib']:.0f} MiB, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    seconds = [r["seconds"] for r in reports]
    print(f"| rebuild_topology, 5,000 nodes | median {statistics.median(seconds):.2f} s (min {min(seconds):.2f}, "
          f"max {max(seconds):.2f}) over {runs} runs, peak RSS {max(r['peak_mib'] for r in reports):.0f} MiB |")


if __name__ == "__main__":
    main()
