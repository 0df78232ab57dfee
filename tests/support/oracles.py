"""Test oracles: the documented scoring rules restated as plain per-node Python loops, written without
the product's helpers (no normalization, extrema, index or placement function of ``apps.scheduler``),
so a test comparing the product with an oracle compares two independent readings of docs/scoring.md.

* ``network_score`` — the source paper's Score (Algorithm 2, slips fixed) over ComputeScore
  (Algorithm 1), with the rules docs/scoring.md adds: sensitivities normalized by their sum, a metric
  without spread counts fully, missing metrics renormalize the present ones (0.5 when those all weigh
  0, 0 when none is present), values clipped to [0, 1], placed pods on unknown nodes left out.
"""

from __future__ import annotations

import math
from typing import Any

SAME_NODE_SCORE = 0.8
MAX_NODE_SCORE = 100.0
_FIELDS = ("min_latency", "max_latency", "min_bandwidth", "max_bandwidth", "min_lossrate", "max_lossrate")


def _finite(value: float) -> bool:
    return value is not None and math.isfinite(value)


def _off_diagonal_bounds(matrix: Any) -> tuple[float, float]:
    values = [float(matrix[i][j]) for i in range(len(matrix)) for j in range(len(matrix)) if i != j]
    values = [v for v in values if math.isfinite(v)]
    return (min(values), max(values)) if values else (math.nan, math.nan)


def extrema(topology: Any) -> dict[str, float]:
    """The topology's own extrema; any that are missing come from its known off-diagonal pairs."""
    given = {name: float(getattr(topology, name)) for name in _FIELDS}
    if all(_finite(v) for v in given.values()):
        return given
    computed = dict(zip(_FIELDS, (*_off_diagonal_bounds(topology.latency_ms),
                                  *_off_diagonal_bounds(topology.bandwidth_mbps),
                                  *_off_diagonal_bounds(topology.loss_pct)), strict=True))
    return {name: given[name] if _finite(given[name]) else computed[name] for name in _FIELDS}


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _lower_is_better(value: float, low: float, high: float) -> float:
    if math.isnan(value):
        return math.nan
    if not high > low:
        return 1.0
    return _clip((high - value) / (high - low))


def _bandwidth(value: float, low: float, high: float) -> float:
    if math.isnan(value):
        return math.nan
    if not high > low > 0:
        return 1.0
    value = value if value > 0 else low * 1e-9
    return _clip((math.log(value) - math.log(low)) / (math.log(high) - math.log(low)))


def compute_score(topology: Any, source: str, target: str, sensitivity: Any, bounds: dict[str, float], *,
                  same_node_score: float = SAME_NODE_SCORE) -> float:
    """Algorithm 1 for one pair, in [0, 1]."""
    if source == target:
        return same_node_score
    position = {name: i for i, name in enumerate(topology.nodes)}
    if source not in position or target not in position:
        return 0.0
    u, v = position[source], position[target]
    norms = (
        _lower_is_better(float(topology.latency_ms[u][v]), bounds["min_latency"], bounds["max_latency"]),
        _bandwidth(float(topology.bandwidth_mbps[u][v]), bounds["min_bandwidth"], bounds["max_bandwidth"]),
        _lower_is_better(float(topology.loss_pct[u][v]), bounds["min_lossrate"], bounds["max_lossrate"]),
    )
    total = sensitivity.latency + sensitivity.bandwidth + sensitivity.lossrate
    weights = (sensitivity.latency / total, sensitivity.bandwidth / total, sensitivity.lossrate / total)
    present = [(w, n) for w, n in zip(weights, norms, strict=True) if not math.isnan(n)]
    if not present:
        return 0.0
    den = sum(w for w, _ in present)
    if den <= 0:
        return 0.5
    return sum(w * n for w, n in present) / den


def network_score(state: Any, ref: Any, node: str, *, same_node_score: float = SAME_NODE_SCORE) -> float | None:
    """Algorithm 2 for one candidate node, 0..100; None when no dependency or dependent has placed pods.
    Each term weighs its caller's importance times the dependency's weight (1 when the AppGroup gives none)."""
    topology, group, workload = state.topology, ref.group, ref.workload
    bounds = extrema(topology)
    known = set(topology.nodes)

    def placed(name: str) -> list[str]:
        return [n for n in state.placements.get((group.namespace, group.name, name), ()) if n in known]

    total_score = total_weight = 0.0
    for dep in workload.dependencies:
        nodes = placed(dep.target)
        if nodes:
            pair = [compute_score(topology, node, t, dep.sensitivity, bounds, same_node_score=same_node_score)
                    for t in nodes]
            total_score += workload.weight * dep.weight * sum(pair) / len(nodes)
            total_weight += workload.weight * dep.weight
    for other in group.workloads:
        for dep in other.dependencies:
            if dep.target != workload.name:
                continue
            nodes = placed(other.name)
            if nodes:
                pair = [compute_score(topology, t, node, dep.sensitivity, bounds, same_node_score=same_node_score)
                        for t in nodes]
                total_score += other.weight * dep.weight * sum(pair) / len(nodes)
                total_weight += other.weight * dep.weight
    if total_weight <= 0:
        return None
    return MAX_NODE_SCORE * total_score / total_weight
