"""What the demo cluster holds: the scenario's nodes as v1.Node objects and an AppGroup's pods.

Framework-free; ``manage.py demo_cluster`` serves the nodes, ``manage.py rollout`` creates the pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apps.appgroups.graph import AppGroupSpec
from apps.probes.scenario import Scenario
from apps.scheduler.evaluation.simulate import labels_for

DEMO_LABEL = "netaware.io/demo-rollout"
SCHEDULER_NAME = "netaware-scheduler"


def node_objects(scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's nodes, Ready, with zone/region labels and their allocatable resources."""
    out = []
    for i, node in enumerate(scenario.nodes):
        labels = {"kubernetes.io/hostname": node.name, "topology.kubernetes.io/zone": node.zone,
                  "topology.kubernetes.io/region": node.region, **dict(node.labels)}
        resources = {"cpu": f"{node.cpu_millicores}m", "memory": str(node.memory_bytes), "pods": "110"}
        out.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": labels},
            "spec": {},
            "status": {"capacity": resources, "allocatable": dict(resources),
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": f"10.42.{i // 250}.{i % 250 + 1}"},
                                     {"type": "Hostname", "address": node.name}]},
        })
    return out


def replica_set_name(group: AppGroupSpec, workload: str) -> str:
    """The workload's own name, as a mesh reports it (Istio's ``*_workload`` is the top controller's name):
    the observed-traffic learner then names the learned workloads and application like the declared ones."""
    workload_spec = next((w for w in group.workloads if w.name == workload), None)
    return ((workload_spec.controller_name if workload_spec else "") or workload)[:200]


def replica_set_objects(group: AppGroupSpec, *, replicas: int = 0) -> list[dict[str, Any]]:
    """A ReplicaSet per workload (the demo cluster's stand-in replaces a deleted or evicted pod of one,
    ``FakeKube(run_controllers=True)``): what the rebalancer's evictions need to see a replacement."""
    return [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
             "metadata": {"name": replica_set_name(group, w.name), "namespace": group.namespace,
                          "labels": {DEMO_LABEL: group.name}},
             "spec": {"replicas": replicas or max(1, w.replicas),
                      "selector": {"matchLabels": dict(w.selector.match_labels)}}}
            for w in group.workloads]


def pod_objects(group: AppGroupSpec, *, replicas: int = 0, profile: str = "",
                scheduler_name: str = SCHEDULER_NAME,
                owners: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Pending pods for every workload of the AppGroup: ``replicas`` each (0: the workload's own hint),
    labelled so their workload's selector matches, with its resource hints as requests. ``owners``:
    workload name -> its ReplicaSet (as created: with its uid), set as the pods' controller."""
    pods = []
    for workload in group.workloads:
        labels = labels_for(workload.selector)
        requests = {"cpu": f"{workload.cpu_request_millicores or 100}m",
                    "memory": str(workload.memory_request_bytes or 64 * 2**20)}
        for i in range(replicas or max(1, workload.replicas)):
            meta: dict[str, Any] = {"name": f"{workload.name}-{i}", "namespace": group.namespace,
                                    "labels": {**labels, DEMO_LABEL: group.name}}
            if profile:
                meta["annotations"] = {"netaware.io/profile": profile}
            owner = (owners or {}).get(workload.name)
            if owner is not None:
                meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True,
                                            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
            pods.append({
                "apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"schedulerName": scheduler_name, "containers": [
                    {"name": workload.name, "image": "registry.k8s.io/pause:3.9",
                     "resources": {"requests": requests}}]},
                "status": {"phase": "Pending"},
            })
    return pods


def pod_names(objects: Iterable[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def workload_objects(group: AppGroupSpec, *, part_of: str = "", node: str = "") -> list[dict[str, Any]]:
    """Deployments, their ReplicaSets and Running pods (owner references set) for every workload of the
    AppGroup, as a cluster running it would hold them: what the observed-traffic learner reads to map a
    mesh's workload names back to selectors (apps/traffic/learning.py)."""
    out: list[dict[str, Any]] = []
    extra = {"app.kubernetes.io/part-of": part_of} if part_of else {}
    for workload in group.workloads:
        name = workload.controller_name or workload.name
        labels = {**labels_for(workload.selector), **extra}
        meta = {"namespace": group.namespace}
        out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {**meta, "name": name, "labels": labels},
                    "spec": {"replicas": max(1, workload.replicas),
                             "selector": {"matchLabels": dict(workload.selector.match_labels)},
                             "template": {"metadata": {"labels": labels}}}})
        rs = f"{name}-5d8f7c"
        out.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {**meta, "name": rs, "labels": {**labels, "pod-template-hash": "5d8f7c"},
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                                      "controller": True, "uid": f"uid-{name}"}]},
                    "spec": {"selector": {"matchLabels": dict(workload.selector.match_labels)}}})
        for i in range(max(1, workload.replicas)):
            out.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {**meta, "name": f"{rs}-{i}", "labels": {**labels, "pod-template-hash": "5d8f7c"},
                                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                                          "controller": True, "uid": f"uid-{rs}"}]},
                        "spec": {"nodeName": node, "containers": [{"name": name, "image": "registry.k8s.io/pause:3.9"}]},
                        "status": {"phase": "Running"}})
    return out
