"""The numpy forms of kube-scheduler's default score plugins (used by the rollout driver) give
exactly the integers of the per-node reference implementation (used to validate them against
kube-scheduler's formulas), on random clusters with zero capacities, missing zone labels, full
nodes and skewed placements."""

from __future__ import annotations

import random

import numpy as np

from apps.scheduler.scoring import default_plugins as plugins
from apps.scheduler.scoring.state import NodeResources, PodInfo


def test_vectorized_default_plugins_match_the_reference():
    rng = random.Random(4)
    for trial in range(300):
        n = rng.randint(1, 40)
        zones = [f"z{rng.randint(0, 4)}" if rng.random() > 0.1 else "" for _ in range(n)]
        nodes = [NodeResources(
            name=f"n{i}", zone=zones[i],
            allocatable_cpu_millicores=rng.choice([0, 1000, 4000, 8000]),
            allocatable_memory_bytes=rng.choice([0, 2**30, 8 * 2**30]),
            requested_cpu_millicores=rng.randint(0, 9000), requested_memory_bytes=rng.randint(0, 9 * 2**30),
        ) for i in range(n)]
        pod = PodInfo("default", "p", cpu_request_millicores=rng.choice([0, 100, 1500]),
                      memory_request_bytes=rng.choice([0, 64 << 20, 2 << 30]))
        # matching pods: on candidates and on nodes outside the candidate set (all_nodes)
        extra = [NodeResources(name=f"x{i}", zone=f"z{rng.randint(0, 4)}") for i in range(rng.randint(0, 5))]
        matching = {node.name: rng.randint(0, 6) for node in [*nodes, *extra] if rng.random() < 0.6}
        codes = {z: i for i, z in enumerate(sorted({*zones, *(e.zone for e in extra)} - {""}))}
        arrays = plugins.NodeArrays(
            np.array([x.allocatable_cpu_millicores for x in nodes]), np.array([x.allocatable_memory_bytes for x in nodes]),
            np.array([x.requested_cpu_millicores for x in nodes]), np.array([x.requested_memory_bytes for x in nodes]),
            np.array([codes.get(z, -1) for z in zones]))
        zone_totals = np.zeros(len(codes), dtype=np.int64)
        for node in [*nodes, *extra]:
            if node.zone:
                zone_totals[codes[node.zone]] += matching.get(node.name, 0)
        names = [x.name for x in nodes]
        assert plugins.least_allocated_scores(arrays, pod).tolist() == [
            plugins.node_resources_fit_scores(nodes, pod)[x] for x in names], trial
        assert plugins.balanced_allocation_vector(arrays, pod).tolist() == [
            plugins.balanced_allocation_scores(nodes, pod)[x] for x in names], trial
        hostname = np.array([matching.get(x, 0) for x in names])
        reference = plugins.pod_topology_spread_scores(nodes, matching, plugins.SYSTEM_DEFAULT_CONSTRAINTS,
                                                       {e.name: e for e in extra})
        assert plugins.pod_topology_spread_vector(arrays, hostname, zone_totals).tolist() == [
            reference[x] for x in names], trial
