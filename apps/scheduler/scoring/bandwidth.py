"""Bandwidth filters and score: minimum bandwidth toward dependencies, CheckRiskNodeBandwidth.

Min bandwidth (our rule, docs/scoring.md): for every dependency with ``min_bandwidth_bps`` and for
every dependent that declares one toward this workload, *every* node hosting a placed pod of that
workload must be reachable from the candidate with measured bandwidth >= the minimum (direction:
candidate -> dependency, dependent -> candidate). The same node always passes; an unknown
bandwidth passes too (missing measurements never block scheduling; diagnose reports them).

CheckRiskNodeBandwidth (the scheduler-plugins KEP "Network-Aware Scheduling", after Trimaran's LoadVariationRiskBalancing):
``mu = clip((used_mean + pod_request) / capacity)``, ``sigma = clip(used_stddev / capacity)``,
``sigma = clip(margin * sigma ** (1 / sensitivity))``, ``risk = (mu + sigma) / 2``; the node is
rejected when risk > threshold. Missing or stale usage -> the node passes and scores neutral.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from .common import MAX_NODE_SCORE, NEUTRAL_SCORE, WorkloadRef, placed_nodes, topology_positions
from .state import ClusterState, PodInfo

DEFAULT_MARGIN = 1.0
DEFAULT_SENSITIVITY = 2.0
DEFAULT_RISK_THRESHOLD = 0.75


@dataclass(frozen=True)
class _Requirement:
    workload: str
    minimum_bps: float
    reverse: bool  # True: dependent -> candidate


def _requirements(ref: WorkloadRef) -> list[_Requirement]:
    out = [_Requirement(dep.target, float(dep.min_bandwidth_bps), False)
           for dep in ref.workload.dependencies if dep.min_bandwidth_bps]
    out += [_Requirement(w.name, float(dep.min_bandwidth_bps), True)
            for w, dep in ref.group.dependents_of(ref.workload.name) if dep.min_bandwidth_bps]
    return out


def min_bandwidth_failures(state: ClusterState, ref: WorkloadRef, candidates: Sequence[str]) -> dict[str, str]:
    """Candidate -> reason, for candidates below some dependency's minimum bandwidth."""
    reqs = _requirements(ref)
    if not reqs:
        return {}
    topo = state.topology
    cand = topology_positions(topo, candidates)
    known = cand >= 0
    safe = np.where(known, cand, 0)
    names = np.array(candidates, dtype=object)
    failures: dict[str, str] = {}
    for req in reqs:
        nodes = sorted({n for n in placed_nodes(state, ref.group, req.workload) if n in topo.index})
        if not nodes:
            continue
        tpos = topology_positions(topo, nodes)
        if req.reverse:
            bw = topo.bandwidth_mbps[np.ix_(tpos, safe)].T  # (C, U): dependent -> candidate
        else:
            bw = topo.bandwidth_mbps[np.ix_(safe, tpos)]  # (C, U): candidate -> dependency
        bps = bw * 1e6
        same = names[:, None] == np.array(nodes, dtype=object)[None, :]
        below = ~same & ~np.isnan(bps) & (bps < req.minimum_bps) & known[:, None]
        for i in np.nonzero(below.any(axis=1))[0]:
            name = str(names[i])
            if name in failures:
                continue
            j = int(np.nonzero(below[i])[0][0])
            failures[name] = (
                f"Node {name}: bandwidth {'from' if req.reverse else 'to'} {req.workload} on {nodes[j]} "
                f"is {bps[i, j] / 1e6:.1f} Mbps, below the required {req.minimum_bps / 1e6:.1f} Mbps"
            )
    return failures


def bandwidth_risk(state: ClusterState, pod: PodInfo, candidates: Sequence[str], *,
                   margin: float = DEFAULT_MARGIN, sensitivity: float = DEFAULT_SENSITIVITY,
                   rows: np.ndarray | None = None) -> np.ndarray:
    """Node risk in [0, 1] per candidate; NaN where usage is missing or stale."""
    arrays = state.indexes.usage
    rows = rows if rows is not None else arrays.rows(candidates)
    mean = arrays.take(arrays.net_mean, rows)
    std = np.nan_to_num(arrays.take(arrays.net_std, rows), nan=0.0)
    cap = arrays.take(arrays.net_cap, rows)
    cap = np.where(cap > 0, cap, np.nan)
    req = max(pod.bandwidth_request_bps, 0.0)
    used = np.clip(mean, 0, cap)
    stdev = np.clip(std, 0, cap)
    mu = np.clip((used + req) / cap, 0.0, 1.0)
    sigma = np.clip(stdev / cap, 0.0, 1.0)
    if sensitivity > 0:  # the profile validation rejects sensitivity <= 0
        sigma = np.power(sigma, 1.0 / sensitivity)
    sigma = np.clip(sigma * margin, 0.0, 1.0)
    return cast(np.ndarray, (mu + sigma) / 2)


def bandwidth_risk_failures(state: ClusterState, pod: PodInfo, candidates: Sequence[str], *,
                            margin: float = DEFAULT_MARGIN, sensitivity: float = DEFAULT_SENSITIVITY,
                            threshold: float = DEFAULT_RISK_THRESHOLD,
                            risk: np.ndarray | None = None) -> dict[str, str]:
    """Nodes whose risk exceeds ``threshold``. ``risk``: ``bandwidth_risk(...)`` when the caller has it."""
    if risk is None:
        risk = bandwidth_risk(state, pod, candidates, margin=margin, sensitivity=sensitivity)
    with np.errstate(invalid="ignore"):
        over = np.flatnonzero(risk > threshold)  # NaN (unknown usage) never fails
    return {
        candidates[i]: f"Node {candidates[i]}: bandwidth risk {risk[i]:.3f} exceeds the threshold {threshold:.3f}"
        for i in over.tolist()
    }


def bandwidth_risk_scores(state: ClusterState, pod: PodInfo, candidates: Sequence[str], *,
                          margin: float = DEFAULT_MARGIN, sensitivity: float = DEFAULT_SENSITIVITY,
                          risk: np.ndarray | None = None) -> np.ndarray:
    """(1 - risk) * 100, neutral where usage is missing or stale."""
    if risk is None:
        risk = bandwidth_risk(state, pod, candidates, margin=margin, sensitivity=sensitivity)
    return np.where(np.isnan(risk), NEUTRAL_SCORE, (1.0 - risk) * MAX_NODE_SCORE)
