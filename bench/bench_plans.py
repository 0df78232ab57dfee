"""Placement-plan benchmark: ``compute_plan`` for a 20-workload AppGroup on 500 (and 5,000) nodes.

Setup (issue 15's target: plan computation <= 50 ms p99 for 20 workloads on 500 nodes): the
synthetic dense topologies of bench/_cluster.py (zones of 50 nodes, 5 regions at 500 nodes; zones
of 100 at 5,000), nodes of 4 or 16 CPU with random load, and a 20-workload AppGroup (a call tree
with fan-out, mixed latency/bandwidth/loss sensitivities, 1-3 replicas, two minBandwidth limits).
Each timed call plans the AppGroup with 0..10 of its pods already placed (the recompute a pod
outside the plan triggers), with the extender's default 50 ms budget, a fresh state each time (no
caches from the previous call). Also reports, per call, the plan's predicted score against a plan
computed with a 2 s budget on the same state (how much the budget costs), and which method won.

Usage: ``.venv/bin/python bench/bench_plans.py [--reps 200] [--sizes 500,5000]`` (prints markdown).

``--joint 5`` instead times the issue-20 joint plan: the three tenants of
scenarios/three-tenants-appgroups.yaml (107 workloads, 133 pods) planned together on
scenarios/four-regions-94.yaml and four-regions-376.yaml with the extender's default budget (adapted to the
model's size), N repetitions each on a fresh state; it also checks that every repetition gives the same plan.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import gc
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

if TYPE_CHECKING:
    from apps.appgroups.graph import AppGroupSpec
    from apps.scheduler.scoring.state import NodeResources
    from apps.topology.topomath import Topology

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._cluster import cluster_shape, synthetic_topology


def appgroup(rng: np.random.Generator) -> AppGroupSpec:
    from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec

    kinds = (Sensitivity(0.7, 0.2, 0.1), Sensitivity(0.2, 0.7, 0.1), Sensitivity(0.3, 0.2, 0.5))
    workloads = []
    for i in range(20):
        deps: list[DependencySpec] = []
        for child in (2 * i + 1, 2 * i + 2, i + 7):  # a tree plus cross edges
            if child < 20 and child != i and len(deps) < 3:
                limit = 200e6 if (i, child) in ((0, 1), (3, 7)) else None
                deps.append(DependencySpec(f"w{child:02d}", kinds[(i + child) % 3], min_bandwidth_bps=limit))
        workloads.append(WorkloadSpec(
            f"w{i:02d}", LabelSelector({"app": f"w{i:02d}"}), float(rng.uniform(0.3, 1.0)), tuple(deps),
            replicas=int(rng.integers(1, 4)), cpu_request_millicores=int(rng.choice([100, 250, 500, 1000, 2000])),
            memory_request_bytes=int(rng.choice([128, 256, 1024, 2048])) * 2**20))
    return AppGroupSpec("bench", "twenty", tuple(workloads))


def cluster(n: int, rng: np.random.Generator) -> tuple[Topology, dict[str, NodeResources]]:
    from apps.scheduler.scoring.state import NodeResources

    topology = synthetic_topology(*cluster_shape(n), rng)
    nodes = {}
    for i, name in enumerate(topology.nodes):
        cpu = 16000 if i % 5 == 0 else 4000
        nodes[name] = NodeResources(name, topology.zones[i], topology.regions[i], cpu, cpu * 2**20 * 4,
                                    int(rng.uniform(0, 0.7) * cpu), int(rng.uniform(0, 0.7) * cpu * 2**20 * 4))
    return topology, nodes


def bench(n: int, reps: int, seed: int) -> dict[str, object]:
    from apps.scheduler.scoring.plans import compute_plan
    from apps.scheduler.scoring.state import ClusterState

    rng = np.random.default_rng(seed)
    topology, nodes = cluster(n, rng)
    group = appgroup(rng)
    names = list(nodes)
    gc.collect()
    gc.freeze()  # the extender freezes its long-lived objects after loading (runtime.py): no full collections of them
    times, cpu, gaps = [], [], []
    methods: Counter[str] = Counter()
    refined = 0
    for rep in range(reps):
        placements = {}
        for w in group.workloads[: rep % 11]:  # 0..10 workloads with a pod already placed
            placements[(group.namespace, group.name, w.name)] = (names[int(rng.integers(len(names)))],)
        state = ClusterState(topology=topology, appgroups=(group,), placements=placements, nodes=nodes)
        _ = state.indexes  # built by the cache between requests, not by the plan
        started, cpu_started = time.perf_counter(), time.process_time()
        plan = compute_plan(state=state, group=group)
        times.append((time.perf_counter() - started) * 1e3)
        cpu.append((time.process_time() - cpu_started) * 1e3)
        methods[plan.method] += 1
        refined += bool(plan.nodes)
        if rep % 10 == 0:
            best = compute_plan(state=ClusterState(topology=topology, appgroups=(group,), placements=placements,
                                                   nodes=nodes), group=group, budget_s=2.0)
            gaps.append(best.value - plan.value)
    times.sort()
    cpu.sort()
    return {
        "cpu_p50": statistics.median(cpu), "cpu_p99": cpu[min(len(cpu) - 1, int(0.99 * len(cpu)))],
        "nodes": n, "reps": reps, "p50": statistics.median(times), "p99": times[min(len(times) - 1, int(0.99 * len(times)))],
        "max": times[-1], "methods": dict(methods), "refined": refined,
        "gap_mean": float(np.mean(gaps)), "gap_max": float(np.max(gaps)),
    }


def bench_joint(reps: int) -> None:
    from apps.scheduler.evaluation.report import initial_state, load_inputs
    from apps.scheduler.scoring.plans import DEFAULT_BUDGET_S, adapted_budget, compute_joint_plans

    root = Path(__file__).resolve().parent.parent / "scenarios"
    print("| nodes | workloads / pods | zones | budget (work, nominal s) | wall p50 / max ms | CPU p50 ms | "
          "predicted score | same plan every time | wall-time safety net hit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ("four-regions-94", "four-regions-376"):
        scenario, groups = load_inputs(root / f"{name}.yaml", root / "three-tenants-appgroups.yaml")
        walls, cpus, ids, hits = [], [], set(), 0
        value = float("nan")
        for _ in range(reps):
            state = initial_state(scenario, groups)
            _ = state.indexes
            started, cpu_started = time.perf_counter(), time.process_time()
            plans = compute_joint_plans(state=state, groups=list(groups))
            walls.append((time.perf_counter() - started) * 1e3)
            cpus.append((time.process_time() - cpu_started) * 1e3)
            ids.add(tuple(p.plan_id for p in plans))
            hits += any("safety net" in note for note in plans[0].diagnosis)
            value = plans[0].value
        workloads = sum(len(g.workloads) for g in groups)
        pods = sum(w.replicas for g in groups for w in g.workloads)
        zones = len(scenario.zones())
        print(f"| {len(scenario.nodes)} | {workloads} / {pods} | {zones} | "
              f"{adapted_budget(DEFAULT_BUDGET_S, workloads, zones):.2f} | {statistics.median(walls):.0f} / "
              f"{max(walls):.0f} | {statistics.median(cpus):.0f} | {value:.2f} | {'yes' if len(ids) == 1 else 'NO'} | {hits} of {reps} |")
    print(f"\nload average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores, {reps} repetitions")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sizes", default="500,5000")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--joint", type=int, default=0, help="time the three-tenant joint plan N times instead")
    args = parser.parse_args()
    if args.joint:
        bench_joint(args.joint)
        return
    print("| nodes | calls | p50 ms | p99 ms | max ms | CPU p50 / p99 ms | method (calls) | node-level plans | "
          "score gap vs 2 s budget (mean / max) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        r = bench(size, args.reps, args.seed)
        methods = ", ".join(f"{k} {v}" for k, v in sorted(r["methods"].items()))  # type: ignore[attr-defined]
        print(f"| {r['nodes']} | {r['reps']} | {r['p50']:.1f} | {r['p99']:.1f} | {r['max']:.1f} | "
              f"{r['cpu_p50']:.1f} / {r['cpu_p99']:.1f} | {methods} | "
              f"{r['refined']} | {r['gap_mean']:.2f} / {r['gap_max']:.2f} |")
    print(f"\nload average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
