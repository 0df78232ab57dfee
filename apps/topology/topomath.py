"""Framework-free NetworkTopology maths.

``Topology`` is the contract every scorer and the evaluation harness read: dense (n x n) arrays
indexed by node position, NaN where a metric is unknown. Arrays are made read-only so a shared
snapshot can never be altered by one consumer behind another's back.

``derive_topology`` turns the newest per-pair measurements into a ``Topology``: stale values are
dropped, unmeasured pairs are filled from zone-pair then region-pair medians (flagged inferred),
extrema are taken over every known off-diagonal value, and the KEP's NetworkMinCost costs come
from Dijkstra shortest paths over the zone and region graphs. Everything is vectorized: 1,000
nodes (1M pairs) derive in well under a second. See docs/topology.md. How a snapshot is stored is
``snapshot_format.py``.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

# Cost units of the KEP's NetworkOverhead when nothing better is known.
SAME_NODE_COST = 0.0
SAME_ZONE_COST = 1.0
UNKNOWN_COST = 100.0

METRICS = ("latency", "bandwidth", "lossrate")
# The six extrema, (min, max) per metric: document keys and the matching attribute/column names.
EXTREMA_KEYS = ("minLatency", "maxLatency", "minBandwidth", "maxBandwidth", "minLossrate", "maxLossrate")
EXTREMA_FIELDS = ("min_latency", "max_latency", "min_bandwidth", "max_bandwidth", "min_lossrate", "max_lossrate")


def short_repr(value: object) -> str:
    """``repr(value)`` of at most 80 characters: error messages echo input, which may be huge."""
    text = reprlib.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True, eq=False)
class Topology:
    nodes: tuple[str, ...]
    zones: tuple[str, ...]
    regions: tuple[str, ...]
    latency_ms: np.ndarray  # (n, n) float64, NaN = unknown, diagonal 0
    bandwidth_mbps: np.ndarray  # (n, n) float64, NaN = unknown
    loss_pct: np.ndarray  # (n, n) float64 in [0, 100], NaN = unknown
    inferred: np.ndarray  # (n, n) bool: value filled from a zone-/region-pair aggregate
    stale: np.ndarray  # (n, n) bool: newest measurement older than the staleness limit (dropped)
    min_latency: float = float("nan")
    max_latency: float = float("nan")
    min_bandwidth: float = float("nan")
    max_bandwidth: float = float("nan")
    min_lossrate: float = float("nan")
    max_lossrate: float = float("nan")
    # Directed network costs between zones (same region) and between regions, from shortest paths.
    zone_costs: Mapping[tuple[str, str], float] = field(default_factory=dict)
    region_costs: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # Snapshot identity when loaded from the database (0 = not stored) and, when the whole
    # snapshot is known to be out of date (e.g. Prometheus unreachable), why.
    version: int = 0
    stale_reason: str = ""
    # Latency (ms) that one cost unit stands for (the median same-zone latency, see docs).
    cost_unit_ms: float = 1.0

    def __post_init__(self) -> None:
        for name in ("latency_ms", "bandwidth_mbps", "loss_pct", "inferred", "stale"):
            array = getattr(self, name)
            if array.shape != (len(self.nodes), len(self.nodes)):
                raise ValueError(f"{name} has shape {array.shape}, expected {(len(self.nodes),) * 2}")
            array.setflags(write=False)
        if not (len(self.zones) == len(self.regions) == len(self.nodes)):
            raise ValueError("nodes, zones and regions must have the same length")

    @cached_property
    def index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.nodes)}

    @property
    def size(self) -> int:
        return len(self.nodes)

    @cached_property
    def measured(self) -> np.ndarray:
        """Off-diagonal pairs with at least one fresh measured (not inferred) metric."""
        out = self._measured_mask()
        out.setflags(write=False)
        return out

    @cached_property
    def measured_nodes(self) -> frozenset[str]:
        """Nodes with at least one fresh measured pair, as source or target. A snapshot can hold every
        node and none of them measured (nodes are known before the first probe window is stored), so
        "every node is in the topology" does not mean "every node is measured". Computed without
        keeping the n x n mask (the extender's readiness asks this; 25 MB at 5,000 nodes)."""
        mask = self._measured_mask()
        covered = mask.any(axis=0) | mask.any(axis=1)
        return frozenset(self.nodes[i] for i in np.flatnonzero(covered).tolist())

    def _measured_mask(self) -> np.ndarray:
        known = ~(np.isnan(self.latency_ms) & np.isnan(self.bandwidth_mbps) & np.isnan(self.loss_pct))
        out: np.ndarray = known & ~self.inferred
        np.fill_diagonal(out, False)
        return out


@dataclass(frozen=True)
class NodeMeta:
    """A node's name and failure domains; "" means unknown (the node is then its own zone/region)."""

    name: str
    zone: str = ""
    region: str = ""


def _f64(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class PairArrays:
    """Newest value per directed pair: index arrays into the node list plus one column per metric.

    A NaN value means "not measured"; ``*_ts`` are the measurement times (epoch seconds, NaN =
    unknown time, treated as fresh).
    """

    source: np.ndarray
    target: np.ndarray
    latency_ms: np.ndarray
    bandwidth_mbps: np.ndarray
    loss_pct: np.ndarray
    latency_ts: np.ndarray
    bandwidth_ts: np.ndarray
    loss_ts: np.ndarray

    def __post_init__(self) -> None:
        size = len(self.source)
        for name in ("target", "latency_ms", "bandwidth_mbps", "loss_pct", "latency_ts", "bandwidth_ts", "loss_ts"):
            if len(getattr(self, name)) != size:
                raise ValueError(f"pairs.{name} has length {len(getattr(self, name))}, expected {size}")

    @classmethod
    def empty(cls) -> PairArrays:
        i = np.zeros(0, dtype=np.int64)
        f = np.zeros(0, dtype=np.float64)
        return cls(i, i, f, f, f, f, f, f)

    @classmethod
    def from_series(
        cls,
        *,
        nodes: Sequence[str],
        latency: tuple[Sequence[str], Sequence[str], Any, Any] | None = None,
        bandwidth: tuple[Sequence[str], Sequence[str], Any, Any] | None = None,
        loss: tuple[Sequence[str], Sequence[str], Any, Any] | None = None,
    ) -> PairArrays:
        """Merge per-metric (sources, targets, values, ts_epoch) columns keyed by node name.

        Pairs naming a node outside ``nodes`` are ignored (the caller decides the node set).
        """
        names = np.asarray(list(nodes), dtype=object)
        n = len(names)
        order = np.argsort(names.astype(str)) if n else np.zeros(0, dtype=np.int64)
        sorted_names = names[order].astype(str) if n else np.zeros(0, dtype=str)

        def lookup(column: Sequence[str]) -> np.ndarray:
            col = np.asarray(list(column), dtype=str)
            if n == 0 or col.size == 0:
                return np.full(col.size, -1, dtype=np.int64)
            pos = np.clip(np.searchsorted(sorted_names, col), 0, n - 1)
            found = sorted_names[pos] == col
            return np.where(found, order[pos], -1).astype(np.int64)

        columns: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for series in (latency, bandwidth, loss):
            if series is None:
                columns.append((np.zeros(0, np.int64), np.zeros(0), np.zeros(0)))
                continue
            src, tgt, values, ts = series
            s, t = lookup(src), lookup(tgt)
            keep = (s >= 0) & (t >= 0)
            columns.append(((s * max(n, 1) + t)[keep], _f64(values)[keep], _f64(ts)[keep]))
        keys = np.unique(np.concatenate([c[0] for c in columns]))
        out_vals: list[np.ndarray] = []
        out_ts: list[np.ndarray] = []
        for key, values, ts in columns:
            v = np.full(keys.size, np.nan)
            t = np.full(keys.size, np.nan)
            pos = np.searchsorted(keys, key)
            v[pos] = values
            t[pos] = ts
            out_vals.append(v)
            out_ts.append(t)
        return cls(
            source=keys // max(n, 1), target=keys % max(n, 1),
            latency_ms=out_vals[0], bandwidth_mbps=out_vals[1], loss_pct=out_vals[2],
            latency_ts=out_ts[0], bandwidth_ts=out_ts[1], loss_ts=out_ts[2],
        )


@dataclass(frozen=True)
class _Groups:
    """Zone and region membership as dense integer ids; unknown ("") domains are per-node groups."""

    zone_of_node: np.ndarray
    region_of_node: np.ndarray
    zone_names: tuple[str, ...]  # "" for per-node pseudo zones
    region_names: tuple[str, ...]
    region_of_zone: np.ndarray


def _groups(nodes: Sequence[NodeMeta]) -> _Groups:
    zone_ids: dict[str, int] = {}
    region_ids: dict[str, int] = {}
    zone_names: list[str] = []
    region_names: list[str] = []
    region_of_zone: list[int] = []
    zone_of_node = np.empty(len(nodes), dtype=np.int64)
    region_of_node = np.empty(len(nodes), dtype=np.int64)
    for i, node in enumerate(nodes):
        if node.region:
            r = region_ids.setdefault(node.region, len(region_names))
            if r == len(region_names):
                region_names.append(node.region)
        else:
            r = len(region_names)
            region_names.append("")
        if node.zone:
            z = zone_ids.setdefault(node.zone, len(zone_names))
            if z == len(zone_names):
                zone_names.append(node.zone)
                region_of_zone.append(r)
        else:
            z = len(zone_names)
            zone_names.append("")
            region_of_zone.append(r)
        zone_of_node[i] = z
        region_of_node[i] = r
    return _Groups(zone_of_node, region_of_node, tuple(zone_names), tuple(region_names),
                   np.asarray(region_of_zone, dtype=np.int64))


def group_medians(values: np.ndarray, groupings: Sequence[tuple[np.ndarray, int]]) -> list[np.ndarray]:
    """Median of non-negative ``values`` per integer key for each (keys, n_groups) grouping; NaN for
    empty groups.

    Each grouping is one int64 sort of ``key << 32 | float32 bits``: the IEEE bit pattern of a
    non-negative float orders like the float, so no argsort/lexsort is needed (3-4x faster). The
    medians therefore carry float32 precision (7 significant digits), far below the 4 decimals the
    API serves and the float32 the snapshots store.
    """
    bits = (values.astype(np.float32) + np.float32(0.0)).view(np.uint32).astype(np.int64)  # -0.0 -> 0.0
    out: list[np.ndarray] = []
    for keys, n_groups in groupings:
        medians = np.full(n_groups, np.nan)
        if values.size:
            combined = np.sort((keys.astype(np.int64) << 32) | bits)
            v = (combined & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)
            counts = np.bincount(keys, minlength=n_groups)
            starts = np.cumsum(counts) - counts
            has = counts > 0
            lo = starts[has] + (counts[has] - 1) // 2
            hi = starts[has] + counts[has] // 2
            medians[has] = (v[lo] + v[hi]) / 2.0
        out.append(medians)
    return out


def _last_per_pair(keys: np.ndarray) -> np.ndarray:
    """Indices of the last occurrence of each key, in key order."""
    reverse = keys[::-1]
    _, first = np.unique(reverse, return_index=True)
    return keys.size - 1 - first


def _shortest_paths(weights: np.ndarray) -> np.ndarray:
    """All-pairs Dijkstra over a dense weight matrix where NaN means "no edge"."""
    size = weights.shape[0]
    if size == 0:
        return np.zeros((0, 0))
    rows, cols = np.nonzero(~np.isnan(weights))
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    # csgraph drops explicit zeros from sparse input; a tiny floor keeps zero-cost edges as edges.
    data = np.maximum(weights[rows, cols], 1e-12)
    graph = csr_matrix((data, (rows, cols)), shape=(size, size))
    return np.asarray(dijkstra(graph, directed=True))


def _cost_dict(
    dist: np.ndarray, names: Sequence[str], allowed: np.ndarray
) -> dict[tuple[str, str], float]:
    rows, cols = np.nonzero(allowed & np.isfinite(dist))
    values = dist[rows, cols]
    return {(names[a], names[b]): round(float(c), 6) for a, b, c in zip(rows.tolist(), cols.tolist(), values.tolist(),
                                                                            strict=True)}


def _apply_overrides(
    weights: np.ndarray, overrides: Mapping[tuple[str, str], float] | None, ids: Mapping[str, int], what: str
) -> None:
    for (a, b), cost in (overrides or {}).items():
        if a not in ids or b not in ids:
            missing = a if a not in ids else b
            raise ValueError(f"{what} cost override names unknown {what} {missing!r}")
        if not (isinstance(cost, (int, float)) and math.isfinite(cost) and cost >= 0):
            raise ValueError(f"{what} cost override {a}->{b} must be a number >= 0")
        weights[ids[a], ids[b]] = float(cost)


def derive_topology(
    *,
    nodes: Sequence[NodeMeta],
    pairs: PairArrays,
    now: float,
    stale_after_s: float,
    zone_cost_overrides: Mapping[tuple[str, str], float] | None = None,
    region_cost_overrides: Mapping[tuple[str, str], float] | None = None,
) -> Topology:
    """Derive the full topology from the newest measurement per directed pair (see module doc)."""
    n = len(nodes)
    names = tuple(node.name for node in nodes)
    if len(set(names)) != n:
        raise ValueError("nodes: duplicate node names")
    src = np.asarray(pairs.source, dtype=np.int64)
    tgt = np.asarray(pairs.target, dtype=np.int64)
    if src.size and (src.min() < 0 or tgt.min() < 0 or src.max() >= n or tgt.max() >= n):
        raise ValueError("pairs.source/target: index outside the node list")
    groups = _groups(nodes)
    n_zones, n_regions = len(groups.zone_names), len(groups.region_names)
    # Nodes sharing (zone, region) get the same fill value from every other group: fills are
    # computed per group pair (tiny) and expanded once, instead of per node pair.
    cells = groups.zone_of_node * n_regions + groups.region_of_node
    cell_ids, cell_of_node, cell_size = np.unique(cells, return_inverse=True, return_counts=True)
    cell_of_node = cell_of_node.reshape(-1)
    cell_zone, cell_region = cell_ids // n_regions, cell_ids % n_regions
    n_cells = cell_ids.size
    # Off-diagonal node pairs per cell pair: where a fill can land.
    cell_pairs = (cell_size[:, None] * cell_size[None, :] - np.diag(cell_size)).reshape(-1)

    last = _last_per_pair(src * max(n, 1) + tgt)  # a repeated pair keeps its last value, as an assignment would
    src, tgt = src[last], tgt[last]
    offdiag_pair = src != tgt
    cutoff = now - stale_after_s
    stale = np.zeros((n, n), dtype=bool)
    inferred = np.zeros((n, n), dtype=bool)

    matrices: list[np.ndarray] = []
    extrema: list[float] = []
    zone_latency_agg = np.full(n_zones * n_zones, np.nan)
    region_latency_agg = np.full(n_regions * n_regions, np.nan)
    columns = (
        ("latency_ms", pairs.latency_ms, pairs.latency_ts),
        ("bandwidth_mbps", pairs.bandwidth_mbps, pairs.bandwidth_ts),
        ("loss_pct", pairs.loss_pct, pairs.loss_ts),
    )
    for name, values, ts in columns:
        values = _f64(values)
        bad = values[~np.isnan(values)]
        if bad.size and (bad.min() < 0 or (name == "loss_pct" and bad.max() > 100)):
            raise ValueError(f"pairs.{name}: values must be >= 0{' and <= 100' if name == 'loss_pct' else ''}")
        values, ts = values[last], _f64(ts)[last]
        known = ~np.isnan(values) & offdiag_pair
        too_old = known & (ts < cutoff)
        stale[src[too_old], tgt[too_old]] = True
        fresh = known & ~too_old
        s, t, v = src[fresh], tgt[fresh], values[fresh]
        zs, zt = groups.zone_of_node[s], groups.zone_of_node[t]
        rs, rt = groups.region_of_node[s], groups.region_of_node[t]
        zone_agg, region_agg = group_medians(
            v, [(zs * n_zones + zt, n_zones * n_zones), (rs * n_regions + rt, n_regions * n_regions)]
        )
        fill = zone_agg[cell_zone[:, None] * n_zones + cell_zone[None, :]]
        np.copyto(fill, region_agg[cell_region[:, None] * n_regions + cell_region[None, :]], where=np.isnan(fill))
        matrix = np.take(fill[cell_of_node], cell_of_node, axis=1)
        filled = ~np.isnan(matrix)
        filled[s, t] = False
        np.fill_diagonal(filled, False)
        inferred |= filled
        matrix[s, t] = v
        # Extrema over every known off-diagonal value: the measured ones plus each fill value that
        # lands on at least one unmeasured pair (counted per cell pair, never scanning n x n).
        measured_per_cell = np.bincount(cell_of_node[s] * n_cells + cell_of_node[t], minlength=n_cells * n_cells)
        fills = fill.reshape(-1)[(cell_pairs > measured_per_cell) & ~np.isnan(fill.reshape(-1))]
        known_values = np.concatenate([v, fills])
        extrema.extend((float(known_values.min()), float(known_values.max())) if known_values.size
                       else (float("nan"), float("nan")))
        if name == "latency_ms":
            zone_latency_agg, region_latency_agg = zone_agg, region_agg
        np.fill_diagonal(matrix, np.nan if name == "bandwidth_mbps" else 0.0)
        matrices.append(matrix)
    latency, bandwidth, loss = matrices

    # Network costs: zone and region graphs weighted by measured median latency in cost units.
    zone_lat = zone_latency_agg.reshape(n_zones, n_zones)
    intra = np.diagonal(zone_lat)
    intra = intra[~np.isnan(intra)]
    unit = float(np.median(intra)) if intra.size else 1.0
    if not unit > 0:
        unit = 1.0
    zone_w = zone_lat / unit
    region_w = region_latency_agg.reshape(n_regions, n_regions) / unit
    zone_ids = {z: i for i, z in enumerate(groups.zone_names) if z}
    region_ids = {r: i for i, r in enumerate(groups.region_names) if r}
    _apply_overrides(zone_w, zone_cost_overrides, zone_ids, "zone")
    _apply_overrides(region_w, region_cost_overrides, region_ids, "region")
    zone_dist = _shortest_paths(zone_w)
    region_dist = _shortest_paths(region_w)
    known_zone = np.asarray([bool(z) for z in groups.zone_names], dtype=bool)
    known_region = np.asarray([bool(r) for r in groups.region_names], dtype=bool)
    same_region = groups.region_of_zone[:, None] == groups.region_of_zone[None, :]
    zone_allowed = same_region & known_zone[:, None] & known_zone[None, :] & ~np.eye(n_zones, dtype=bool)
    region_allowed = known_region[:, None] & known_region[None, :] & ~np.eye(n_regions, dtype=bool)

    return Topology(
        nodes=names,
        zones=tuple(node.zone for node in nodes),
        regions=tuple(node.region for node in nodes),
        latency_ms=latency,
        bandwidth_mbps=bandwidth,
        loss_pct=loss,
        inferred=inferred,
        stale=stale,
        min_latency=extrema[0],
        max_latency=extrema[1],
        min_bandwidth=extrema[2],
        max_bandwidth=extrema[3],
        min_lossrate=extrema[4],
        max_lossrate=extrema[5],
        zone_costs=_cost_dict(zone_dist, groups.zone_names, zone_allowed),
        region_costs=_cost_dict(region_dist, groups.region_names, region_allowed),
        cost_unit_ms=unit,
    )


def _clean(value: float) -> float | None:
    return None if math.isnan(value) else value


def nested_maps(topology: Topology, *, decimals: int = 4) -> dict[str, Any]:
    """The paper's NetworkTopology spec: source -> destination maps (unknown pairs omitted) + extrema."""
    names = np.asarray(topology.nodes, dtype=object)
    n = topology.size
    offdiag = ~np.eye(n, dtype=bool)
    out: dict[str, Any] = {}
    for key, matrix in zip(METRICS, (topology.latency_ms, topology.bandwidth_mbps, topology.loss_pct), strict=True):
        known = ~np.isnan(matrix) & offdiag
        rounded = np.round(matrix, decimals)
        per_metric: dict[str, dict[str, float]] = {}
        counts = known.sum(axis=1)
        for i in np.flatnonzero(counts).tolist():
            cols = np.flatnonzero(known[i])
            per_metric[str(names[i])] = dict(zip(names[cols].tolist(), rounded[i, cols].tolist(), strict=True))
        out[key] = per_metric
    for key, attr in zip(EXTREMA_KEYS, EXTREMA_FIELDS, strict=True):
        value = _clean(float(getattr(topology, attr)))
        out[key] = None if value is None else round(value, decimals)
    return out


def topology_from_nested(
    doc: Mapping[str, Any],
    *,
    nodes: Sequence[NodeMeta] = (),
    now: float = 0.0,
    zone_cost_overrides: Mapping[tuple[str, str], float] | None = None,
    region_cost_overrides: Mapping[tuple[str, str], float] | None = None,
) -> Topology:
    """Inverse of ``nested_maps``: build a Topology from a spec's maps (fill-in and costs derived).

    The maps are trusted: imported documents are validated by ``apps.topology.documents.read_import``.
    Nodes named in the maps but missing from ``nodes`` are appended with unknown zone/region. Given
    extrema override the computed ones (a user may want wider normalization bounds). A cost override
    naming a zone or region no node is in raises ValueError (``derive_topology``).
    """
    known_nodes = {node.name for node in nodes}
    extra: dict[str, NodeMeta] = {}
    columns: dict[str, tuple[list[str], list[str], list[float]]] = {m: ([], [], []) for m in METRICS}
    for metric in METRICS:
        src_col, dst_col, val_col = columns[metric]
        for src, row in (doc.get(metric) or {}).items():
            for dst, value in row.items():
                if src == dst:
                    continue
                for name in (src, dst):
                    if name not in known_nodes and name not in extra:
                        extra[name] = NodeMeta(name=name)
                src_col.append(src)
                dst_col.append(dst)
                val_col.append(float(value))
    all_nodes = [*nodes, *extra.values()]
    names = [node.name for node in all_nodes]

    def series(metric: str) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        s, t, v = columns[metric]
        return s, t, np.asarray(v, dtype=np.float64), np.full(len(v), float(now))

    pairs = PairArrays.from_series(
        nodes=names, latency=series("latency"), bandwidth=series("bandwidth"), loss=series("lossrate")
    )
    topology = derive_topology(
        nodes=all_nodes, pairs=pairs, now=now, stale_after_s=math.inf,
        zone_cost_overrides=zone_cost_overrides, region_cost_overrides=region_cost_overrides,
    )
    given = {attr: float(doc[key]) for key, attr in zip(EXTREMA_KEYS, EXTREMA_FIELDS, strict=True)
             if doc.get(key) is not None}
    return replace_extrema(topology, **given) if given else topology


def replace_extrema(topology: Topology, **updates: float) -> Topology:
    return replace(topology, **updates)  # type: ignore[arg-type]


def _bounds(arr: np.ndarray) -> tuple[float, float]:
    values = arr[~np.eye(arr.shape[0], dtype=bool)]
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    return float(values.min()), float(values.max())


def metric_extrema(latency: np.ndarray, bandwidth: np.ndarray,
                   loss: np.ndarray) -> tuple[float, float, float, float, float, float]:
    """A Topology's six normalization bounds (in ``EXTREMA_FIELDS`` order): (min, max) of each metric over
    its known off-diagonal pairs, NaN when there are none."""
    return (*_bounds(latency), *_bounds(bandwidth), *_bounds(loss))
