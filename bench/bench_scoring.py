"""Scoring engine benchmark: run_filters + run_scorers for 500 and 5,000 candidate nodes.

Setup (issue 4's performance section): the paper's Online Boutique AppGroup (11 workloads) with 200
placed pods, on synthetic dense topologies of 500 and 5,000 nodes (zones of 50 nodes, 4 regions,
zone-dependent latency/bandwidth/loss with noise, ~1 % of pairs unknown). Every timed call scores a
pod of one workload; pods cycle through all 11 workloads so the per-request caches see realistic
turnover. Also times the network score alone against the straightforward per-node Python loop of
the paper's Algorithm 2 (``tests/support/oracles.network_score``), on the same candidates, and checks they agree.

Also times the cold-start path (nothing placed yet). Runs with OPENBLAS_NUM_THREADS=1 unless set.
Each filter+score is timed with the engine's score memo off, on a first call, and on a repeat
(interleaved, see ``bench``).

Usage: ``.venv/bin/python bench/bench_scoring.py [--reps 200] [--sizes 500,5000]`` (prints markdown).
"""

from __future__ import annotations

import os

# The deployment recommendation (docs/scoring.md): one BLAS thread per worker process.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import gc
import random
import resource
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apps.scheduler.scoring import engine
from apps.scheduler.scoring.common import WorkloadRef, topology_positions
from apps.scheduler.scoring.network_score import network_scores
from apps.scheduler.scoring.state import ClusterState, NodeResources, NodeUsage, PodInfo, evolve
from apps.topology.topomath import Topology
from tests.support import oracles
from tests.support.scoring_fixtures import paper_appgroup, pod_labels, zoned_topology

ZONE_SIZE = 50
REGIONS = 4
PLACED_PODS = 200


def synthetic_topology(n: int, seed: int = 1) -> Topology:
    rng = np.random.default_rng(seed)
    zone = np.arange(n) // ZONE_SIZE
    nz = int(zone.max()) + 1
    zl = rng.uniform(0.5, 15.0, (nz, nz))
    zl = (zl + zl.T) / 2
    np.fill_diagonal(zl, 0.4)
    zb = rng.uniform(20.0, 1000.0, (nz, nz))
    zb = (zb + zb.T) / 2
    np.fill_diagonal(zb, 1000.0)
    zr = rng.uniform(0.0, 5.0, (nz, nz))
    np.fill_diagonal(zr, 0.0)
    lat = zl[zone[:, None], zone[None, :]] * rng.uniform(0.9, 1.1, (n, n))
    bw = zb[zone[:, None], zone[None, :]] * rng.uniform(0.9, 1.1, (n, n))
    loss = zr[zone[:, None], zone[None, :]]
    unknown = rng.random((n, n)) < 0.01
    for arr in (lat, bw, loss):
        arr[unknown] = np.nan
    np.fill_diagonal(lat, 0.0)
    return zoned_topology(lat, bw, loss, zone=zone, regions=REGIONS, zone_latency=zl, node_prefix="node-")


def build_state(n: int) -> ClusterState:
    topology = synthetic_topology(n)
    base = paper_appgroup()
    rng = random.Random(2)
    names = list(topology.nodes)
    placements: dict[tuple[str, str, str], tuple[str, ...]] = {}
    per = PLACED_PODS // len(base.workloads)
    extra = PLACED_PODS - per * len(base.workloads)
    for i, w in enumerate(base.workloads):
        count = per + (1 if i < extra else 0)
        placements[(base.namespace, base.name, w.name)] = tuple(rng.choice(names) for _ in range(count))
    nodes = {name: NodeResources(name, topology.zones[i], topology.regions[i], 8000, 32 << 30,
                                 rng.randint(0, 6000), rng.randint(0, 24 << 30))
             for i, name in enumerate(names)}
    usage = {name: NodeUsage(cpu_15m=rng.random() * 0.8, cpu_1h=rng.random() * 0.8, cpu_1d=0.4,
                             mem_15m=rng.random() * 0.8, mem_1h=rng.random() * 0.8, mem_1d=0.5,
                             cpu_stddev_1h=0.05, mem_stddev_1h=0.05,
                             net_used_bps_mean=rng.random() * 5e8, net_used_bps_stddev=5e7, net_capacity_bps=1e9)
             for name in names}
    return ClusterState(topology=topology, appgroups=(base,), placements=placements, nodes=nodes, usage=usage)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


MODES = ("memo off", "first call", "repeat")


