"""A small cluster for the rebalancer's tests: zones A, B, C (two 4-CPU nodes each), the AppGroup
``shop/app`` (front x2 -> cart x2 -> db x1, one ReplicaSet each) placed as it was planned when A-B was
a good link — front in A, cart and db in B — and a topology where A-B has degraded (40 ms, 3 % loss).

Everything goes through real code: the topology snapshot and nodes through the topology services, the
AppGroup through ``save_appgroup``, the pods into the fake API (apps/demo/kubeapi.py, which stands in
for kubelets and ReplicaSets) and bound there; the cluster watcher (``watch_cluster --once``) records
the placements the drift computation reads. The test plays kube-scheduler only where no extender runs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.core.management import call_command

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.appgroups.services import save_appgroup
from apps.demo.kubeapi import FakeKube
from apps.probes.scenario import Scenario, load_scenario
from apps.topology import services as topology_services
from apps.topology.scenario_topology import topology_from_scenario
from tests.support.extender_wire import store_topology

LAT = Sensitivity(0.6, 0.1, 0.3)
# Planned when A-B was a good link: front in A, cart and db in B.
SPLIT = {"front": ("a1", "a2"), "cart": ("b1", "b2"), "db": ("b1",)}


def scenario(ab_rtt: float, ab_loss: float) -> Scenario:
    return load_scenario({
        "name": "rebalance",
        "regions": [{"name": "r1", "zones": [
            {"name": "A", "nodes": [{"name": "a1", "cpu": "4"}, {"name": "a2", "cpu": "4"}]},
            {"name": "B", "nodes": [{"name": "b1", "cpu": "4"}, {"name": "b2", "cpu": "4"}]},
            {"name": "C", "nodes": [{"name": "c1", "cpu": "4"}, {"name": "c2", "cpu": "4"}]},
        ]}],
        "links": [
            {"between": ["A", "A"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["B", "B"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["C", "C"], "latency_ms": 0.2, "loss_pct": 0.0, "bandwidth_mbps": 10000},
            {"between": ["A", "B"], "latency_ms": ab_rtt, "loss_pct": ab_loss, "bandwidth_mbps": 5000},
            {"between": ["A", "C"], "latency_ms": 5.0, "loss_pct": 0.5, "bandwidth_mbps": 1000},
            {"between": ["B", "C"], "latency_ms": 5.0, "loss_pct": 0.5, "bandwidth_mbps": 1000},
        ],
    })


HEALTHY = (0.3, 0.0)
DEGRADED = (40.0, 3.0)


def group(namespace: str = "shop", name: str = "app", mode: str = "on") -> AppGroupSpec:
    def w(wname: str, replicas: int, deps: tuple[str, ...] = ()) -> WorkloadSpec:
        return WorkloadSpec(wname, LabelSelector({"app": wname}), 1.0, tuple(DependencySpec(d, LAT) for d in deps),
                            replicas=replicas, cpu_request_millicores=1000, memory_request_bytes=2**28)
    spec = AppGroupSpec(namespace, name, (w("front", 2, ("cart", "db")), w("cart", 2, ("db",)), w("db", 1)))
    return replace(spec, rebalance_mode=mode)


def nodes(fake: FakeKube, *, links: tuple[float, float] = DEGRADED) -> Scenario:
    """The six nodes in the database and the fake API, and the topology with A-B as ``links``."""
    sc = scenario(*links)
    topology_services.load_nodes_from_scenario(scenario=sc)
    store_topology(topology_from_scenario(sc))
    for node in sc.nodes:
        fake.add_node(node.name, zone=node.zone, region=node.region,
                      allocatable={"cpu": f"{node.cpu_millicores}m", "memory": str(node.memory_bytes), "pods": "110"})
    return sc


def deploy(fake: FakeKube, spec: AppGroupSpec, *, where: dict[str, tuple[str, ...]] | None = None,
           scheduler_name: str = "netaware-scheduler") -> dict[str, dict[str, Any]]:
    """The AppGroup saved, one ReplicaSet per workload and its pods, bound per ``where`` (None: left
    Pending for a scheduler). Returns the ReplicaSets by workload."""
    save_appgroup(spec=spec, origin="netaware")
    sets = {}
    for workload in spec.workloads:
        rs = fake.create("apps", "v1", "replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{spec.name}-{workload.name}", "namespace": spec.namespace},
            "spec": {"replicas": workload.replicas, "selector": {"matchLabels": dict(workload.selector.match_labels)}}},
            namespace=spec.namespace)
        sets[workload.name] = rs
        for i in range(workload.replicas):
            pod_name = f"{workload.name}-{i}"
            fake.create("", "v1", "pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod_name, "namespace": spec.namespace,
                             "labels": dict(workload.selector.match_labels),
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True,
                                                  "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"]}]},
                "spec": {"schedulerName": scheduler_name, "containers": [{
                    "name": workload.name, "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "1", "memory": str(2**28)}}}]},
                "status": {"phase": "Pending"}}, namespace=spec.namespace)
            if where is not None:
                bind(fake, spec.namespace, pod_name, where[workload.name][i])
    return sets


def bind(fake: FakeKube, namespace: str, pod: str, node: str) -> None:
    """A Binding through the fake API (what kube-scheduler posts); the fake's kubelet runs the pod."""
    fake._bind(namespace, pod, {"target": {"name": node}})


def budget(fake: FakeKube, namespace: str, workload: str, *, min_available: int) -> None:
    fake.create("policy", "v1", "poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": f"{workload}-pdb", "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": workload}}}},
        namespace=namespace)


def watch_once() -> None:
    """The cluster watcher's list pass: placements and pod requests as the drift computation reads them."""
    call_command("watch_cluster", "--once")


def pending(fake: FakeKube, namespace: str) -> list[dict[str, Any]]:
    return [p for p in fake.list("", "v1", "pods", namespace) if not (p.get("spec") or {}).get("nodeName")]


def ready_count(fake: FakeKube, namespace: str, workload: str) -> int:
    from apps.demo.kubeapi import pod_ready

    return sum(1 for p in fake.list("", "v1", "pods", namespace)
               if (p["metadata"].get("labels") or {}).get("app") == workload and pod_ready(p))
