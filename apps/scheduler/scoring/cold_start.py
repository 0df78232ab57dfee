"""Cold start: score a pod none of whose dependencies or dependents is placed yet.

The paper and scheduler-plugins score every node equally here, which is how the paper's
recommendation service landed in the FAR zone. Instead we score each candidate by how well it
connects to where the *rest of its AppGroup* can run:

* sensitivity: the pod's own dependency/dependent sensitivities (each normalized, averaged with the
  workload weights w / w'); a workload with no edges uses the group's average;
* demand D: the group's expected pods (sum of ``replicas`` hints) not placed yet, minus this one
  (at least 1);
* capacity: how many average group pods (replica-weighted cpu/memory hints) still fit on each node
  (allocatable - requested), capped at ``max_pods_per_node`` (default 2) because the rest of the
  group will be spread by kube-scheduler's own plugins rather than packed onto one node;
* fill term: from the candidate, take target nodes best-connected first (ComputeScore, same-node
  score on itself) until their capacity covers D; the capacity-weighted mean of those scores;
* placed term: when other pods of the group (not neighbours of this pod) are already placed, the
  mean ComputeScore toward them, weighted by the placed fraction f = placed / (placed + D):
  ``raw = f placed + (1 - f) fill``;
* relative, graded scale (``graded_scale``): the cold-start score only ranks candidates (nothing
  is placed to be absolute about), by their gap ``g = best_raw - raw``. kube-scheduler sees only
  ``round(total / 10)``, so the mapping is piecewise: a steep linear step 100 -> 90 over
  ``g in [0, knee]`` (knee 0.005; within knee/2 of the best still maps to extender 10, so
  measurement noise does not split a zone), then logarithmic 90 -> 0 over ``g in [knee, spread]``
  (spread 1.0, the whole ComputeScore range): ``90 (1 - ln(g / knee) / ln(spread / knee))``. Each
  extender step then stands for the same *ratio* of gaps (about x1.8), so the near-best zone is
  clearly below the best (extender <= 9) and worse zones keep distinct, ordered integers instead of
  all collapsing to 0 (paper testbed, frontend: A / B / C / FAR = 10 / 7 / 5 / 2).

Used only when no neighbour is placed; once one is, Algorithm 2 takes over. Above ``sample`` target
nodes, each zone keeps its highest-capacity nodes (about sample / zones of them) standing for the
zone's whole capacity, so the candidate's own zone is always represented (cost O(C x sample)).
"""

from __future__ import annotations

import numpy as np

from apps.appgroups.graph import Sensitivity

from .common import MAX_NODE_SCORE, WorkloadRef, placed_nodes
from .network_score import DEFAULT_SAME_NODE_SCORE, pair_scores
from .state import ClusterState, PodInfo

DEFAULT_MAX_PODS_PER_NODE = 2.0
DEFAULT_SAMPLE = 128
# Graded relative scale (see ``graded_scale``), gaps in ComputeScore units (0..1) below the best
# candidate. Zones near the best differ by about a hundredth (A vs B on the paper testbed: gaps of
# 0.009-0.018), worse ones by tenths (FAR: ~0.4): a linear scale either merges A and B into one
# extender integer (wide) or C and FAR into 0 (narrow, the former spread of 0.05).
DEFAULT_KNEE = 0.005  # gap where the steep step ends (score KNEE_SCORE)
DEFAULT_SPREAD = 1.0  # gap that scores 0: the whole ComputeScore range
KNEE_SCORE = 0.9  # top of the graded range: extender 9, one step below the best's 10


