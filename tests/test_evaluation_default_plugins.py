"""kube-scheduler's default score plugins, reproduced for the default-like and hybrid profiles.

Examples follow the Kubernetes documentation (resource bin packing page, node values reused for
LeastAllocated) and kube-scheduler's own formulas, worked by hand here.
"""

from __future__ import annotations

import math

from apps.scheduler.scoring.default_plugins import (
    DEFAULT_WEIGHTS,
    SYSTEM_DEFAULT_CONSTRAINTS,
    balanced_allocation_score,
    combine_with_extender,
    filter_resource_fit,
    least_allocated_score,
    node_resources_fit_scores,
    pod_topology_spread_scores,
)
from apps.scheduler.scoring.state import NodeResources, PodInfo

MB = 1024 * 1024


def test_least_allocated_on_the_docs_nodes():
    # Pod requests cpu 2, memory 256MB; node 1 has cpu 8 / memory 1GB with cpu 1, memory 256MB used.
    # cpu: (8 - 3) * 100 // 8 = 62; memory: (1024 - 512) * 100 // 1024 = 50; weights cpu 3, memory 1.
    assert least_allocated_score([3, 512], [8, 1024], [3, 1]) == (62 * 3 + 50) // 4 == 59
    # Node 2: cpu 6 and memory 512MB used -> cpu (8 - 8) -> 0, memory (1024 - 768) * 100 // 1024 = 25.
    assert least_allocated_score([8, 768], [8, 1024], [3, 1]) == 25 // 4 == 6
    # Default weights (1, 1) and a request above capacity scores that resource 0.
    assert least_allocated_score([3, 512], [8, 1024]) == (62 + 50) // 2
    assert least_allocated_score([9, 512], [8, 1024]) == 50 // 2


def test_balanced_allocation_is_one_minus_std_of_fractions():
    assert balanced_allocation_score([60, 20], [100, 100]) == 80  # std = |0.6 - 0.2| / 2
    assert balanced_allocation_score([50, 50], [100, 100]) == 100
    assert balanced_allocation_score([3000, 2 * 1024], [4000, 8 * 1024]) == int((1 - abs(0.75 - 0.25) / 2) * 100)
    # Fractions are capped at 1.
    assert balanced_allocation_score([200, 50], [100, 100]) == 75


def test_node_resources_fit_counts_the_incoming_pod_with_non_zero_defaults():
    node = NodeResources("n1", allocatable_cpu_millicores=4000, allocatable_memory_bytes=8192 * MB,
                         requested_cpu_millicores=1000, requested_memory_bytes=2048 * MB)
    pod = PodInfo("default", "p", cpu_request_millicores=1000, memory_request_bytes=2048 * MB)
    cpu = (4000 - 2000) * 100 // 4000
    mem = (8192 - 4096) * 100 // 8192
    assert node_resources_fit_scores([node], pod) == {"n1": (cpu + mem) // 2}
    best_effort = PodInfo("default", "q")  # 0 requests count as 100m and 200Mi
    cpu = (4000 - 1100) * 100 // 4000
    mem = (8192 * MB - 2048 * MB - 200 * MB) * 100 // (8192 * MB)
    assert node_resources_fit_scores([node], best_effort) == {"n1": (cpu + mem) // 2}


def test_pod_topology_spread_system_defaults_prefer_empty_domains():
    nodes = [NodeResources(f"{z}{i}", zone=z) for z in "abc" for i in (1, 2)]
    scores = pod_topology_spread_scores(nodes, {"a1": 1})
    # hostname (maxSkew 3): cnt * log(6 + 2) + 2; zone (maxSkew 5): cnt * log(3 + 2) + 4.
    raw_a1 = round(1 * math.log(8) + 2 + 1 * math.log(5) + 4)
    raw_a2 = round(math.log(5) + 6)
    raw_other = 6
    high, low = max(raw_a1, raw_a2, raw_other), min(raw_a1, raw_a2, raw_other)
    assert scores["a1"] == 100 * (high + low - raw_a1) // high
    assert scores["a2"] == 100 * (high + low - raw_a2) // high
    assert scores["b1"] == scores["c2"] == 100 * (high + low - raw_other) // high == 100
    assert scores["a1"] < scores["a2"] < scores["b1"]
    # Nothing placed: every node is equal.
    assert set(pod_topology_spread_scores(nodes, {}).values()) == {100}
    assert [c.max_skew for c in SYSTEM_DEFAULT_CONSTRAINTS] == [5, 3]


def test_pods_on_filtered_out_nodes_still_count_toward_their_zone():
    nodes = {f"{z}{i}": NodeResources(f"{z}{i}", zone=z) for z in "ab" for i in (1, 2)}
    candidates = [nodes["a2"], nodes["b1"], nodes["b2"]]
    with_all = pod_topology_spread_scores(candidates, {"a1": 2}, all_nodes=nodes)
    assert with_all["a2"] < with_all["b1"] == with_all["b2"]


def test_resource_fit_filter_names_the_missing_resource():
    nodes = {
        "ok": NodeResources("ok", allocatable_cpu_millicores=1000, allocatable_memory_bytes=1024 * MB),
        "cpu": NodeResources("cpu", allocatable_cpu_millicores=1000, allocatable_memory_bytes=1024 * MB,
                             requested_cpu_millicores=950),
        "full": NodeResources("full", allocatable_cpu_millicores=1000, allocatable_memory_bytes=1024 * MB,
                              pod_count=110),
    }
    pod = PodInfo("default", "p", cpu_request_millicores=100, memory_request_bytes=100 * MB)
    passed, failed = filter_resource_fit(nodes, pod, ["ok", "cpu", "full", "ghost"])
    assert passed == ["ok"]
    assert failed == {"cpu": "Insufficient cpu", "full": "Too many pods", "ghost": "node not found"}


def test_extender_is_combined_as_kube_scheduler_does():
    assert DEFAULT_WEIGHTS == {"NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1, "PodTopologySpread": 2}
    combined = combine_with_extender({"a": 350, "b": 390}, {"a": 10, "b": 8}, 5)
    assert combined == {"a": 350 + 10 * 5 * 10, "b": 390 + 8 * 5 * 10}
