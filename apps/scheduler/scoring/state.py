"""Inputs of every scorer and filter: one immutable picture of the cluster.

The extender builds a ``ClusterState`` from the database (cached between requests); the evaluation
harness builds one per simulated step. Scorers never reach for anything outside it, which is what
makes them testable in milliseconds and identical in both places.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from apps.appgroups.graph import AppGroupSpec
from apps.probes.usage import NodeUsage as NodeUsage  # re-exported: part of the state's vocabulary
from apps.topology.topomath import Topology

from .indexes import StateIndexes, build_indexes
from .score_memo import ScoreMemo


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
    # The smallest maxSkew of the pod's topologySpreadConstraints over topology.kubernetes.io/zone with
    # whenUnsatisfiable: DoNotSchedule (0: none): a hard constraint the plan filter keeps as well.
    zone_max_skew: int = 0


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
class ClusterState:
    topology: Topology
    appgroups: tuple[AppGroupSpec, ...] = ()
    # (appgroup namespace, appgroup name, workload name) -> node of every placed pod of that workload
    placements: Mapping[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)
    nodes: Mapping[str, NodeResources] = field(default_factory=dict)
    usage: Mapping[str, NodeUsage] = field(default_factory=dict)
    # node -> number of bindings in the recent hot-spot window (the water-level design's hot-spot penalty)
    recent_bindings: Mapping[str, int] = field(default_factory=dict)
    # plans.PlanBook shared by the states one scheduler steps through (None: plans per state only)
    plan_book: Any = field(default=None, compare=False, repr=False)

    @cached_property
    def indexes(self) -> StateIndexes:
        """Lookup structures of this state (see ``indexes.py``), built on first use and kept with
        the state, never in module globals. ``evolve`` hands a new state the parts it can reuse;
        ``dataclasses.replace`` gives a state that builds its own (always correct, slower)."""
        return build_indexes(topology=self.topology, nodes=self.nodes, usage=self.usage)

    @cached_property
    def score_memo(self) -> ScoreMemo:
        """Results computed for pods against this exact state (filter's work reused by prioritize).
        It lives and dies with the state: a new state (any change) starts empty. (Not a cache: it
        can never serve anything out of date; "cache" is the extender's SchedulingCache.)"""
        return ScoreMemo()


def evolve(state: ClusterState, *, changed_nodes: Collection[str] | None = None, **changes: Any) -> ClusterState:
    """``state`` with ``changes`` (ClusterState fields), reusing the index parts they leave valid.

    ``changed_nodes`` names the only entries of ``changes["nodes"]`` that differ from ``state.nodes``;
    when those differ in requested resources alone (a bind, a deleted pod) the usage arrays are
    patched instead of rebuilt. Topology vectors survive anything but a new topology. This is how
    the extender's cache and the evaluation harness step from state to state without rebuilding
    5,000-node indexes per pod."""
    old = state.indexes
    topology = changes.get("topology", state.topology)
    nodes = changes.get("nodes", state.nodes)
    usage = changes.get("usage", state.usage)
    same_topology = topology is state.topology
    if same_topology and nodes is state.nodes and usage is state.usage:
        prepared = old
    elif same_topology and usage is state.usage and changed_nodes is not None and all(
        _same_place_and_capacity(state.nodes.get(n), nodes.get(n)) for n in changed_nodes
    ):
        prepared = old.with_requested([(state.nodes[n], nodes[n]) for n in changed_nodes])
    else:
        keep_places = same_topology and changed_nodes is not None and all(
            _same_place(state.nodes.get(n), nodes.get(n)) for n in changed_nodes)
        prepared = build_indexes(topology=topology, nodes=nodes, usage=usage,
                                 vectors=old.vectors if same_topology else None,
                                 places=old.places if keep_places else None)
    new = replace(state, **changes)
    new.__dict__["indexes"] = prepared  # pre-fill the cached_property (frozen: bypass __setattr__)
    return new


def _same_place(a: NodeResources | None, b: NodeResources | None) -> bool:
    return a is not None and b is not None and (a.zone, a.region) == (b.zone, b.region)


def _same_place_and_capacity(a: NodeResources | None, b: NodeResources | None) -> bool:
    return _same_place(a, b) and a is not None and b is not None and (
        a.allocatable_cpu_millicores, a.allocatable_memory_bytes) == (
        b.allocatable_cpu_millicores, b.allocatable_memory_bytes)