def graded_scale(gap: np.ndarray, *, knee: float = DEFAULT_KNEE, spread: float = DEFAULT_SPREAD) -> np.ndarray:
    """Gap below the best candidate (>= 0) -> 0..1, strictly decreasing up to ``spread`` (then 0).

    ``1 - (1 - KNEE_SCORE) g / knee`` for ``g <= knee`` (the steep step that separates the best zone
    from the next one in kube-scheduler's 0..10 integers), ``KNEE_SCORE (1 - ln(g / knee) /
    ln(spread / knee))`` above it (continuous at the knee), so equal gap *ratios* cost equal score.
    """
    if not 0 < knee < spread:
        raise ValueError(f"cold start scale: need 0 < knee < spread, got knee={knee}, spread={spread}")
    g = np.maximum(np.asarray(gap, dtype=np.float64), 0.0)
    steep = 1.0 - (1.0 - KNEE_SCORE) * g / knee
    graded = KNEE_SCORE * (1.0 - np.log(np.maximum(g, knee) / knee) / np.log(spread / knee))
    return np.where(g <= knee, steep, np.clip(graded, 0.0, KNEE_SCORE))


def cold_start_sensitivity(ref: WorkloadRef) -> Sensitivity | None:
    """Weighted mean of the normalized sensitivities on the pod's edges (or the group's)."""
    edges = [(ref.workload.weight * dep.weight, dep.sensitivity) for dep in ref.workload.dependencies]
    edges += [(w.weight * dep.weight, dep.sensitivity) for w, dep in ref.group.dependents_of(ref.workload.name)]
    if not edges:
        edges = [(w.weight * dep.weight, dep.sensitivity) for w in ref.group.workloads for dep in w.dependencies]
    edges = [(max(weight, 0.0), s) for weight, s in edges if s.total > 0]
    if not edges:
        return None
    if not any(weight > 0 for weight, _ in edges):
        edges = [(1.0, s) for _, s in edges]
    acc = np.zeros(3)
    for weight, s in edges:
        n = s.normalized()
        acc += weight * np.array([n.latency, n.bandwidth, n.lossrate])
    acc /= acc.sum()
    return Sensitivity(float(acc[0]), float(acc[1]), float(acc[2]))


def _group_request(ref: WorkloadRef, pod: PodInfo) -> tuple[float, float]:
    cpu = mem = count = 0.0
    for w in ref.group.workloads:
        if w.cpu_request_millicores or w.memory_request_bytes:
            r = max(w.replicas, 1)
            cpu += r * w.cpu_request_millicores
            mem += r * w.memory_request_bytes
            count += r
    if count > 0:
        return cpu / count, mem / count
    return float(pod.cpu_request_millicores), float(pod.memory_request_bytes)


def node_capacity(state: ClusterState, ref: WorkloadRef, pod: PodInfo, *,
                  max_pods_per_node: float = DEFAULT_MAX_PODS_PER_NODE) -> np.ndarray:
    """Pods of the group that still fit on each topology node (0 for nodes the cluster lacks)."""
    topo = state.topology
    if not state.nodes:
        return np.full(topo.size, max_pods_per_node)
    req_cpu, req_mem = _group_request(ref, pod)
    indexes = state.indexes
    arrays = indexes.usage
    rows = indexes.topology_rows
    known = rows >= 0
    fits = np.full(topo.size, max_pods_per_node)
    for req, alloc, used in ((req_cpu, arrays.alloc_cpu, arrays.req_cpu), (req_mem, arrays.alloc_mem, arrays.req_mem)):
        a = arrays.take(alloc, rows, 0.0)
        free = np.maximum(a - arrays.take(used, rows, 0.0), 0.0)
        if req > 0:
            fits = np.where(a > 0, np.minimum(fits, free / req), fits)
    cap = np.where(fits < max_pods_per_node, np.floor(fits), max_pods_per_node)
    # Nodes in the topology but not in the cluster (no NodeResources) cannot take pods.
    return np.where(known & indexes.topology_in_cluster, cap, 0.0)


