"""Pods already running on a node are a scenario field (count and requests), kept apart from the
node's capacity; the evaluation sees them as requested resources, as kube-scheduler does."""

from __future__ import annotations

import pytest

from apps.probes.scenario import ScenarioError, load_scenario
from apps.scheduler.evaluation.adapter import cluster_nodes


def _doc(existing):
    return {"name": "busy", "regions": [{"name": "r", "zones": [{"name": "a", "nodes": [
        {"name": "n1", "cpu": "4", "memory": "8Gi", **({"existing_pods": existing} if existing is not None else {})},
        {"name": "n2"}]}]}], "links": [{"between": ["a", "a"], "latency_ms": 0.2, "loss_pct": 0, "bandwidth_mbps": 1000}]}


def test_existing_pods_are_requested_not_capacity():
    scenario = load_scenario(_doc({"count": 6, "cpu": "2500m", "memory": "5Gi"}))
    node = scenario.node("n1")
    assert (node.cpu_millicores, node.existing_pods, node.existing_cpu_millicores) == (4000, 6, 2500)
    nodes = cluster_nodes(scenario)
    assert nodes["n1"].allocatable_cpu_millicores == 4000 and nodes["n1"].requested_cpu_millicores == 2500
    assert nodes["n1"].requested_memory_bytes == 5 * 2**30 and nodes["n1"].pod_count == 6
    assert nodes["n2"].requested_cpu_millicores == 0 and nodes["n2"].pod_count == 0


@pytest.mark.parametrize(("existing", "field"), [
    ({"count": 2, "cpu": "5"}, "existing_pods.cpu"),  # more than the node has
    ({"count": 2, "memory": "9Gi"}, "existing_pods.memory"),
    ({"cpu": "1"}, "existing_pods.count"),  # requests without pods
    ({"count": 200}, "existing_pods.count"),
    ({"count": 1, "gpu": 1}, "existing_pods.gpu"),
])
def test_bad_existing_pods_name_the_field(existing, field):
    with pytest.raises(ScenarioError, match=rf"regions\[0\]\.zones\[0\]\.nodes\[0\]\.{field.replace('.', chr(92) + '.')}"):
        load_scenario(_doc(existing))
