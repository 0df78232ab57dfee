"""NetworkScore: the source paper's ComputeScore (Algorithm 1) and Score (Algorithm 2), vectorized.

Slips of the paper fixed (shared/seeds/README.md): the dependents loop adds the dependent's weight
w' to totalWeight and divides by the number of dependent pods. Rules the paper leaves open, decided
here and documented in docs/scoring.md:

* each dependency's three sensitivities are normalized by their sum;
* a metric whose topology-wide min == max contributes its full weight (normalized value 1): with no
  spread every pair is as good as the best one;
* a pair missing one or two metrics is scored over the metrics present, renormalizing their
  sensitivities (if the present metrics all have sensitivity 0 the pair scores 0.5); a pair missing
  all three scores UnreachableNodeScore (0);
* normalized values are clipped to [0, 1] (a measurement can fall outside stale extrema);
* placed pods on nodes the topology does not know are left out of the averages (and noted).

Vectorization: per-target normalized columns (node -> target) and rows (target -> node) are cached
per Topology (it is immutable), so a request costs three (k x U) @ (U x n) products, where k is the
number of dependency terms and U the distinct nodes hosting their pods.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from apps.appgroups.graph import Sensitivity
from apps.topology.topomath import Topology

from .common import MAX_NODE_SCORE, WorkloadRef, placed_nodes
from .indexes import (
    Extrema,
    Placed,
    TopologyVectors,
    normalize_bandwidth,
    normalize_latency,
    normalize_loss,
    topology_extrema,
)
from .state import ClusterState

__all__ = ["Extrema", "TopologyVectors", "compute_score", "network_scores", "normalize_bandwidth",
           "normalize_latency", "normalize_loss", "pair_scores", "term_averages", "topology_extrema"]

DEFAULT_SAME_NODE_SCORE = 0.8
UNREACHABLE_NODE_SCORE = 0.0
# Score of a pair whose present metrics all carry sensitivity 0 (no information on what matters).
NO_INFORMATION_PAIR_SCORE = 0.5
# OpenBLAS reads its thread count at load time; with one thread a BLAS matmul is the fastest path.
_BLAS_SINGLE_THREADED = any(os.environ.get(v) == "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"))


def _weights(sensitivity: Sensitivity) -> np.ndarray:
    s = sensitivity.normalized()
    return np.array([s.latency, s.bandwidth, s.lossrate], dtype=np.float64)


def compute_score(topology: Topology, source: str, target: str, sensitivity: Sensitivity, *,
                  same_node_score: float = DEFAULT_SAME_NODE_SCORE, extrema: Extrema | None = None) -> float:
    """Algorithm 1 for one pair, in [0, 1] (the reference the vectorized code is tested against)."""
    if source == target:
        return same_node_score
    index = topology.index
    if source not in index or target not in index:
        return UNREACHABLE_NODE_SCORE
    u, v = index[source], index[target]
    ext = extrema if extrema is not None else topology_extrema(topology)
    one = np.ones(1)
    norms = np.array([
        normalize_latency(one * topology.latency_ms[u, v], ext)[0],
        normalize_bandwidth(one * topology.bandwidth_mbps[u, v], ext)[0],
        normalize_loss(one * topology.loss_pct[u, v], ext)[0],
    ])
    return _pair_score(norms, _weights(sensitivity))


def _pair_score(norms: np.ndarray, m: np.ndarray) -> float:
    present = ~np.isnan(norms)
    if not present.any():
        return UNREACHABLE_NODE_SCORE
    den = float(m[present].sum())
    if den <= 0:
        return NO_INFORMATION_PAIR_SCORE
    return float((m[present] * norms[present]).sum() / den)


@dataclass(frozen=True)
class Term:
    """One dependency (reverse=False: this pod -> dependency pods) or dependent (reverse=True:
    dependent pods -> this pod) with placed pods: targets are topology positions with counts."""

    name: str
    reverse: bool
    weight: float
    sensitivity: Sensitivity
    targets: np.ndarray
    counts: np.ndarray


def network_terms(state: ClusterState, ref: WorkloadRef) -> tuple[tuple[Term, ...], tuple[str, ...]]:
    """Algorithm 2's dependency and dependent terms that have placed pods."""
    vectors = state.indexes.vectors
    terms: list[Term] = []
    notes: list[str] = []

    def positions(workload: str) -> Placed:
        placed = vectors.placed(placed_nodes(state, ref.group, workload))
        if placed.missing:
            notes.append(f"{workload}: pods on {', '.join(placed.missing)} left out (node not in the topology)")
        return placed

    # A term weighs its caller's importance times the edge's weight (1 unless the AppGroup gives one).
    w = ref.workload.weight
    for dep in ref.workload.dependencies:
        pos = positions(dep.target)
        if pos.positions.size:
            terms.append(Term(dep.target, False, w * dep.weight, dep.sensitivity, pos.positions, pos.counts))
    for dependent, dep in ref.group.dependents_of(ref.workload.name):
        pos = positions(dependent.name)
        if pos.positions.size:
            terms.append(Term(dependent.name, True, dependent.weight * dep.weight, dep.sensitivity, pos.positions,
                              pos.counts))
    return tuple(terms), tuple(notes)


