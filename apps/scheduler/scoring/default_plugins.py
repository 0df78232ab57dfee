"""kube-scheduler's default score plugins that matter for placing an AppGroup, and resource fit.

The hybrid profiles run our extender *beside* these plugins, so the evaluation harness has to
reproduce them faithfully to say anything about a hybrid deployment. Formulas and integer
arithmetic follow kube-scheduler (pkg/scheduler/framework/plugins, v1.3x):

- NodeResourcesFit / LeastAllocated (weight 1): per resource ``(allocatable - requested) * 100 //
  allocatable`` with the incoming pod's request added (a request of 0 counts as 100m CPU / 200 MiB,
  the scheduler's non-zero defaults), weighted mean over cpu and memory (weights 1, 1), integer.
- NodeResourcesBalancedAllocation (weight 1): ``int((1 - std) * 100)`` over the cpu and memory
  fractions requested/allocatable (pod included, capped at 1); for two resources std = |f1 - f2| / 2.
- PodTopologySpread (weight 2), the system default constraints (``defaultingType: System``):
  zone maxSkew 5 and hostname maxSkew 3, both ScheduleAnyway, matching the pods of the same workload
  (the Service/ReplicaSet selector kube-scheduler derives). Raw score per node is
  ``round(sum_c cnt_c * log(domains_c + 2) + (maxSkew_c - 1))``, normalised to
  ``100 * (max + min - s) // max``.
- NodeResourcesFit filter: cpu and memory requests must fit into allocatable minus requested, and
  the node must have room for one more pod (110 by default).

TaintToleration, NodeAffinity, InterPodAffinity and ImageLocality give every node the same score
for an AppGroup without taints, affinities or pre-pulled images, so they cannot change a ranking
and are left out of the scores (documented in docs/evaluation.md). The filters of NodeAffinity
(nodeSelector, required node affinity) and TaintToleration are here (``node_constraints_reason``):
bind checks them (defence in depth).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import common
from .common import MAX_EXTENDER_PRIORITY
from .state import ClusterState, NodeResources, PodInfo

# kube-scheduler's plugins compute in int64: the same bound, as an integer.
MAX_NODE_SCORE = int(common.MAX_NODE_SCORE)
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
DEFAULT_MAX_PODS = 110

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"

NODE_RESOURCES_FIT = "NodeResourcesFit"
BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"

# kube-scheduler's default MultiPoint weights ("Kubernetes In-Tree Scheduler Plugins: A Complete Reference", "Default Plugin Configuration").
DEFAULT_WEIGHTS: Mapping[str, int] = {NODE_RESOURCES_FIT: 1, BALANCED_ALLOCATION: 1, POD_TOPOLOGY_SPREAD: 2}


@dataclass(frozen=True)
class SpreadConstraint:
    topology_key: str
    max_skew: int


# PodTopologySpread's systemDefaultConstraints (both whenUnsatisfiable: ScheduleAnyway).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[SpreadConstraint, ...] = (
    SpreadConstraint(ZONE_KEY, 5),
    SpreadConstraint(HOSTNAME_KEY, 3),
)


@dataclass(frozen=True)
class DefaultScores:
    """Weighted sum of the default plugins per node, and each plugin's 0..100 score."""

    total: Mapping[str, int]
    breakdown: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def least_allocated_score(
    requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int] | None = None
) -> int:
    """LeastAllocated over resources; ``requested`` already includes the incoming pod."""
    weights = weights if weights is not None else [1] * len(requested)
    node_score = 0
    weight_sum = 0
    for req, cap, weight in zip(requested, allocatable, weights, strict=True):
        resource_score = 0 if cap == 0 or req > cap else (cap - req) * MAX_NODE_SCORE // cap
        node_score += resource_score * weight
        weight_sum += weight
    return node_score // weight_sum if weight_sum else 0


def balanced_allocation_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """BalancedAllocation: 100 * (1 - std of the requested fractions)."""
    fractions = [min(req / cap, 1.0) for req, cap in zip(requested, allocatable, strict=True) if cap != 0]
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def non_zero_request(pod: PodInfo) -> tuple[int, int]:
    """The pod's (cpu, memory) request as the scorers see it (zero -> scheduler defaults)."""
    cpu = pod.cpu_request_millicores or DEFAULT_MILLI_CPU_REQUEST
    memory = pod.memory_request_bytes or DEFAULT_MEMORY_REQUEST
    return cpu, memory


