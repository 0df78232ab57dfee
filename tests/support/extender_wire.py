"""Request bodies shaped exactly as kube-scheduler sends them to an extender, and test data.

kube-scheduler marshals k8s.io/kube-scheduler/extender/v1 types with Go's encoding/json: the
extender structs have no json tags (keys are Go field names, ``Pod``, ``Nodes``, ``NodeNames``...),
nil pointers become ``null``, and the embedded v1.Pod / v1.NodeList use their normal JSON names
with every field Go's ``omitempty`` keeps. The objects below copy what a real 1.31 cluster puts in
a scheduling Pod (managedFields, tolerations, status conditions...) and a Node.

Also: the Online Boutique AppGroup (11 workloads) and helpers to load the paper's testbed nodes
and nominal topology into the database, for the extender tests.
"""

from __future__ import annotations

import uuid
from typing import Any

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec

PAPER_TESTBED = "scenarios/paper-testbed.yaml"


def k8s_pod(
    name: str,
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    cpu: str = "100m",
    memory: str = "64Mi",
    uid: str | None = None,
    node_name: str | None = None,
    phase: str = "Pending",
) -> dict[str, Any]:
    """A full v1.Pod as kube-scheduler's informer holds it (and marshals it to the extender)."""
    uid = uid or str(uuid.uuid4())
    labels = {"pod-template-hash": "5d8f7c9b8d", **(labels or {})}
    app = labels.get("app", name)
    spec: dict[str, Any] = {
        "volumes": [
            {
                "name": "kube-api-access-x2v7k",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    ],
                    "defaultMode": 420,
                },
            }
        ],
        "containers": [
            {
                "name": "server",
                "image": f"us-central1-docker.pkg.dev/google-samples/microservices-demo/{app}:v0.10.1",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "PORT", "value": "8080"}],
                "resources": {
                    "limits": {"cpu": "200m", "memory": "128Mi"},
                    "requests": {"cpu": cpu, "memory": memory},
                },
                "volumeMounts": [
                    {"name": "kube-api-access-x2v7k", "readOnly": True,
                     "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
                ],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
                "securityContext": {
                    "capabilities": {"drop": ["ALL"]},
                    "privileged": False,
                    "readOnlyRootFilesystem": True,
                    "allowPrivilegeEscalation": False,
                },
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 5,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": True, "fsGroup": 1000},
        "schedulerName": "netaware-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "metadata": {
            "name": name,
            "generateName": name.rsplit("-", 1)[0] + "-",
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": "48213",
            "creationTimestamp": "2026-11-22T07:30:00Z",
            "labels": labels,
            "annotations": annotations or {},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-5d8f7c9b8d",
                 "uid": "a3c0f0e2-1111-4f7e-9a53-4d5f3b2a1c00", "controller": True, "blockOwnerDeletion": True}
            ],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-22T07:30:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}}}}}
            ],
        },
        "spec": spec,
        "status": {
            "phase": phase,
            "conditions": [] if phase == "Pending" else [{"type": "Ready", "status": "True"}],
            "qosClass": "Burstable",
        },
    }


def k8s_node(
    name: str,
    *,
    zone: str = "",
    region: str = "",
    cpu: str = "4",
    memory: str = "16305440Ki",
    ready: bool = True,
    address: str = "10.0.0.1",
) -> dict[str, Any]:
    """A full v1.Node as kube-scheduler sends it when nodeCacheCapable is false."""
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    }
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    if region:
        labels["topology.kubernetes.io/region"] = region
    return {
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "resourceVersion": "47001",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"], "providerID": f"kind://docker/kind/{name}"},
        "status": {
            "capacity": {"cpu": cpu, "ephemeral-storage": "102626232Ki", "hugepages-2Mi": "0",
                         "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "ephemeral-storage": "102626232Ki", "hugepages-2Mi": "0",
                            "memory": memory, "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-11-22T07:29:00Z",
                 "lastTransitionTime": "2026-11-01T00:00:00Z", "reason": "KubeletHasSufficientMemory",
                 "message": "kubelet has sufficient memory available"},
                {"type": "Ready", "status": "True" if ready else "False",
                 "lastHeartbeatTime": "2026-11-22T07:29:00Z", "lastTransitionTime": "2026-11-01T00:00:10Z",
                 "reason": "KubeletReady", "message": "kubelet is posting ready status"},
            ],
            "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "0" * 32, "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                         "bootID": "b" * 32, "kernelVersion": "6.1.0-27-amd64", "osImage": "Debian GNU/Linux 12",
                         "containerRuntimeVersion": "containerd://1.7.18", "kubeletVersion": "v1.31.4",
                         "kubeProxyVersion": "v1.31.4", "operatingSystem": "linux", "architecture": "amd64"},
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
        },
    }


