"""NetworkOverhead (KEP NetworkMinCost) as scheduler-plugins implements it, vectorized.

Followed from pkg/networkaware/networkoverhead/networkoverhead.go:

* only the pod's *dependencies* count (upstream's GetDependencyList; dependents are not visited);
* for every placed pod of a dependency: cost 0 on the same node, 1 in the same zone, the zone-pair
  cost within a region, the region-pair cost across regions; 100 (MaxCost) when the pair's cost is
  not in the topology or the pod's node has neither zone nor region;
* Filter: per placed dependency pod, satisfied when on the same node / in the same zone / the pair
  cost <= maxNetworkCost, violated when the cost is larger or the pod's node has no zone and no
  region; a pair with no known cost counts as neither (upstream skips it). A node is rejected only
  when violated > satisfied. A dependency without max_network_cost (None) is not checked;
* Score: accumulated cost, normalized over the candidates to ``100 - 100 (c - min) / (max - min)``
  truncated to an integer as upstream's int64 conversion; when max == min every candidate gets 100
  (upstream leaves the all-zero case at 0; ranking is the same, we avoid reporting 0 as "best").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from apps.topology.topomath import SAME_NODE_COST, SAME_ZONE_COST, UNKNOWN_COST

from .common import MAX_NODE_SCORE, WorkloadRef, lookup, placed_nodes
from .state import ClusterState

MAX_COST = UNKNOWN_COST


@dataclass(frozen=True)
class OverheadResult:
    costs: np.ndarray  # accumulated cost per candidate
    satisfied: np.ndarray  # int per candidate
    violated: np.ndarray  # int per candidate
    has_dependencies: bool  # False = upstream's "score all nodes equally"


def overhead(state: ClusterState, ref: WorkloadRef, candidates: Sequence[str]) -> OverheadResult:
    """Accumulated cost and satisfied/violated counts of every candidate (PreFilter's maps)."""
    c = len(candidates)
    costs = np.zeros(c, dtype=np.float64)
    satisfied = np.zeros(c, dtype=np.int64)
    violated = np.zeros(c, dtype=np.int64)
    deps = ref.workload.dependencies
    placed = [(dep, placed_nodes(state, ref.group, dep.target)) for dep in deps]
    if not deps or not any(nodes for _, nodes in placed):
        return OverheadResult(costs, satisfied, violated, has_dependencies=bool(deps))
    places = state.indexes.places
    index = places.index
    # Costs depend only on (zone, region) "places", except on the same node: work on the few distinct
    # candidate and target places, then correct the same-node pairs.
    cand = lookup(index, candidates)
    cand_safe = np.where(cand >= 0, cand, 0)
    cz = np.where(cand >= 0, places.zone[cand_safe], 0)  # unknown node: no zone, no region
    cr = np.where(cand >= 0, places.region[cand_safe], 0)
    nr = places.region_cost.shape[0]
    c_places, c_of = np.unique(cz * nr + cr, return_inverse=True)
    pz, pr = c_places // nr, c_places % nr
    for dep, nodes in placed:
        if not nodes:
            continue
        rows, counts = np.unique(lookup(index, nodes), return_counts=True)
        t_safe = np.where(rows >= 0, rows, 0)
        tz = np.where(rows >= 0, places.zone[t_safe], 0)
        tr = np.where(rows >= 0, places.region[t_safe], 0)
        t_places, t_of = np.unique(tz * nr + tr, return_inverse=True)
        t_counts = np.bincount(t_of, weights=counts).astype(np.float64)
        qz, qr = t_places // nr, t_places % nr
        t_blank = (qz == 0) & (qr == 0)  # neither zone nor region
        same_region = pr[:, None] == qr[None, :]
        same_zone = same_region & (pz[:, None] == qz[None, :])
        pair_cost = np.where(same_region, places.zone_cost[pz[:, None], qz[None, :]],
                             places.region_cost[pr[:, None], qr[None, :]])
        unknown_cost = np.isnan(pair_cost)
        cost = np.where(unknown_cost, MAX_COST, pair_cost)
        cost = np.where(same_zone, SAME_ZONE_COST, cost)
        cost = np.where(t_blank[None, :], MAX_COST, cost)
        costs += dep.weight * (cost @ t_counts)[c_of]  # a heavier edge's cost counts more (1 = upstream)
        # Same node: cost 0 (instead of the same-place cost) and always satisfied.
        t_ids = np.where(rows >= 0, rows, -1)
        hit = np.nonzero((cand >= 0) & np.isin(cand, t_ids[t_ids >= 0]))[0]
        j = np.searchsorted(rows, cand[hit])
        blank_j = t_blank[t_of[j]]
        costs[hit] += dep.weight * counts[j] * (SAME_NODE_COST - np.where(blank_j, MAX_COST, SAME_ZONE_COST))
        if dep.max_network_cost is None:
            continue
        limit = dep.max_network_cost
        ok = ~t_blank[None, :] & (same_zone | (~unknown_cost & (pair_cost <= limit)))
        bad = t_blank[None, :] | (~same_zone & ~unknown_cost & (pair_cost > limit))
        satisfied += np.rint(ok @ t_counts).astype(np.int64)[c_of]
        violated += np.rint(bad @ t_counts).astype(np.int64)[c_of]
        moved = np.where(blank_j, counts[j], 0)
        satisfied[hit] += moved
        violated[hit] -= moved
    return OverheadResult(costs, satisfied, violated, has_dependencies=True)


def normalize_costs(costs: np.ndarray) -> np.ndarray:
    """Upstream NormalizeScore: 100 - int(100 (c - min) / (max - min)); all equal -> 100."""
    if costs.size == 0:
        return costs.astype(np.float64)
    lo, hi = float(costs.min()), float(costs.max())
    if hi == lo:
        return np.full(costs.shape, MAX_NODE_SCORE)
    norm = np.trunc(MAX_NODE_SCORE * (costs - lo) / (hi - lo))
    return MAX_NODE_SCORE - norm


def filter_reason(node: str, satisfied: int, violated: int) -> str:
    return (f"Node {node} does not meet several network requirements from Workload dependencies: "
            f"Satisfied: {satisfied} Violated: {violated}")
