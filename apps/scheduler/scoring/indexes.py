"""Derived indexes of a ClusterState: what scorers look up, built once per state, never kept in
module globals.

A ClusterState either carries indexes prepared by its owner (the extender's scheduling cache builds
them off the request path and patches them after each bind: ``with_requested``), or builds them
lazily on first use (the evaluation harness, tests). Three parts, each depending on different
inputs, so an owner can reuse the parts a change does not touch:

* ``TopologyVectors`` — normalized per-target latency/bandwidth/loss vectors of one Topology;
* ``Places`` — zone/region codes of every node and cost matrices between them (nodes + topology);
* ``UsageArrays`` — measured utilisation and allocatable/requested resources as column arrays.

Framework-free; depends on nothing in the scoring package (``state`` only for types), so
``state.py`` can import it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from apps.topology.topomath import EXTREMA_FIELDS, Topology, metric_extrema

if TYPE_CHECKING:
    from .state import NodeResources, NodeUsage

# Bounds of the vectors a topology keeps. Vectors (one per target node) are reused by every pod placed
# near that node; stacks (one per set of targets) mostly by filter/prioritize of one pod, as every
# bind changes the set: keep few of them.
_VECTOR_BYTES = 64 * 2**20
_STACK_BYTES = 32 * 2**20
_PLACED_ENTRIES = 512  # workloads' placement tuples (a few kB each at most)
# Both orientations of a topology's normalized metrics kept whole (float32) up to this size: ~1,150
# nodes. Larger topologies build stacks from per-target vectors, or read submatrices (``block``).
_DENSE_BYTES = 32 * 2**20


def lookup(index: Mapping[str, int], names: Sequence[str]) -> np.ndarray:
    """index[name] for every name, -1 where missing (map over dict.get: the fastest pure-Python way)."""
    return np.fromiter(map(index.get, names, repeat(-1)), dtype=np.int64, count=len(names))


def zone_region(nodes: Mapping[str, NodeResources], topology: Topology, name: str) -> tuple[str, str]:
    """Zone and region of a node: the cluster's node labels first, then the topology's view."""
    node = nodes.get(name)
    zone = node.zone if node is not None else ""
    region = node.region if node is not None else ""
    if not zone or not region:
        pos = topology.index.get(name)
        if pos is not None:
            zone = zone or topology.zones[pos]
            region = region or topology.regions[pos]
    return zone, region


# --- topology vectors ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Extrema:
    min_latency: float
    max_latency: float
    min_bandwidth: float
    max_bandwidth: float
    min_lossrate: float
    max_lossrate: float


def topology_extrema(topology: Topology) -> Extrema:
    """The topology's six extrema; any that are NaN are recomputed from off-diagonal pairs."""
    got = [getattr(topology, name) for name in EXTREMA_FIELDS]
    if all(np.isfinite(v) for v in got):
        return Extrema(*got)
    fallback = metric_extrema(topology.latency_ms, topology.bandwidth_mbps, topology.loss_pct)
    return Extrema(*[g if np.isfinite(g) else f for g, f in zip(got, fallback, strict=True)])


def normalize_latency(values: np.ndarray, ext: Extrema) -> np.ndarray:
    if not (ext.max_latency > ext.min_latency):
        return np.where(np.isnan(values), np.nan, 1.0)
    out = (ext.max_latency - values) / (ext.max_latency - ext.min_latency)
    return np.clip(out, 0.0, 1.0)


def normalize_bandwidth(values: np.ndarray, ext: Extrema) -> np.ndarray:
    """Logarithmic, as the paper: diminishing returns of more throughput."""
    if not (ext.max_bandwidth > ext.min_bandwidth > 0):
        return np.where(np.isnan(values), np.nan, 1.0)
    lo, hi = np.log(ext.min_bandwidth), np.log(ext.max_bandwidth)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(values > 0, values, ext.min_bandwidth * 1e-9))
    out = (logs - lo) / (hi - lo)
    return np.where(np.isnan(values), np.nan, np.clip(out, 0.0, 1.0))


def normalize_loss(values: np.ndarray, ext: Extrema) -> np.ndarray:
    if not (ext.max_lossrate > ext.min_lossrate):
        return np.where(np.isnan(values), np.nan, 1.0)
    out = (ext.max_lossrate - values) / (ext.max_lossrate - ext.min_lossrate)
    return np.clip(out, 0.0, 1.0)


@dataclass(frozen=True)
class Stack:
    """(3, U, n) normalized metrics with NaN replaced by 0 (for the linear part), plus the sparse
    list of (target, node) pairs missing some metric, with their raw values (NaN kept)."""

    zeros: np.ndarray
    nan_u: np.ndarray
    nan_col: np.ndarray
    nan_vals: np.ndarray  # (3, P)