def resource_fit_reason(node: NodeResources, pod: PodInfo, *, max_pods: int = DEFAULT_MAX_PODS) -> str | None:
    """Why the pod does not fit on the node (kube-scheduler's wording), or None when it fits."""
    reasons = []
    if node.pod_count + 1 > max_pods:
        reasons.append("Too many pods")
    if node.requested_cpu_millicores + pod.cpu_request_millicores > node.allocatable_cpu_millicores:
        reasons.append("Insufficient cpu")
    if node.requested_memory_bytes + pod.memory_request_bytes > node.allocatable_memory_bytes:
        reasons.append("Insufficient memory")
    return ", ".join(reasons) or None


def filter_resource_fit(
    nodes: Mapping[str, NodeResources], pod: PodInfo, candidates: Iterable[str], *, max_pods: int = DEFAULT_MAX_PODS
) -> tuple[list[str], dict[str, str]]:
    """(nodes that fit, {node: reason} for those that do not); unknown nodes fail."""
    passed: list[str] = []
    failed: dict[str, str] = {}
    for name in candidates:
        node = nodes.get(name)
        if node is None:
            failed[name] = "node not found"
            continue
        reason = resource_fit_reason(node, pod, max_pods=max_pods)
        if reason is None:
            passed.append(name)
        else:
            failed[name] = reason
    return passed, failed


def node_resources_fit_scores(nodes: Sequence[NodeResources], pod: PodInfo) -> dict[str, int]:
    cpu, memory = non_zero_request(pod)
    return {
        node.name: least_allocated_score(
            [node.requested_cpu_millicores + cpu, node.requested_memory_bytes + memory],
            [node.allocatable_cpu_millicores, node.allocatable_memory_bytes],
        )
        for node in nodes
    }


def balanced_allocation_scores(nodes: Sequence[NodeResources], pod: PodInfo) -> dict[str, int]:
    return {
        node.name: balanced_allocation_score(
            [node.requested_cpu_millicores + pod.cpu_request_millicores,
             node.requested_memory_bytes + pod.memory_request_bytes],
            [node.allocatable_cpu_millicores, node.allocatable_memory_bytes],
        )
        for node in nodes
    }


def _label(node: NodeResources, key: str) -> str | None:
    if key in node.labels:
        return node.labels[key]
    if key == HOSTNAME_KEY:
        return node.name
    if key == ZONE_KEY:
        return node.zone or None
    return None


def pod_topology_spread_scores(
    nodes: Sequence[NodeResources],
    matching_pods_per_node: Mapping[str, int],
    constraints: Sequence[SpreadConstraint] = SYSTEM_DEFAULT_CONSTRAINTS,
    all_nodes: Mapping[str, NodeResources] | None = None,
) -> dict[str, int]:
    """Normalised PodTopologySpread scores for the candidate (filtered) nodes.

    ``matching_pods_per_node`` counts, per node, the already-placed pods the constraints select.
    Pods on nodes outside the candidates (``all_nodes``) still count toward their zone, as in
    kube-scheduler's PreScore, which walks every node of the snapshot.
    """
    if not nodes:
        return {}
    # Nodes missing a constraint's topology label are ignored (score 0), as with system defaults.
    ignored = {n.name for n in nodes if any(_label(n, c.topology_key) is None for c in constraints)}
    counted = [n for n in nodes if n.name not in ignored]
    pair_counts: dict[tuple[str, str], int] = {}
    domains: list[int] = []
    for c in constraints:
        values = {_label(n, c.topology_key) for n in counted}
        domains.append(len(values))
    for c in constraints:
        if c.topology_key == HOSTNAME_KEY:
            continue
        for n in counted:
            value = _label(n, c.topology_key)
            assert value is not None
            pair_counts.setdefault((c.topology_key, value), 0)
    # Placed pods on any node contribute to their domain's count (only domains among candidates matter).
    node_index = dict(all_nodes) if all_nodes is not None else {}
    node_index.update({n.name: n for n in nodes})
    for name, count in matching_pods_per_node.items():
        node = node_index.get(name)
        if node is None or any(_label(node, c.topology_key) is None for c in constraints):
            continue
        for c in constraints:
            if c.topology_key == HOSTNAME_KEY:
                continue
            value = _label(node, c.topology_key)
            if value is not None and (c.topology_key, value) in pair_counts:
                pair_counts[(c.topology_key, value)] += count
    raw: dict[str, int] = {}
    for n in counted:
        score = 0.0
        for c, size in zip(constraints, domains, strict=True):
            if c.topology_key == HOSTNAME_KEY:
                cnt = matching_pods_per_node.get(n.name, 0)
            else:
                value = _label(n, c.topology_key)
                assert value is not None
                cnt = pair_counts[(c.topology_key, value)]
            score += cnt * math.log(size + 2) + (c.max_skew - 1)
        raw[n.name] = math.floor(score + 0.5)  # Go's math.Round for non-negative values
    out: dict[str, int] = {name: 0 for name in ignored}
    if not raw:
        return out
    low, high = min(raw.values()), max(raw.values())
    for name, s in raw.items():
        out[name] = MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - s) // high
    return out