def _stratified(zone_codes: np.ndarray, targets: np.ndarray, caps: np.ndarray, sample: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """At most ~``sample`` targets: per zone its highest-capacity nodes, their capacity scaled up to
    the zone's total, so every zone (and so every candidate's own zone) stays represented."""
    if targets.size <= sample:
        return targets, caps
    _, zone = np.unique(zone_codes[targets], return_inverse=True)
    per_zone = max(1, sample // (int(zone.max()) + 1))
    order = np.lexsort((-caps, zone))
    sorted_zone = zone[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_zone)) + 1]
    rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    keep = np.sort(order[rank < per_zone])
    zone_total = np.bincount(zone, weights=caps)
    kept_total = np.bincount(zone[keep], weights=caps[keep], minlength=zone_total.size)
    return targets[keep], caps[keep] * zone_total[zone[keep]] / kept_total[zone[keep]]


def _fill(scores: np.ndarray, caps: np.ndarray, demand: float) -> np.ndarray:
    """Per row: capacity-weighted mean of the best targets until their capacity covers ``demand``."""
    k = min(scores.shape[1], int(np.ceil(demand / max(float(caps.min()), 1e-9))))
    if k < scores.shape[1]:
        idx = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        top = np.take_along_axis(scores, idx, axis=1)
        top_caps = caps[idx]
    else:
        top = scores
        top_caps = np.broadcast_to(caps, scores.shape)
    order = np.argsort(-top, axis=1, kind="stable")
    sorted_scores = np.take_along_axis(top, order, axis=1)
    sorted_caps = np.take_along_axis(top_caps, order, axis=1)
    before = np.cumsum(sorted_caps, axis=1) - sorted_caps
    take = np.clip(demand - before, 0.0, sorted_caps)
    taken = take.sum(axis=1)
    return np.where(taken > 0, (take * sorted_scores).sum(axis=1) / np.maximum(taken, 1e-12), 0.0)


def cold_start_scores(state: ClusterState, ref: WorkloadRef, pod: PodInfo, positions: np.ndarray, *,
                      same_node_score: float = DEFAULT_SAME_NODE_SCORE,
                      max_pods_per_node: float = DEFAULT_MAX_PODS_PER_NODE,
                      sample: int = DEFAULT_SAMPLE, knee: float = DEFAULT_KNEE,
                      spread: float = DEFAULT_SPREAD,
                      ) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """Cold-start score (0..100) per candidate position; None when the group has no edges at all."""
    sensitivity = cold_start_sensitivity(ref)
    if sensitivity is None:
        return None, ("cold start: the AppGroup declares no dependencies",)
    expected = sum(max(w.replicas, 1) for w in ref.group.workloads)
    vectors = state.indexes.vectors
    per_workload = [placed_nodes(state, ref.group, w.name) for w in ref.group.workloads]
    placed = [vectors.placed(nodes) for nodes in per_workload]
    demand = max(expected - sum(map(len, per_workload)) - 1, 1)
    cap = node_capacity(state, ref, pod, max_pods_per_node=max_pods_per_node)
    targets = np.nonzero(cap > 0)[0]
    notes: list[str] = []
    if targets.size == 0:
        fill = np.zeros(positions.size)
        notes.append("cold start: no node has free capacity for the AppGroup")
    else:
        targets, caps = _stratified(vectors.zone_codes, targets, cap[targets], sample)
        scores = pair_scores(vectors, positions, targets, sensitivity, same_node_score=same_node_score)
        fill = _fill(scores, caps, float(demand))
    # The group's placed pods the topology knows (per workload from the topology's memo, merged).
    known_count = int(sum(p.counts.sum() for p in placed))
    if known_count:
        uniq, inverse = np.unique(np.concatenate([p.positions for p in placed]), return_inverse=True)
        counts = np.bincount(inverse, weights=np.concatenate([p.counts for p in placed]))
        toward = pair_scores(vectors, positions, uniq, sensitivity, same_node_score=same_node_score)
        placed_term = toward @ (counts / counts.sum())
        f = known_count / (known_count + demand)
        out = f * placed_term + (1 - f) * fill
    else:
        out = fill
    known = positions >= 0
    if known.any():
        best = float(out[known].max())
        out = graded_scale(best - out, knee=knee, spread=spread)
    out = np.where(known, out, 0.0)
    return MAX_NODE_SCORE * out, tuple(notes)