@dataclass(frozen=True)
class Dense:
    """All of one orientation's vectors: ``zeros[:, t, :]`` is target ``t``'s vector with NaN as 0;
    the pairs missing some metric, sorted by (target, node), with their values (NaN kept)."""

    zeros: np.ndarray  # (3, n, n) float32
    nan_target: np.ndarray
    nan_col: np.ndarray
    nan_vals: np.ndarray  # (3, P) float32


@dataclass(frozen=True)
class Placed:
    """Distinct topology positions of a workload's placed pods, pods per position, and the nodes
    the topology does not know (sorted; their pods are left out)."""

    positions: np.ndarray
    counts: np.ndarray
    missing: tuple[str, ...]


class TopologyVectors:
    """Normalized per-target vectors of one immutable Topology (LRU, bounded memory). Shared by every
    ClusterState over the same Topology: binds change placements, not the topology."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.extrema = topology_extrema(topology)
        self.n = topology.size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[int, bool], np.ndarray] = OrderedDict()
        self._limit = max(64, _VECTOR_BYTES // max(1, 3 * 4 * self.n))
        self._stacks: OrderedDict[tuple[bool, bytes], Stack] = OrderedDict()
        self._stack_bytes = 0
        if topology.size:
            _, codes = np.unique(np.array(topology.zones, dtype=object), return_inverse=True)
        else:
            codes = np.zeros(0, dtype=np.int64)
        self.zone_codes = np.asarray(codes, dtype=np.int64)
        self._placed: OrderedDict[tuple[str, ...], Placed] = OrderedDict()
        self._dense_parts: dict[bool, Dense] = {}
        self._build_lock = threading.Lock()

    def placed(self, nodes: tuple[str, ...]) -> Placed:
        """Where the pods placed on ``nodes`` (one entry per pod) sit in this topology. Memoized by
        the tuple's content (LRU): a workload's placements stay the same tuple across the states
        of a rollout until one of its own pods is bound, so replicas of its dependents reuse it."""
        with self._lock:
            hit = self._placed.get(nodes)
            if hit is not None:
                self._placed.move_to_end(nodes)
                return hit
        index = self.topology.index
        known = [index[n] for n in nodes if n in index]
        missing = tuple(sorted({n for n in nodes if n not in index})) if len(known) < len(nodes) else ()
        arr = np.asarray(known, dtype=np.int64)
        if arr.size:
            uniq, counts = np.unique(arr, return_counts=True)
            entry = Placed(uniq, counts.astype(np.float64), missing)
        else:
            entry = Placed(arr, arr.astype(np.float64), missing)
        entry.positions.setflags(write=False)
        entry.counts.setflags(write=False)
        with self._lock:
            self._placed[nodes] = entry
            while len(self._placed) > _PLACED_ENTRIES:
                self._placed.popitem(last=False)
        return entry

    def _dense(self, reverse: bool) -> Dense | None:
        """Every target's vectors at once, for a topology small enough (``_DENSE_BYTES`` for both
        orientations): a stack is then one gather. Built on first use, with the same elementwise
        normalization as ``vector``, so row ``t`` equals ``vector(t)`` exactly (tested)."""
        if 2 * 3 * 4 * self.n * self.n > _DENSE_BYTES or self.n == 0:
            return None
        hit = self._dense_parts.get(reverse)
        if hit is not None:
            return hit
        with self._build_lock:
            if reverse not in self._dense_parts:
                topology = self.topology
                # raw[m, t, j]: metric m from t to j (the reverse vectors' rows), normalized.
                raw = np.empty((3, self.n, self.n), dtype=np.float32)
                raw[0] = normalize_latency(np.asarray(topology.latency_ms, dtype=np.float64), self.extrema)
                raw[1] = normalize_bandwidth(np.asarray(topology.bandwidth_mbps, dtype=np.float64), self.extrema)
                raw[2] = normalize_loss(np.asarray(topology.loss_pct, dtype=np.float64), self.extrema)
                for rev, arr in ((True, raw), (False, np.ascontiguousarray(raw.transpose(0, 2, 1)))):
                    nan = np.isnan(arr)
                    nan_target, nan_col = np.nonzero(nan.any(axis=0))
                    zeros = np.where(nan, np.float32(0.0), arr)
                    zeros.setflags(write=False)
                    self._dense_parts[rev] = Dense(zeros, nan_target, nan_col, arr[:, nan_target, nan_col])
        return self._dense_parts[reverse]

    def vector(self, target: int, reverse: bool) -> np.ndarray:
        """(3, n) float32: normalized latency/bandwidth/loss from every node to ``target``
        (reverse: from ``target`` to every node). NaN = metric unknown."""
        key = (target, reverse)
        with self._lock:
            hit = self._vectors.get(key)
            if hit is not None:
                self._vectors.move_to_end(key)
                return hit
        topology = self.topology
        if reverse:
            lat, bw, loss = (topology.latency_ms[target, :], topology.bandwidth_mbps[target, :],
                             topology.loss_pct[target, :])
        else:
            lat, bw, loss = (topology.latency_ms[:, target], topology.bandwidth_mbps[:, target],
                             topology.loss_pct[:, target])
        out = np.empty((3, self.n), dtype=np.float32)
        out[0] = normalize_latency(np.asarray(lat, dtype=np.float64), self.extrema)
        out[1] = normalize_bandwidth(np.asarray(bw, dtype=np.float64), self.extrema)
        out[2] = normalize_loss(np.asarray(loss, dtype=np.float64), self.extrema)
        out.setflags(write=False)
        with self._lock:
            self._vectors[key] = out
            while len(self._vectors) > self._limit:
                self._vectors.popitem(last=False)
        return out

    def block(self, targets: np.ndarray, cols: np.ndarray, reverse: bool) -> Stack:
        """``stacked(targets)`` restricted to the columns ``cols`` (sorted distinct positions), read
        straight from the (U x cols) submatrix: for a few hundred candidates of a 5,000-node topology
        that touches ~100x less memory than full vectors (whose column reads are strided). The
        values are computed exactly as ``vector`` computes them; ``nan_col`` indexes ``cols``."""
        topology = self.topology
        if reverse:
            def sub(arr: np.ndarray) -> np.ndarray:
                return np.asarray(arr[np.ix_(targets, cols)], dtype=np.float64)
        else:
            def sub(arr: np.ndarray) -> np.ndarray:
                return np.asarray(arr[np.ix_(cols, targets)].T, dtype=np.float64)
        raw = np.empty((3, targets.size, cols.size), dtype=np.float32)
        raw[0] = normalize_latency(sub(topology.latency_ms), self.extrema)
        raw[1] = normalize_bandwidth(sub(topology.bandwidth_mbps), self.extrema)
        raw[2] = normalize_loss(sub(topology.loss_pct), self.extrema)
        nan = np.isnan(raw)
        nan_u, nan_col = np.nonzero(nan.any(axis=0))
        return Stack(np.where(nan, np.float32(0.0), raw), nan_u, nan_col, raw[:, nan_u, nan_col].astype(np.float64))

    def stacked(self, targets: np.ndarray, reverse: bool) -> Stack:
        """Normalized vectors for sorted distinct ``targets``. Recent stacks are kept (bounded by
        bytes): filter and prioritize for pods of one rollout see the same placed targets."""
        key = (reverse, targets.tobytes())
        with self._lock:
            hit = self._stacks.get(key)
            if hit is not None:
                self._stacks.move_to_end(key)
                return hit
        dense = self._dense(reverse) if targets.size else None
        if dense is not None:
            zeros = np.take(dense.zeros, targets, axis=1)  # one C-contiguous gather: no U vectors, isnan, where
            at = np.minimum(np.searchsorted(targets, dense.nan_target), targets.size - 1)
            picked = targets[at] == dense.nan_target
            entry = Stack(zeros, at[picked], dense.nan_col[picked], dense.nan_vals[:, picked].astype(np.float64))
        else:
            raw = np.stack([self.vector(int(t), reverse) for t in targets], axis=1)  # (3, U, n)
            nan = np.isnan(raw)
            nan_u, nan_col = np.nonzero(nan.any(axis=0))
            zeros = np.where(nan, np.float32(0.0), raw)
            entry = Stack(zeros, nan_u, nan_col, raw[:, nan_u, nan_col].astype(np.float64))
        zeros.setflags(write=False)
        with self._lock:
            self._stacks[key] = entry
            self._stack_bytes += entry.zeros.nbytes
            while self._stack_bytes > _STACK_BYTES and len(self._stacks) > 1:
                _, old = self._stacks.popitem(last=False)
                self._stack_bytes -= old.zeros.nbytes
        return entry


# --- places (NetworkOverhead) ------------------------------------------------------------------


@dataclass(frozen=True)
class Places:
    """Zone/region codes of every node a state knows, and cost matrices between the codes."""

    index: dict[str, int]
    zone: np.ndarray
    region: np.ndarray
    blank: np.ndarray  # neither zone nor region known
    zone_cost: np.ndarray  # (nz, nz), NaN = not defined
    region_cost: np.ndarray  # (nr, nr)
    # Zone name -> code; per entry of ``index``, the code of the cluster's own zone label (-1: not a
    # cluster node; no topology fallback), and per topology position its entry (the plan filter's
    # zone test without a per-candidate loop).
    zone_codes: dict[str, int]
    label_zone: np.ndarray
    topology_entry: np.ndarray
    # Derived results that hold as long as these places do (the plan's per-workload zone counts,
    # keyed by workload, each stored with the placements tuple it was counted from).
    derived: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


def build_places(nodes: Mapping[str, NodeResources], topology: Topology) -> Places:
    names = list(dict.fromkeys([*nodes, *topology.nodes]))
    zr = [zone_region(nodes, topology, name) for name in names]
    zones: dict[str, int] = {"": 0}
    regions: dict[str, int] = {"": 0}
    for z, r in zr:
        zones.setdefault(z, len(zones))
        regions.setdefault(r, len(regions))
    for a, b in topology.zone_costs:
        zones.setdefault(a, len(zones))
        zones.setdefault(b, len(zones))
    for a, b in topology.region_costs:
        regions.setdefault(a, len(regions))
        regions.setdefault(b, len(regions))
    zone_cost = np.full((len(zones), len(zones)), np.nan)
    for (a, b), value in topology.zone_costs.items():
        zone_cost[zones[a], zones[b]] = value
    region_cost = np.full((len(regions), len(regions)), np.nan)
    for (a, b), value in topology.region_costs.items():
        region_cost[regions[a], regions[b]] = value
    index = {n: i for i, n in enumerate(names)}
    return Places(
        index,
        np.array([zones[z] for z, _ in zr], dtype=np.int64),
        np.array([regions[r] for _, r in zr], dtype=np.int64),
        np.array([not z and not r for z, r in zr], dtype=bool),
        zone_cost, region_cost, zones,
        np.array([zones[nodes[n].zone] if n in nodes else -1 for n in names], dtype=np.int64),
        lookup(index, topology.nodes),
    )


# --- usage arrays (load-aware, bandwidth, cold start) --------------------------------------------


@dataclass(frozen=True)
class UsageArrays:
    """Column arrays of a state's usage and allocatable (NaN = unknown, stale rows blanked)."""

    index: dict[str, int]
    cpu: np.ndarray  # (3, m): 15 min, 1 h, 1 d
    mem: np.ndarray  # (3, m)
    cpu_std: np.ndarray
    mem_std: np.ndarray
    net_mean: np.ndarray
    net_std: np.ndarray
    net_cap: np.ndarray
    alloc_cpu: np.ndarray  # 0 = unknown
    alloc_mem: np.ndarray
    req_cpu: np.ndarray  # requested by bound pods (kube-scheduler's view)
    req_mem: np.ndarray

    def rows(self, candidates: Sequence[str]) -> np.ndarray:
        """Row of each candidate; -1 when the state knows neither its usage nor its resources."""
        return lookup(self.index, candidates)

    @staticmethod
    def take(arr: np.ndarray, rows: np.ndarray, fill: float = float("nan")) -> np.ndarray:
        """arr[..., rows] with ``fill`` where the row is -1."""
        if arr.shape[-1] == 0:
            return np.full((*arr.shape[:-1], rows.size), fill)
        out = arr[..., np.where(rows >= 0, rows, 0)]
        return np.where(rows >= 0, out, fill)


