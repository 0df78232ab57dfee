"""Inputs of every scorer and filter: one immutable picture of the cluster.

The extender builds a ``ClusterState`` from the database (cached between requests); the evaluation
harness builds one per simulated step. Scorers never reach for anything outside it, which is what
makes them testable in milliseconds and identical in both places.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from apps.appgroups.graph import AppGroupSpec
from apps.topology.topomath import Topology


@dataclass(frozen=True)
class PodInfo:
    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    cpu_request_millicores: int = 0
    memory_request_bytes: int = 0
    # Network bandwidth the pod asks for (bits/s), e.g. from a bandwidth extended resource; 0 = none.
    bandwidth_request_bps: float = 0.0


@dataclass(frozen=True)
class NodeResources:
    """Allocatable capacity and what bound pods already request (kube-scheduler's view)."""

    name: str
    zone: str = ""
    region: str = ""
    allocatable_cpu_millicores: int = 0
    allocatable_memory_bytes: int = 0
    requested_cpu_millicores: int = 0
    requested_memory_bytes: int = 0
    pod_count: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeUsage:
    """Measured utilisation (0..1) from Prometheus over the load-aware windows; None = unknown."""

    cpu_15m: float | None = None
    cpu_1h: float | None = None
    cpu_1d: float | None = None
    mem_15m: float | None = None
    mem_1h: float | None = None
    mem_1d: float | None = None
    cpu_stddev_1h: float | None = None
    mem_stddev_1h: float | None = None
    # Bandwidth use (bits/s) mean and stddev for CheckRiskNodeBandwidth, and NIC capacity.
    net_used_bps_mean: float | None = None
    net_used_bps_stddev: float | None = None
    net_capacity_bps: float | None = None
    stale: bool = False


@dataclass(frozen=True)
class ClusterState:
    topology: Topology
    appgroups: tuple[AppGroupSpec, ...] = ()
    # (appgroup namespace, appgroup name, workload name) -> node of every placed pod of that workload
    placements: Mapping[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)
    nodes: Mapping[str, NodeResources] = field(default_factory=dict)
    usage: Mapping[str, NodeUsage] = field(default_factory=dict)
    # node -> number of bindings in the recent hot-spot window (seed 002's hot-spot penalty)
    recent_bindings: Mapping[str, int] = field(default_factory=dict)
