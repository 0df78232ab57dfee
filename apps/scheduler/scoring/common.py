"""Shared pieces of the scorers: pod -> workload resolution, candidate indexing, constants.

Everything here is pure (no Django) so the extender and the evaluation harness resolve pods and
index nodes identically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from apps.appgroups.graph import AppGroupSpec, WorkloadSpec
from apps.topology.topomath import Topology

from .indexes import lookup, zone_region
from .state import ClusterState, PodInfo

__all__ = ["lookup"]

# kube-scheduler's framework.MaxNodeScore (default_plugins.py uses it as an integer, as Go does).
MAX_NODE_SCORE = 100.0
# Score every scorer gives when it has nothing to say (pod in no AppGroup, missing metrics,
# unknown node). Mid-scale so that it neither attracts nor repels compared with measured nodes.
NEUTRAL_SCORE = 50.0
# kube-scheduler's MaxExtenderPriority.
MAX_EXTENDER_PRIORITY = 10

# Pod labels that pin the AppGroup (value "name" or "namespace/name"); the second is the label the
# scheduler-plugins / Diktyo controllers put on AppGroup pods.
APPGROUP_PIN_LABELS: tuple[str, ...] = ("netaware.io/appgroup", "appgroup.diktyo.x-k8s.io")


@dataclass(frozen=True)
class WorkloadRef:
    """The AppGroup workload a pod belongs to."""

    group: AppGroupSpec
    workload: WorkloadSpec

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group.namespace, self.group.name, self.workload.name)

    @property
    def label(self) -> tuple[str, str]:
        """("namespace/appgroup", "workload"), the shape ScoreOutcome.workload reports."""
        return (f"{self.group.namespace}/{self.group.name}", self.workload.name)


def pinned_appgroup(pod: PodInfo) -> tuple[str, str] | None:
    """(namespace, name) of the AppGroup a pod label pins, or None when no pin label is set."""
    return pinned_appgroup_of(pod.namespace, pod.labels)


def pinned_appgroup_of(namespace: str, labels: Mapping[str, str]) -> tuple[str, str] | None:
    for label in APPGROUP_PIN_LABELS:
        value = labels.get(label)
        if value:
            if "/" in value:
                pin_namespace, _, name = value.partition("/")
                return (pin_namespace, name)
            return (namespace, value)
    return None


def resolve_workload(state: ClusterState, pod: PodInfo) -> tuple[WorkloadRef | None, tuple[str, ...]]:
    """The pod's workload among the state's AppGroups (see ``resolve_in``)."""
    return resolve_in(state.appgroups, namespace=pod.namespace, labels=pod.labels)


def resolve_in(appgroups: Sequence[AppGroupSpec], *, namespace: str, labels: Mapping[str, str]
               ) -> tuple[WorkloadRef | None, tuple[str, ...]]:
    """Find a pod's workload: AppGroups in the pod's namespace whose workload selector matches.

    A pin label restricts the search to that one AppGroup. Without a pin, AppGroups are tried in
    (name) order and the first matching workload wins; a note reports any ambiguity.
    """
    notes: list[str] = []
    pin = pinned_appgroup_of(namespace, labels)
    if pin is not None:
        groups = [g for g in appgroups if (g.namespace, g.name) == pin]
        if not groups:
            return None, (f"AppGroup {pin[0]}/{pin[1]} named by the pod's label does not exist",)
    else:
        groups = sorted((g for g in appgroups if g.namespace == namespace), key=lambda g: g.name)
    matches: list[WorkloadRef] = []
    for group in groups:
        workload = group.workload_for_labels(labels)
        if workload is not None:
            matches.append(WorkloadRef(group, workload))
    if not matches:
        return None, tuple(notes)
    if len(matches) > 1:
        others = ", ".join(f"{m.group.namespace}/{m.group.name}:{m.workload.name}" for m in matches[1:])
        notes.append(f"pod labels also match {others}; using the first AppGroup by name")
    return matches[0], tuple(notes)


def placed_nodes(state: ClusterState, group: AppGroupSpec, workload: str) -> tuple[str, ...]:
    return tuple(state.placements.get((group.namespace, group.name, workload), ()))


def topology_positions(topology: Topology, names: Sequence[str]) -> np.ndarray:
    """Index of every name in the topology, -1 where the topology does not know the node."""
    return lookup(topology.index, names)


def node_zone_region(state: ClusterState, name: str) -> tuple[str, str]:
    """Zone and region of a node: the cluster's node labels first, then the topology's view."""
    return zone_region(state.nodes, state.topology, name)


def param_float(params: Mapping[str, object], key: str, default: float, *, low: float | None = None,
                high: float | None = None) -> float:
    """A numeric scorer parameter with a clear error naming it."""
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key}: must be a number, got {value!r}")
    out = float(value)
    if out != out:
        raise ValueError(f"{key}: must be a number, got NaN")
    if low is not None and out < low:
        raise ValueError(f"{key}: must be >= {low}, got {out}")
    if high is not None and out > high:
        raise ValueError(f"{key}: must be <= {high}, got {out}")
    return out


def param_bool(params: Mapping[str, object], key: str, default: bool) -> bool:
    value = params.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key}: must be true or false, got {value!r}")
    return value