def _f(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def build_usage_arrays(usage: Mapping[str, NodeUsage], nodes: Mapping[str, NodeResources]) -> UsageArrays:
    names = list(dict.fromkeys([*usage, *nodes]))
    m = len(names)
    cpu = np.full((3, m), np.nan)
    mem = np.full((3, m), np.nan)
    cols = np.full((5, m), np.nan)
    alloc = np.zeros((4, m))
    for i, name in enumerate(names):
        u = usage.get(name)
        if u is not None and not u.stale:
            cpu[:, i] = (_f(u.cpu_15m), _f(u.cpu_1h), _f(u.cpu_1d))
            mem[:, i] = (_f(u.mem_15m), _f(u.mem_1h), _f(u.mem_1d))
            cols[:, i] = (_f(u.cpu_stddev_1h), _f(u.mem_stddev_1h), _f(u.net_used_bps_mean),
                          _f(u.net_used_bps_stddev), _f(u.net_capacity_bps))
        node = nodes.get(name)
        if node is not None:
            alloc[:, i] = (node.allocatable_cpu_millicores, node.allocatable_memory_bytes,
                           node.requested_cpu_millicores, node.requested_memory_bytes)
    return UsageArrays({n: i for i, n in enumerate(names)}, cpu, mem, cols[0], cols[1], cols[2], cols[3],
                       cols[4], alloc[0], alloc[1], alloc[2], alloc[3])


def with_requested(arrays: UsageArrays, nodes: Iterable[NodeResources]) -> UsageArrays:
    """``arrays`` with the requested CPU/memory of ``nodes`` (already in the index) replaced: a bind
    changes two numbers, not the 5,000-row build. Copy-on-write: states sharing ``arrays`` keep theirs."""
    req_cpu = arrays.req_cpu.copy()
    req_mem = arrays.req_mem.copy()
    for node in nodes:
        i = arrays.index[node.name]
        req_cpu[i] = node.requested_cpu_millicores
        req_mem[i] = node.requested_memory_bytes
    return replace(arrays, req_cpu=req_cpu, req_mem=req_mem)


# --- free room per zone (placement plans) --------------------------------------------------------


def _node_room(node: NodeResources, max_pods: int) -> tuple[int, int, int]:
    return (max(node.allocatable_cpu_millicores - node.requested_cpu_millicores, 0),
            max(node.allocatable_memory_bytes - node.requested_memory_bytes, 0),
            max(max_pods - node.pod_count, 0))


class ZoneRoom:
    """Free (cpu millicores, memory bytes, pod slots) summed per zone label, each node's part never
    negative. The placement plans ask for it on every filter call; summing 5,000 nodes each time
    cost more than the rest of the call, so it is summed once per node set and then patched by the
    binds' nodes (``patched``), as the usage arrays are."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: tuple[int, dict[str, tuple[int, int, int]]] | None = None

    def get(self, nodes: Mapping[str, NodeResources], max_pods: int) -> Mapping[str, tuple[int, int, int]]:
        """zone -> free room; do not mutate."""
        known = self._value
        if known is not None and known[0] == max_pods:
            return known[1]
        room: dict[str, list[int]] = {}
        for node in nodes.values():
            part = _node_room(node, max_pods)
            total = room.get(node.zone)
            if total is None:
                room[node.zone] = list(part)
            else:
                total[0] += part[0]
                total[1] += part[1]
                total[2] += part[2]
        value = {zone: (a, b, c) for zone, (a, b, c) in room.items()}
        with self._lock:
            self._value = (max_pods, value)
        return value

    def patched(self, changes: Iterable[tuple[NodeResources, NodeResources]]) -> ZoneRoom:
        """The room after nodes changed from ``old`` to ``new`` in requested resources only (same zone
        and capacity); left to be summed on first use when it was never asked for."""
        out = ZoneRoom()
        known = self._value
        if known is None:
            return out
        max_pods, value = known
        room = dict(value)
        for old, new in changes:
            a, b = _node_room(old, max_pods), _node_room(new, max_pods)
            cpu, mem, pods = room.get(new.zone, (0, 0, 0))
            room[new.zone] = (cpu - a[0] + b[0], mem - a[1] + b[1], pods - a[2] + b[2])
        out._value = (max_pods, room)
        return out


# --- all of them -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateIndexes:
    vectors: TopologyVectors
    places: Places
    usage: UsageArrays
    # Row in ``usage`` of every topology node (-1: unknown) and whether the cluster has the node.
    topology_rows: np.ndarray
    topology_in_cluster: np.ndarray
    zone_room: ZoneRoom = field(default_factory=ZoneRoom, compare=False, repr=False)

    def with_requested(self, changes: Sequence[tuple[NodeResources, NodeResources]]) -> StateIndexes:
        """These indexes after binds changed what nodes have requested, given as (old, new) pairs of
        the same node (everything else shared)."""
        return replace(self, usage=with_requested(self.usage, (new for _, new in changes)),
                       zone_room=self.zone_room.patched(changes))


def build_indexes(*, topology: Topology, nodes: Mapping[str, NodeResources], usage: Mapping[str, NodeUsage],
                  vectors: TopologyVectors | None = None, places: Places | None = None) -> StateIndexes:
    """Indexes of a state; ``vectors``/``places`` are reused when the caller knows they still hold
    (same topology; same topology and node zones/regions)."""
    arrays = build_usage_arrays(usage, nodes)
    rows = arrays.rows(topology.nodes)
    rows.setflags(write=False)
    in_cluster = np.fromiter((n in nodes for n in topology.nodes), dtype=bool, count=topology.size)
    in_cluster.setflags(write=False)
    return StateIndexes(
        vectors if vectors is not None and vectors.topology is topology else TopologyVectors(topology),
        places if places is not None else build_places(nodes, topology),
        arrays, rows, in_cluster,
    )