def _exact_pairs(m: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Pair scores (k, P) under the missing-metric rules for pairs whose raw values ``vals`` (3, P)
    contain NaN: renormalize over present metrics, all missing -> unreachable."""
    present = ~np.isnan(vals)
    num = m @ np.where(present, vals, 0.0)
    den = m @ present.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pair = np.where(den > 0, num / den, NO_INFORMATION_PAIR_SCORE)
    return np.where(present.any(axis=0)[None, :], pair, UNREACHABLE_NODE_SCORE)


def term_averages(vectors: TopologyVectors, terms: Sequence[Term], positions: np.ndarray, *,
                  same_node_score: float = DEFAULT_SAME_NODE_SCORE) -> np.ndarray:
    """(k, len(positions)) average ComputeScore of each term from each candidate position (in [0, 1]).

    Linear in the normalized metrics except for pairs missing a metric and same-node pairs, so the
    bulk is three (k x U) @ (U x n) products on NaN-free data, then those sparse pairs are corrected.
    Positions of -1 (unknown nodes) get 0; the caller replaces them with a neutral score.
    """
    k = len(terms)
    out = np.zeros((k, positions.size), dtype=np.float64)
    if k == 0 or positions.size == 0:
        return out
    cache = vectors
    n = cache.n
    known = positions >= 0
    safe_pos = np.where(known, positions, 0)
    # Work on all n nodes unless the candidates are a small subset.
    subset = positions.size * 4 < n
    if subset:
        cols, inverse = np.unique(safe_pos, return_inverse=True)
    else:
        cols, inverse = np.arange(n), safe_pos
    col_of = np.full(n, -1, dtype=np.int64)
    col_of[cols] = np.arange(cols.size)
    for reverse in (False, True):
        rows = [i for i, t in enumerate(terms) if t.reverse == reverse]
        if not rows:
            continue
        union = np.unique(np.concatenate([terms[i].targets for i in rows]))
        # A small candidate subset reads its (U x cols) submatrix; otherwise full cached vectors.
        stack = cache.block(union, cols, reverse) if subset else cache.stacked(union, reverse)
        block = stack.zeros  # (3, U, cols)
        vmat = np.zeros((len(rows), union.size), dtype=np.float64)
        mmat = np.zeros((len(rows), 3), dtype=np.float64)
        for r, i in enumerate(rows):
            term = terms[i]
            vmat[r, np.searchsorted(union, term.targets)] = term.counts / float(term.counts.sum())
            mmat[r] = _weights(term.sensitivity)
        # All terms and metrics in one (k x 3U) @ (3U x cols) product.
        weights = (mmat[:, :, None] * vmat[:, None, :]).reshape(len(rows), -1).astype(np.float32)
        flat = block.reshape(3 * union.size, cols.size)
        if _BLAS_SINGLE_THREADED:
            scores = (weights @ flat).astype(np.float64)
        else:
            # Multi-threaded OpenBLAS stalls for tens of ms on a busy 2-core host; einsum never does.
            scores = np.einsum("kj,jc->kc", weights, flat).astype(np.float64)
        # Pairs missing a metric (not same-node): replace the linear value by the exact rule.
        if stack.nan_u.size:
            c_idx = stack.nan_col if subset else col_of[stack.nan_col]
            keep = (c_idx >= 0) & (union[stack.nan_u] != cols[np.maximum(c_idx, 0)])
            if keep.any():
                u_k, c_k, vals = stack.nan_u[keep], c_idx[keep], stack.nan_vals[:, keep]
                linear = mmat @ np.nan_to_num(vals, nan=0.0)
                delta = vmat[:, u_k] * (_exact_pairs(mmat, vals) - linear)
                for r in range(len(rows)):
                    scores[r] += np.bincount(c_k, weights=delta[r], minlength=cols.size)
        # Same node: the same-node score replaces whatever the metrics say.
        same_c = col_of[union]
        has = same_c >= 0
        if has.any():
            u_s, c_s = np.nonzero(has)[0], same_c[has]
            linear = mmat @ stack.zeros[:, u_s, c_s if subset else union[u_s]].astype(np.float64)
            scores[:, c_s] += vmat[:, u_s] * (same_node_score - linear)
        for r, i in enumerate(rows):
            out[i] = scores[r][inverse]
    out[:, ~known] = 0.0
    return out


def network_scores(state: ClusterState, ref: WorkloadRef, positions: np.ndarray, *,
                   same_node_score: float = DEFAULT_SAME_NODE_SCORE,
                   terms: tuple[tuple[Term, ...], tuple[str, ...]] | None = None,
                   ) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """Algorithm 2 (slips fixed) for every candidate position, 0..100.

    None when no dependency or dependent has placed pods (the caller falls back to cold start).
    ``terms``: ``network_terms(state, ref)`` when the caller already has it (the engine's memo).
    """
    found, notes = terms if terms is not None else network_terms(state, ref)
    if not found:
        return None, notes
    weights = np.array([t.weight for t in found], dtype=np.float64)
    total_weight = float(weights.sum())
    if total_weight <= 0:
        return None, (*notes, "all dependency weights are 0")
    avgs = term_averages(state.indexes.vectors, found, positions, same_node_score=same_node_score)
    return MAX_NODE_SCORE * (weights @ avgs) / total_weight, notes


def pair_scores(vectors: TopologyVectors, positions: np.ndarray, targets: np.ndarray, sensitivity: Sensitivity, *,
                same_node_score: float = DEFAULT_SAME_NODE_SCORE) -> np.ndarray:
    """(len(positions), len(targets)) ComputeScore from each candidate to each target position,
    with the same missing-metric rules as Score. Unknown candidates (-1) get 0."""
    out = np.zeros((positions.size, targets.size), dtype=np.float64)
    if positions.size == 0 or targets.size == 0:
        return out
    cache = vectors
    known = positions >= 0
    safe = np.where(known, positions, 0)
    order = np.argsort(targets, kind="stable")
    union = targets[order]
    if np.any(union[1:] == union[:-1]):
        raise ValueError("targets must be distinct")
    m = _weights(sensitivity)
    cols, inverse = np.unique(safe, return_inverse=True)
    subset = cols.size * 4 < cache.n  # a few candidates: read the submatrix, not full vectors
    stack = cache.block(union, cols, False) if subset else cache.stacked(union, False)
    block = stack.zeros if subset or cols.size == cache.n else stack.zeros[:, :, cols]
    pair = np.einsum("m,mtc->tc", m.astype(np.float32), block)  # (U, cols) float32
    if stack.nan_u.size:
        if subset:
            c_idx = stack.nan_col
        else:
            col_of = np.full(cache.n, -1, dtype=np.int64)
            col_of[cols] = np.arange(cols.size)
            c_idx = col_of[stack.nan_col]
        keep = c_idx >= 0
        if keep.any():
            pair[stack.nan_u[keep], c_idx[keep]] = _exact_pairs(m[None, :], stack.nan_vals[:, keep])[0]
    pair = pair[:, inverse]
    pair = np.where(union[:, None] == safe[None, :], same_node_score, pair)
    result = np.empty_like(out)
    result[:, order] = pair.T
    result[~known] = 0.0
    return result