def matching_pods_per_node(state: ClusterState, pod: PodInfo) -> dict[str, int]:
    """Placed pods of the pod's own workload per node (the selector of its Service/controller)."""
    counts: dict[str, int] = {}
    for group in state.appgroups:
        if group.namespace != pod.namespace:
            continue
        workload = group.workload_for_labels(pod.labels)
        if workload is None:
            continue
        for node in state.placements.get((group.namespace, group.name, workload.name), ()):
            counts[node] = counts.get(node, 0) + 1
        break
    return counts


def default_plugin_scores(
    state: ClusterState,
    pod: PodInfo,
    candidates: Sequence[str],
    *,
    weights: Mapping[str, int] = DEFAULT_WEIGHTS,
    constraints: Sequence[SpreadConstraint] = SYSTEM_DEFAULT_CONSTRAINTS,
) -> DefaultScores:
    """Each default plugin's 0..100 score for the (already filtered) candidates and their weighted sum."""
    nodes = [state.nodes[name] for name in candidates]
    breakdown: dict[str, Mapping[str, int]] = {}
    if weights.get(NODE_RESOURCES_FIT, 0):
        breakdown[NODE_RESOURCES_FIT] = node_resources_fit_scores(nodes, pod)
    if weights.get(BALANCED_ALLOCATION, 0):
        breakdown[BALANCED_ALLOCATION] = balanced_allocation_scores(nodes, pod)
    if weights.get(POD_TOPOLOGY_SPREAD, 0):
        breakdown[POD_TOPOLOGY_SPREAD] = pod_topology_spread_scores(
            nodes, matching_pods_per_node(state, pod), constraints, state.nodes
        )
    total = {
        name: sum(weights[plugin] * scores[name] for plugin, scores in breakdown.items()) for name in candidates
    }
    return DefaultScores(total=total, breakdown=breakdown)


def combine_with_extender(
    plugin_total: Mapping[str, int], extender_scores: Mapping[str, int], extender_weight: int
) -> dict[str, int]:
    """kube-scheduler's rule: plugin weighted sum + extender score * weight * (100 / 10)."""
    factor = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    return {
        name: plugin_total.get(name, 0) + extender_scores.get(name, 0) * extender_weight * factor
        for name in plugin_total.keys() | extender_scores.keys()
    }


# --- vectorized (numpy) forms: the same integer arithmetic over arrays of candidate nodes ----------


@dataclass(frozen=True)
class NodeArrays:
    """Candidates as columns: allocatable and requested cpu/memory, and each node's zone code
    (-1: no zone label; PodTopologySpread then ignores the node, as with system defaults)."""

    alloc_cpu: np.ndarray
    alloc_mem: np.ndarray
    req_cpu: np.ndarray
    req_mem: np.ndarray
    zone: np.ndarray


def least_allocated_scores(nodes: NodeArrays, pod: PodInfo) -> np.ndarray:
    """``node_resources_fit_scores`` over arrays (int64)."""
    cpu, memory = non_zero_request(pod)
    total = np.zeros(nodes.alloc_cpu.size, dtype=np.int64)
    for req, cap in ((nodes.req_cpu + cpu, nodes.alloc_cpu), (nodes.req_mem + memory, nodes.alloc_mem)):
        req, cap = req.astype(np.int64), cap.astype(np.int64)
        ok = (cap != 0) & (req <= cap)
        total += np.where(ok, (cap - req) * MAX_NODE_SCORE // np.where(ok, cap, 1), 0)
    return total // 2


def balanced_allocation_vector(nodes: NodeArrays, pod: PodInfo) -> np.ndarray:
    """``balanced_allocation_scores`` over arrays (int64)."""
    fractions = []
    for req, cap in ((nodes.req_cpu + pod.cpu_request_millicores, nodes.alloc_cpu),
                     (nodes.req_mem + pod.memory_request_bytes, nodes.alloc_mem)):
        with np.errstate(divide="ignore", invalid="ignore"):
            fractions.append(np.where(cap != 0, np.minimum(req / np.where(cap != 0, cap, 1), 1.0), np.nan))
    both = ~np.isnan(fractions[0]) & ~np.isnan(fractions[1])
    std = np.where(both, np.abs(np.nan_to_num(fractions[0]) - np.nan_to_num(fractions[1])) / 2, 0.0)
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def pod_topology_spread_vector(nodes: NodeArrays, hostname_counts: np.ndarray, zone_totals: np.ndarray,
                               constraints: Sequence[SpreadConstraint] = SYSTEM_DEFAULT_CONSTRAINTS) -> np.ndarray:
    """``pod_topology_spread_scores`` with the system default constraints (zone + hostname) over arrays.

    ``hostname_counts``: matching pods on each candidate; ``zone_totals``: matching pods per zone code
    over every node of the cluster that carries the labels (kube-scheduler's PreScore walks them all)."""
    n = nodes.zone.size
    out = np.zeros(n, dtype=np.int64)
    counted = nodes.zone >= 0
    if not counted.any():
        return out
    zones = nodes.zone[counted]
    score = np.zeros(zones.size)
    for c in constraints:
        if c.topology_key == HOSTNAME_KEY:
            domains = zones.size  # every counted candidate is its own hostname domain
            cnt = hostname_counts[counted]
        elif c.topology_key == ZONE_KEY:
            domains = np.unique(zones).size
            cnt = zone_totals[zones]
        else:
            raise ValueError(f"vectorized PodTopologySpread knows zone and hostname, not {c.topology_key}")
        score = score + cnt * math.log(domains + 2) + (c.max_skew - 1)
    raw = np.floor(score + 0.5).astype(np.int64)
    low, high = int(raw.min()), int(raw.max())
    out[counted] = MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - raw) // high
    return out