def extender_args(pod: dict[str, Any], *, node_names: list[str] | None = None,
                  nodes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """ExtenderArgs: exactly one of NodeNames (nodeCacheCapable) / Nodes is set, the other null."""
    return {
        "Pod": pod,
        "Nodes": None if nodes is None else {"metadata": {}, "items": nodes},
        "NodeNames": node_names,
    }


def binding_args(pod: dict[str, Any], node: str) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": node}


# --- Online Boutique ----------------------------------------------------------------------------

BOUTIQUE_EDGES: dict[str, tuple[str, ...]] = {
    "frontend": ("adservice", "cartservice", "checkoutservice", "currencyservice", "productcatalogservice",
                 "recommendationservice", "shippingservice"),
    "checkoutservice": ("cartservice", "currencyservice", "emailservice", "paymentservice",
                        "productcatalogservice", "shippingservice"),
    "cartservice": ("redis-cart",),
    "recommendationservice": ("productcatalogservice",),
    "adservice": (),
    "currencyservice": (),
    "productcatalogservice": (),
    "shippingservice": (),
    "emailservice": (),
    "paymentservice": (),
    "redis-cart": (),
}


def boutique_spec(namespace: str = "boutique", name: str = "online-boutique") -> AppGroupSpec:
    sens = Sensitivity(0.5, 0.4, 0.1)
    workloads = tuple(
        WorkloadSpec(
            name=workload,
            selector=LabelSelector(match_labels={"app": workload}),
            weight=1.0,
            dependencies=tuple(DependencySpec(target=t, sensitivity=sens, max_network_cost=10.0) for t in targets),
        )
        for workload, targets in BOUTIQUE_EDGES.items()
    )
    return AppGroupSpec(namespace=namespace, name=name, workloads=workloads)


def load_testbed(*, with_topology: bool = True) -> list[str]:
    """Node rows and (optionally) the nominal topology of the paper's testbed; returns node names."""
    from apps.probes.scenario import load_scenario
    from apps.topology import services as topology_services
    from apps.topology.scenario_topology import topology_from_scenario

    scenario = load_scenario(PAPER_TESTBED)
    topology_services.load_nodes_from_scenario(scenario=scenario)
    if with_topology:
        store_topology(topology_from_scenario(scenario))
    return list(scenario.node_names)


def store_topology(topology: Any) -> Any:
    from apps.topology import services as topology_services

    return topology_services._store(topology=topology, source="imported", quantile=0.9, data_until=None)


def save_boutique(namespace: str = "boutique") -> Any:
    from apps.appgroups.services import save_appgroup

    return save_appgroup(spec=boutique_spec(namespace), origin="netaware")


# --- the scheduler-plugins NetworkOverhead fixture (KEP acceptance vector) -----------------------

KEP_NODES: dict[str, tuple[str, str]] = {
    "n-1": ("Z1", "us-west-1"), "n-2": ("Z1", "us-west-1"), "n-3": ("Z2", "us-west-1"), "n-4": ("Z2", "us-west-1"),
    "n-5": ("Z3", "us-east-1"), "n-6": ("Z3", "us-east-1"), "n-7": ("Z4", "us-east-1"), "n-8": ("Z4", "us-east-1"),
}


def kep_topology() -> Any:
    import numpy as np

    from apps.topology.topomath import Topology

    names = tuple(KEP_NODES)
    n = len(names)
    nan = np.full((n, n), np.nan)
    np.fill_diagonal(nan, 0.0)
    return Topology(
        nodes=names,
        zones=tuple(z for z, _ in KEP_NODES.values()),
        regions=tuple(r for _, r in KEP_NODES.values()),
        latency_ms=nan.copy(),
        bandwidth_mbps=np.full((n, n), np.nan),
        loss_pct=np.full((n, n), np.nan),
        inferred=np.zeros((n, n), dtype=bool),
        stale=np.zeros((n, n), dtype=bool),
        zone_costs={("Z1", "Z2"): 5.0, ("Z2", "Z1"): 5.0, ("Z3", "Z4"): 10.0, ("Z4", "Z3"): 10.0},
        region_costs={("us-west-1", "us-east-1"): 20.0, ("us-east-1", "us-west-1"): 20.0},
    )


def kep_spec(namespace: str = "default") -> AppGroupSpec:
    sens = Sensitivity(1.0, 0.0, 0.0)

    def dep(target: str) -> tuple[DependencySpec, ...]:
        return (DependencySpec(target=target, sensitivity=sens, max_network_cost=0.0),)

    return AppGroupSpec(
        namespace=namespace,
        name="a1",
        workloads=(
            WorkloadSpec("p1", LabelSelector({"app": "p1"}), dependencies=dep("p2")),
            WorkloadSpec("p2", LabelSelector({"app": "p2"}), dependencies=dep("p3")),
            WorkloadSpec("p3", LabelSelector({"app": "p3"})),
        ),
    )


def load_kep_fixture(*, placements: dict[str, str] | None = None) -> list[str]:
    """Nodes n-1..n-8 with zone/region costs, AppGroup a1 (p1→p2→p3, max cost 0) and placements
    (default: the acceptance vector's p1@n-2, p2@n-5, p3@n-8). Returns the node names."""
    from apps.appgroups.services import record_placement, save_appgroup
    from apps.topology.services import upsert_node

    for name, (zone, region) in KEP_NODES.items():
        upsert_node(name=name, zone=zone, region=region, labels={}, allocatable_cpu_millicores=4000,
                    allocatable_memory_bytes=16 * 2**30, ready=True, source="cluster")
    store_topology(kep_topology())
    save_appgroup(spec=kep_spec(), origin="netaware")
    for workload, node in (placements or {"p1": "n-2", "p2": "n-5", "p3": "n-8"}).items():
        record_placement(pod_namespace="default", pod_name=f"{workload}-placed", pod_uid=str(uuid.uuid4()),
                         node_name=node, labels={"app": workload}, source="watcher")
    return list(KEP_NODES)


def kube_scheduler_http_timeout() -> float:
    """Seconds kube-scheduler waits for an extender answer (the shipped KubeSchedulerConfiguration's
    ``httpTimeout``): what the extender promises, so the bound a test may put on an answer's time."""
    from pathlib import Path

    import yaml

    configmap = yaml.safe_load((Path(__file__).resolve().parents[2] / "k8s/scheduler/scheduler-config.yaml").read_text())
    extender = yaml.safe_load(configmap["data"]["scheduler-config.yaml"])["extenders"][0]
    timeout = str(extender["httpTimeout"])
    if timeout.endswith("ms"):
        return float(timeout[:-2]) / 1000.0
    if timeout.endswith("m"):
        return float(timeout[:-1]) * 60.0
    return float(timeout.removesuffix("s"))
