"""Load-aware scorers and filter: water level (the water-level design, docs/references.md), TargetLoadPacking and
LoadVariationRiskBalancing (Trimaran), and an overload filter.

Utilisation values are fractions (0..1) of allocatable from ``NodeUsage``. A node whose usage is
missing or marked stale scores ``NEUTRAL_SCORE`` and passes the overload filter: load-awareness
must never strand a pod because Prometheus is behind.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .common import MAX_NODE_SCORE, NEUTRAL_SCORE
from .indexes import UsageArrays
from .state import ClusterState, NodeUsage, PodInfo

# Windows (15 min, 1 h, 1 d) and how much each counts for a node's water level and the target.
WINDOW_WEIGHTS = (0.5, 0.3, 0.2)
DEFAULT_AVERAGE_WEIGHT = 0.7  # target = 0.7 * cluster average + 0.3 * least-loaded node
DEFAULT_HOT_SPOT_PENALTY = 10.0  # points per binding in the recent window
TARGET_BOUNDS = (5.0, 95.0)  # percent; keeps the piecewise formula well defined
DEFAULT_TARGET_UTILIZATION = 40.0  # Trimaran TargetLoadPacking default (percent)
DEFAULT_LVRB_MARGIN = 1.0
DEFAULT_LVRB_SENSITIVITY = 1.0
DEFAULT_OVERLOAD_THRESHOLD = 0.9


def _usable(usage: NodeUsage | None) -> NodeUsage | None:
    return None if usage is None or usage.stale else usage


def _f(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _rows(arrays: UsageArrays, candidates: Sequence[str], rows: np.ndarray | None) -> np.ndarray:
    return rows if rows is not None else arrays.rows(candidates)


def _windows_of(arrays: UsageArrays, resource: str) -> np.ndarray:
    return arrays.cpu if resource == "cpu" else arrays.mem


def _weighted_level(values: np.ndarray) -> np.ndarray:
    """Window-weighted mean over the windows present (values: (3, k)); NaN when none is."""
    w = np.array(WINDOW_WEIGHTS)[:, None]
    present = ~np.isnan(values)
    num = (np.where(present, values, 0.0) * w).sum(axis=0)
    den = (present * w).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def cluster_target(state: ClusterState, resource: str, *, average_weight: float = DEFAULT_AVERAGE_WEIGHT
                   ) -> float | None:
    """Dynamic cluster target (percent) over all nodes with fresh usage: per window a blend of the
    cluster average and the least-loaded node, then window-weighted."""
    values = _windows_of(state.indexes.usage, resource)
    num = den = 0.0
    for k, weight in enumerate(WINDOW_WEIGHTS):
        row = values[k][~np.isnan(values[k])]
        if row.size == 0:
            continue
        num += weight * (average_weight * float(row.mean()) + (1 - average_weight) * float(row.min()))
        den += weight
    if den <= 0:
        return None
    return float(np.clip(100.0 * num / den, *TARGET_BOUNDS))


def piecewise_target_score(predicted: np.ndarray, target: float) -> np.ndarray:
    """Seed 002 / Trimaran TargetLoadPacking: peak (100) at the target, 0 beyond 100 %."""
    below = (MAX_NODE_SCORE - target) * predicted / target + target
    above = target * (MAX_NODE_SCORE - predicted) / (MAX_NODE_SCORE - target)
    out = np.where(predicted <= target, below, above)
    return np.where(predicted > MAX_NODE_SCORE, 0.0, np.clip(out, 0.0, MAX_NODE_SCORE))


def _request_fraction(arrays: UsageArrays, rows: np.ndarray, request: float, resource: str) -> np.ndarray:
    alloc = arrays.take(arrays.alloc_cpu if resource == "cpu" else arrays.alloc_mem, rows, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(alloc > 0, request / np.where(alloc > 0, alloc, 1.0), 0.0)


def _request(pod: PodInfo, resource: str) -> float:
    return float(pod.cpu_request_millicores if resource == "cpu" else pod.memory_request_bytes)


def water_level_scores(state: ClusterState, pod: PodInfo, candidates: Sequence[str], *,
                       average_weight: float = DEFAULT_AVERAGE_WEIGHT,
                       hot_spot_penalty: float = DEFAULT_HOT_SPOT_PENALTY,
                       cpu_weight: float = 0.5, memory_weight: float = 0.5,
                       rows: np.ndarray | None = None) -> np.ndarray:
    """Water-level score per candidate (0..100) minus the hot-spot penalty for recent bindings.
    ``rows``: the candidates' rows in the state's usage arrays, when the caller has them."""
    arrays = state.indexes.usage
    rows = _rows(arrays, candidates, rows)
    num = np.zeros(len(candidates))
    den = np.zeros(len(candidates))
    for resource, weight in (("cpu", cpu_weight), ("memory", memory_weight)):
        target = cluster_target(state, resource, average_weight=average_weight)
        if target is None or weight <= 0:
            continue
        level = _weighted_level(arrays.take(_windows_of(arrays, resource), rows))
        predicted = 100.0 * (level + _request_fraction(arrays, rows, _request(pod, resource), resource))
        ok = ~np.isnan(predicted)
        num += np.where(ok, weight * piecewise_target_score(np.where(ok, predicted, 0.0), target), 0.0)
        den += np.where(ok, weight, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), NEUTRAL_SCORE)
    if state.recent_bindings:
        penalty = hot_spot_penalty * np.fromiter((state.recent_bindings.get(n, 0) for n in candidates),
                                                 dtype=np.float64, count=len(candidates))
        out = out - penalty
    return np.clip(out, 0.0, MAX_NODE_SCORE)


def target_load_packing_scores(state: ClusterState, pod: PodInfo, candidates: Sequence[str], *,
                               target_utilization: float = DEFAULT_TARGET_UTILIZATION,
                               rows: np.ndarray | None = None) -> np.ndarray:
    """Trimaran TargetLoadPacking on CPU: predicted = measured (15 min, else 1 h) + pod request."""
    arrays = state.indexes.usage
    rows = _rows(arrays, candidates, rows)
    cpu = arrays.take(arrays.cpu, rows)
    measured = np.where(np.isnan(cpu[0]), cpu[1], cpu[0])
    predicted = 100.0 * (measured + _request_fraction(arrays, rows, _request(pod, "cpu"), "cpu"))
    ok = ~np.isnan(predicted)
    return np.where(ok, piecewise_target_score(np.where(ok, predicted, 0.0), target_utilization), NEUTRAL_SCORE)


def load_variation_risk_scores(state: ClusterState, pod: PodInfo, candidates: Sequence[str], *,
                               margin: float = DEFAULT_LVRB_MARGIN,
                               sensitivity: float = DEFAULT_LVRB_SENSITIVITY,
                               rows: np.ndarray | None = None) -> np.ndarray:
    """Trimaran LoadVariationRiskBalancing: per resource (1 - (mu + margin sigma^(1/s)) / 2) * 100
    with mu = 1 h mean + request, sigma = 1 h stddev (fractions); the node gets the minimum."""
    arrays = state.indexes.usage
    rows = _rows(arrays, candidates, rows)
    best = np.full(len(candidates), np.inf)
    for resource, windows, std in (("cpu", arrays.cpu, arrays.cpu_std), ("memory", arrays.mem, arrays.mem_std)):
        mean = arrays.take(windows[1], rows)
        sd = np.nan_to_num(arrays.take(std, rows), nan=0.0)
        mu = np.clip(mean + _request_fraction(arrays, rows, _request(pod, resource), resource), 0.0, 1.0)
        sigma = np.clip(margin * np.clip(sd, 0.0, 1.0) ** (1.0 / sensitivity), 0.0, 1.0)
        score = (1.0 - (mu + sigma) / 2) * MAX_NODE_SCORE
        best = np.where(np.isnan(score), best, np.minimum(best, score))
    return np.where(np.isinf(best), NEUTRAL_SCORE, best)


def overload_failures(state: ClusterState, candidates: Sequence[str], *,
                      cpu_threshold: float = DEFAULT_OVERLOAD_THRESHOLD,
                      memory_threshold: float = DEFAULT_OVERLOAD_THRESHOLD,
                      rows: np.ndarray | None = None) -> dict[str, str]:
    """Reject nodes whose recent (15 min, else 1 h) utilisation is above the threshold."""
    arrays = state.indexes.usage
    rows = _rows(arrays, candidates, rows)
    failures: dict[str, str] = {}
    for label, windows, limit in (("memory", arrays.mem, memory_threshold), ("CPU", arrays.cpu, cpu_threshold)):
        values = arrays.take(windows, rows)
        recent = np.where(np.isnan(values[0]), values[1], values[0])
        for i in np.nonzero(recent > limit)[0]:
            name = candidates[int(i)]
            failures[name] = f"Node {name}: {label} utilisation {recent[i]:.0%} is above the {limit:.0%} limit"
    return failures