# --- NodeAffinity and TaintToleration filters: the pod's node constraints ---------------------------
#
# kube-scheduler runs these before any extender, so filter does not repeat them; bind does (defence in
# depth: a bind for a node the pod cannot use is refused with what does not match). Semantics follow
# k8s.io/component-helpers/scheduling/corev1 (nodeaffinity, ToleratesTaint) and the plugins' filters.

NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_SELECTOR_OPERATORS = ("In", "NotIn")  # matchFields: only metadata.name, only these
TOLERATION_OPERATORS = ("Exists", "Equal")
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")  # PreferNoSchedule only scores


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` (labels) or ``matchFields`` (``metadata.name``) entry."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        shown = self.values[0] if self.operator in ("Gt", "Lt") and self.values else f"[{', '.join(self.values)}]"
        return f"{self.key} {self.operator} {shown}"


@dataclass(frozen=True)
class NodeSelectorTerm:
    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""

    def describe(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""  # "" tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True  # an empty key with Exists tolerates every taint
        return self.value == taint.value


@dataclass(frozen=True)
class NodeConstraints:
    """What a pod requires of its node: ``spec.nodeSelector``, the required node affinity
    (``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``; None = none given) and
    ``spec.tolerations``."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()


NO_CONSTRAINTS = NodeConstraints()


def _requirement_holds(req: Requirement, value: str | None) -> bool:
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    if req.operator in ("Gt", "Lt"):  # integers on both sides, else no match (as Kubernetes)
        try:
            have, bound = int(value or ""), int(req.values[0])
        except (ValueError, IndexError):
            return False
        return have > bound if req.operator == "Gt" else have < bound
    return False


def _term_mismatch(term: NodeSelectorTerm, node_name: str, labels: Mapping[str, str]) -> str | None:
    """The first requirement of ``term`` the node fails, described with what the node has."""
    if not term.match_expressions and not term.match_fields:
        return "the term is empty (matches no node)"
    for req in term.match_expressions:
        value = labels.get(req.key)
        if not _requirement_holds(req, value):
            has = f"{req.key}={value}" if value is not None else f"no label {req.key}"
            return f"{req.describe()} (node has {has})"
    for req in term.match_fields:
        if req.key != "metadata.name" or req.operator not in FIELD_SELECTOR_OPERATORS or not _requirement_holds(
                req, node_name):
            return f"matchFields {req.describe()} (node is {node_name})"
    return None


def node_constraints_reason(constraints: NodeConstraints, *, node_name: str, labels: Mapping[str, str],
                            taints: Sequence[Taint]) -> str | None:
    """Why the pod may not run on the node (nodeSelector, required node affinity, untolerated
    NoSchedule/NoExecute taints, in kube-scheduler's order), naming what does not match; None if it may."""
    for key, wanted in constraints.node_selector.items():
        if labels.get(key) != wanted:
            has = f"{key}={labels[key]}" if key in labels else f"no label {key}"
            return f"node {node_name} does not match the pod's nodeSelector {key}={wanted} (node has {has})"
    if constraints.required_terms is not None:
        misses = []
        for i, term in enumerate(constraints.required_terms):
            miss = _term_mismatch(term, node_name, labels)
            if miss is None:
                break
            misses.append(f"term {i}: {miss}")
        else:
            detail = "; ".join(misses) or "no nodeSelectorTerms"
            return f"node {node_name} matches none of the pod's required node affinity terms ({detail})"
    for taint in taints:
        if taint.effect in FILTERING_EFFECTS and not any(t.tolerates(taint) for t in constraints.tolerations):
            return f"node {node_name} has the taint {taint.describe()}, which the pod does not tolerate"
    return None
