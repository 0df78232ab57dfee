"""Framework-free description of an AppGroup's communication graph.

These frozen dataclasses are the contract between the Django models (apps.appgroups), the CRD
import/export code, the scheduler's scorers and the evaluation harness: each of them builds or
reads an ``AppGroupSpec`` and nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# How strictly an AppGroup is kept together: soft (a plan is a preference), or all of it in one zone /
# one region, or its pods wait. ``spec.topologyMode`` and the scheduler profile's plan mode.
TOPOLOGY_MODES = ("soft", "zone", "region")
# Whether the rebalancer moves running pods toward the best plan: never (default), report only, or evict.
REBALANCE_MODES = ("off", "dry-run", "on")


@dataclass(frozen=True)
class Sensitivity:
    """How much a dependency cares about latency, bandwidth and loss (each >= 0, sum > 0)."""

    latency: float
    bandwidth: float
    lossrate: float

    @property
    def total(self) -> float:
        return self.latency + self.bandwidth + self.lossrate

    def normalized(self) -> Sensitivity:
        """Sensitivities scaled to sum to 1 (ComputeScore expects weights on that scale)."""
        total = self.total
        if total <= 0:
            raise ValueError("sensitivity weights must have a positive sum")
        return Sensitivity(self.latency / total, self.bandwidth / total, self.lossrate / total)


@dataclass(frozen=True)
class LabelSelector:
    """A Kubernetes label selector (matchLabels plus matchExpressions)."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    # (key, operator, values) with operator one of In, NotIn, Exists, DoesNotExist
    match_expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels.items():
            if labels.get(key) != value:
                return False
        for key, operator, values in self.match_expressions:
            present = key in labels
            if operator == "In" and (not present or labels[key] not in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return bool(self.match_labels or self.match_expressions)


# A dependency's weight when its document gives none: every edge counts the same (the paper's score).
DEFAULT_DEPENDENCY_WEIGHT = 1.0


@dataclass(frozen=True)
class DependencySpec:
    target: str
    sensitivity: Sensitivity
    max_network_cost: float | None = None
    min_bandwidth_bps: float | None = None
    # How much this edge counts against the others (> 0; e.g. its share of the observed traffic, the
    # median edge 1). Scorers and plans multiply the edge's network cost by it; 1 everywhere is the
    # unweighted score, so an AppGroup without weights schedules exactly as before.
    weight: float = DEFAULT_DEPENDENCY_WEIGHT


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    selector: LabelSelector
    weight: float = 1.0
    dependencies: tuple[DependencySpec, ...] = ()
    controller_kind: str = ""
    controller_name: str = ""
    # Expected footprint (optional hints in the CR): used by cold-start scoring and the evaluation.
    replicas: int = 1
    cpu_request_millicores: int = 0
    memory_request_bytes: int = 0
    # High availability: spread the replicas over at least this many zones (None: the AppGroup's
    # ``min_zones``; 1 exempts a workload from an AppGroup-wide minimum).
    min_zones: int | None = None


@dataclass(frozen=True)
class AppGroupSpec:
    namespace: str
    name: str
    workloads: tuple[WorkloadSpec, ...]
    topology_sorting_algorithm: str = "KahnSort"
    # soft: a placement plan is a preference; zone / region: all of the AppGroup in one zone / region,
    # or its pods wait (enforced by the scheduler's plan filter, together with the profile's mode).
    topology_mode: str = "soft"
    # off: running pods stay where they are; dry-run: the rebalancer reports its moves; on: it makes them.
    rebalance_mode: str = "off"
    # High availability: every workload's replicas over at least this many zones unless the workload
    # says otherwise (1: no requirement). The planner then builds one *cell* per zone.
    min_zones: int = 1

    def min_zones_of(self, workload: WorkloadSpec) -> int:
        """The zones ``workload``'s replicas must span: its own ``min_zones``, else the AppGroup's."""
        return workload.min_zones if workload.min_zones is not None else self.min_zones

    def workload(self, name: str) -> WorkloadSpec:
        for workload in self.workloads:
            if workload.name == name:
                return workload
        raise KeyError(name)

    def workload_for_labels(self, labels: Mapping[str, str]) -> WorkloadSpec | None:
        """The first workload (in declaration order) whose selector matches the pod's labels."""
        for workload in self.workloads:
            if workload.selector.matches(labels):
                return workload
        return None

    def dependents_of(self, name: str) -> tuple[tuple[WorkloadSpec, DependencySpec], ...]:
        """Workloads that declare ``name`` as a dependency, with that dependency's spec."""
        return tuple(
            (workload, dep) for workload in self.workloads for dep in workload.dependencies if dep.target == name
        )