def bench(state: ClusterState, candidates: list[str], profile: engine.Profile, reps: int
          ) -> dict[str, list[float]]:
    """filter + score per pod, in three interleaved modes (same load for all three):

    * memo off: the engine without its per-pod memo (``memo=False``), i.e. before;
    * first call: a fresh state object (``evolve``: same indexes, empty memo), then filter and score:
      what a new pod costs (prioritize reuses the filter's context for the survivors);
    * repeat: the same pod, state and candidates again (kube-scheduler retrying an unschedulable
      pod): outcomes come from the memo.
    """
    group = state.appgroups[0]
    pods = [PodInfo("default", f"{w.name}-x", labels=pod_labels(w.name), cpu_request_millicores=100,
                    memory_request_bytes=64 << 20) for w in group.workloads]
    for pod in pods:  # warm the topology/usage caches once per workload
        engine.run_scorers(state, pod, candidates, profile)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    gc.disable()
    try:
        for i in range(reps):
            pod = pods[i % len(pods)]
            for mode in MODES:
                memo = mode != "memo off"
                current = evolve(state) if mode == "first call" else state
                names = list(candidates)  # a new list per request, as the extender parses one
                t0 = time.perf_counter()
                passed = engine.run_filters(current, pod, names, profile, memo=memo).passed
                engine.run_scorers(current, pod, list(passed), profile, memo=memo)
                times[mode].append((time.perf_counter() - t0) * 1e3)
    finally:
        gc.enable()
    return times


def naive_ratio(state: ClusterState, candidates: list[str], reps: int) -> tuple[float, float, float]:
    group = state.appgroups[0]
    ref = WorkloadRef(group, group.workload("checkout"))
    positions = topology_positions(state.topology, candidates)
    fast = []
    for _ in range(max(reps, 20)):
        t0 = time.perf_counter()
        scores, _ = network_scores(state, ref, positions)
        fast.append((time.perf_counter() - t0) * 1e3)
    slow = []
    naive: list[float | None] = []
    for _ in range(3):
        t0 = time.perf_counter()
        naive = [oracles.network_score(state, ref, c) for c in candidates]
        slow.append((time.perf_counter() - t0) * 1e3)
    assert scores is not None
    err = float(np.max(np.abs(scores - np.array(naive, dtype=float))))
    return statistics.median(fast), statistics.median(slow), err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sizes", default="500,5000")
    args = parser.parse_args()
    rows = []
    ratio_rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        t0 = time.perf_counter()
        state = build_state(n)
        build_s = time.perf_counter() - t0
        rng = random.Random(5)
        for count in (500, 5000):
            if count > n:
                continue
            candidates = rng.sample(list(state.topology.nodes), count)
            for pname in ("network", "balanced"):
                times = bench(state, candidates, engine.BUILTIN_PROFILES[pname], args.reps)
                rows.append((n, count, pname, times))
            cold = replace(state, placements={})
            times = bench(cold, candidates, engine.BUILTIN_PROFILES["network"], max(args.reps // 4, 50))
            rows.append((n, count, "network, cold start (nothing placed)", times))
            fast, slow, err = naive_ratio(state, candidates, args.reps)
            ratio_rows.append((n, count, fast, slow, slow / fast, err))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"<!-- topology {n}: built in {build_s:.1f}s, peak RSS so far {rss:.0f} MiB -->")
    print("| topology nodes | candidates | profile | memo off p50 / p99 (ms) | first call p50 / p99 (ms) "
          "| ratio p50 | repeat p50 / p99 (ms) | ratio p50 | reps |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for n, count, pname, times in rows:
        off, first, again = (times[m] for m in MODES)
        print(f"| {n} | {count} | {pname} | {statistics.median(off):.2f} / {pct(off, 99):.2f} "
              f"| {statistics.median(first):.2f} / {pct(first, 99):.2f} "
              f"| ×{statistics.median(off) / statistics.median(first):.2f} "
              f"| {statistics.median(again):.2f} / {pct(again, 99):.2f} "
              f"| ×{statistics.median(off) / statistics.median(again):.1f} | {len(off)} |")
    print()
    print("| topology nodes | candidates | vectorized network score p50 (ms) | naive per-node loop (ms) | ratio | max abs diff |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, count, fast, slow, ratio, err in ratio_rows:
        print(f"| {n} | {count} | {fast:.2f} | {slow:.0f} | {ratio:.0f}x | {err:.1e} |")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nPeak RSS of the benchmark process: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
