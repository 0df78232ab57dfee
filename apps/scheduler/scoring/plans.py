"""Placement plans: place an AppGroup as a whole, so quality no longer depends on the arrival order.

Per-pod scoring decides one pod at a time; the first pods can take the best zone's room that the
heavy pods arriving last needed. A plan decides, for every pod of the AppGroup not yet bound, the
*zone* its workload's replicas should go to, over the zones' free capacity, the topology and the
pods already placed. Steering (the ``plan`` scorer and filter in ``engine.py``) then leads each pod
to its planned zone, and the network scorer picks the node inside it.

Model (zone granularity, so it stays small on 5,000 nodes): ``t[w, z]`` pods of workload w in zone
z (placed ones fixed, new ones ``x[w, z]`` integer); every dependency edge u -> d contributes
``coef_e * sum_{z1,z2} S_e[z1, z2] * t[u, z1] * t[d, z2]`` where ``S_e`` is the mean ComputeScore
between the zones' nodes (the paper's network score, with Algorithm 2's normalizations in
``coef_e``) or ``1 - cost / max cost`` (the KEP's network cost). The MILP (scipy's HiGHS)
linearizes the product with transportation variables (as ``evaluation/optimum.py``); a pod that
cannot be placed costs far more than any score, so an infeasible AppGroup gets a plan for what
fits. Pairs of zones that break a dependency's max network cost or min bandwidth are forbidden by
zone-use indicators. A greedy placement improved by moves and swaps (local search, several
starts) always answers; the MILP replaces it when it proves a better optimum in the time left;
then each used zone's pods are placed on its nodes the same way (``_refine_zone``). The budget
counts work (array elements touched, ``_Deadline``), not time, so the same state gives the same plan
on any machine under any load; wall time is only a safety net, reported in the plan when it cuts.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
from scipy.optimize import Bounds, milp

from apps.appgroups.graph import TOPOLOGY_MODES, AppGroupSpec, Sensitivity
from apps.topology.topomath import Topology

from .linear import Rows
from .network_overhead import MAX_COST
from .network_score import DEFAULT_SAME_NODE_SCORE, pair_scores
from .state import ClusterState, NodeResources, evolve

DEFAULT_BUDGET_S = 0.050
# What a plan maximises (a ``plan`` argument of the profile): the paper's network score (default), the KEP's
# network cost, the modelled call time (latency: RTT + 4 KiB at the bandwidth + loss x RTO per packet, as the
# evaluation's LatencyModel) or cross-zone / cross-region transfer (bytes x TransferPrices); each as a
# 0..1 benefit per zone pair (1 = free), weighted per dependency as the score is (traffic-weighted with weights).
OBJECTIVES = ("network-score", "network-cost", "latency", "transfer-cost")


@dataclass(frozen=True)
class TransferPrices:
    """USD per GB between two zones of a region and between regions (the ``transfer-cost`` objective;
    a profile's ``plan`` arguments ``zone_usd_per_gb`` / ``region_usd_per_gb``). The defaults are
    examples (AWS list prices: $0.01/GB each way between zones, from $0.02/GB between regions); only
    their ratio matters to the plan. docs/evaluation.md "Transfer cost"."""

    zone: float = 0.02
    region: float = 0.02


DEFAULT_TRANSFER_PRICES = TransferPrices()


def objective_key(objective: str, prices: TransferPrices = DEFAULT_TRANSFER_PRICES) -> str:
    """What tells two plans' objectives apart (a plan book's key): the name, with the prices for
    ``transfer-cost`` when they are not the defaults."""
    if objective != "transfer-cost" or prices == DEFAULT_TRANSFER_PRICES:
        return objective
    return f"{objective}(zone={prices.zone:g},region={prices.region:g})"


CALL_BYTES = 4 * 1024
CALL_PACKETS = 4  # ceil(4 KiB / 1448) + the request's own packet
RTO_MS = 200.0
# soft: the plan is a preference; zone / region: the whole AppGroup in one zone / region, or its pods wait.
MODES = TOPOLOGY_MODES
_STRICTNESS = {"soft": 0, "region": 1, "zone": 2}  # one zone implies one region


def stricter_mode(*modes: str) -> str:
    """The strictest of the modes asked (a profile's and an AppGroup's): soft < region < zone."""
    return max(modes, key=lambda mode: _STRICTNESS.get(mode, 0))
MAX_PODS_PER_NODE = 110
# Nodes per zone sampled for the zone-to-zone score matrices (measured pairs are near-uniform in a zone).
ZONE_SAMPLE = 8
# The MILP is tried only up to this many transportation variables (edges x zones²): beyond it HiGHS
# rarely finishes within 50 ms on one core, and its time is better spent placing pods on nodes.
MAX_MILP_PAIR_VARS = 400
# The budget grows with the model (workloads x zones) beyond this size, up to MAX_ADAPTED_BUDGET_S:
# a 100-workload, 12-zone joint plan needs ~10x the work of a 10-workload one to converge (issue 20).
PLAN_SIZE_REFERENCE = 120
MAX_ADAPTED_BUDGET_S = 2.0
# Without a wall-time safety net (the evaluation harness) the MILP still stops here.
MILP_WALL_CAP_S = 10.0
# Placing a pod is worth more than any network score (objective units: 0..100 per AppGroup).
PLACE_BONUS = 1_000.0


@dataclass(frozen=True)
class PlacementPlan:
    """Where the AppGroup's pods should go, per workload and zone (placed pods included)."""

    appgroup: str  # "namespace/name"
    plan_id: str
    method: str  # "milp" | "heuristic" | "none"
    objective: str  # one of OBJECTIVES
    value: float  # predicted average network score (0..100), or 100 - normalized cost
    elapsed_ms: float
    zones: Mapping[str, Mapping[str, int]]  # workload -> zone -> pods (placed + planned)
    unplaced: Mapping[str, int] = field(default_factory=dict)  # workload -> pods that fit nowhere
    # workload -> node -> pods, for zones small enough to plan node by node
    nodes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    diagnosis: tuple[str, ...] = ()
    reason: str = ""  # why this plan was (re)computed
    # False when nothing told zones apart (no dependency, or no measured link): steering would only
    # crowd the AppGroup into one zone, so the filter does not narrow on such a plan.
    informed: bool = True

    def zones_for(self, workload: str) -> Mapping[str, int]:
        return self.zones.get(workload, {})

    def nodes_for(self, workload: str) -> Mapping[str, int]:
        return self.nodes.get(workload, {})

    def summary(self) -> str:
        parts = [f"{w}->{'+'.join(f'{z}x{n}' if n > 1 else z for z, n in sorted(zs.items()))}"
                 for w, zs in sorted(self.zones.items()) if zs]
        return f"plan {self.plan_id} ({self.method}, {self.value:.1f}): " + ", ".join(parts)


@dataclass(frozen=True)
class _Zones:
    names: tuple[str, ...]
    regions: tuple[str, ...]
    free: np.ndarray  # (Z, 3): cpu millicores, memory bytes, pod slots
    node_free: tuple[np.ndarray, ...]  # per zone: (nodes, 3)
    samples: tuple[np.ndarray, ...]  # per zone: topology positions of sampled nodes


def _free_row(node: NodeResources) -> np.ndarray:
    """Free (cpu millicores, memory bytes, pod slots) of one node, never negative."""
    return np.maximum(np.array([node.allocatable_cpu_millicores - node.requested_cpu_millicores,
                                node.allocatable_memory_bytes - node.requested_memory_bytes,
                                MAX_PODS_PER_NODE - node.pod_count], dtype=np.float64), 0.0)


def _zones(state: ClusterState, reserved: Mapping[str, np.ndarray] | None) -> _Zones:
    index = state.topology.index
    by_zone: dict[str, list[str]] = {}
    region_of: dict[str, str] = {}
    for name, node in state.nodes.items():
        by_zone.setdefault(node.zone, []).append(name)
        region_of.setdefault(node.zone, node.region)
    names = tuple(sorted(by_zone))
    free_rows, node_rows, samples = [], [], []
    for zone in names:
        nodes = [state.nodes[n] for n in by_zone[zone]]
        rows = np.maximum(np.array([(n.allocatable_cpu_millicores - n.requested_cpu_millicores,
                                     n.allocatable_memory_bytes - n.requested_memory_bytes,
                                     MAX_PODS_PER_NODE - n.pod_count) for n in nodes], dtype=np.float64), 0.0
                          ).reshape(len(nodes), 3)
        total = rows.sum(axis=0)
        if reserved and zone in reserved:
            total = np.maximum(total - reserved[zone], 0.0)
        free_rows.append(total)
        node_rows.append(rows)
        positions = sorted(index[n] for n in by_zone[zone] if n in index)
        step = max(1, len(positions) // ZONE_SAMPLE)
        samples.append(np.array(positions[::step][:ZONE_SAMPLE], dtype=np.int64))
    free = np.array(free_rows, dtype=np.float64).reshape(len(names), 3)
    return _Zones(names, tuple(region_of[z] for z in names), free, tuple(node_rows), tuple(samples))


def _block_means(matrix: np.ndarray, zones: _Zones, *, diagonal: float) -> np.ndarray:
    """Mean of ``matrix`` (over the concatenated samples) per zone pair, NaN entries left out;
    inside a zone the node's pair with itself is left out too (``diagonal`` for a one-node zone)."""
    sizes = np.array([z.size for z in zones.samples], dtype=np.int64)
    member = np.repeat(np.arange(len(sizes)), sizes)
    onehot = (member[None, :] == np.arange(len(sizes))[:, None]).astype(np.float64)  # (Z, S)
    known = np.isfinite(matrix)
    np.fill_diagonal(known, False)
    values = np.where(known, matrix, 0.0)
    sums = onehot @ values @ onehot.T
    counts = onehot @ known.astype(np.float64) @ onehot.T
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(counts > 0, sums / np.maximum(counts, 1.0), np.nan)
    single = np.flatnonzero(sizes == 1)
    out[single, single] = diagonal
    return out


def _zone_scores(state: ClusterState, zones: _Zones, sensitivity: Sensitivity) -> np.ndarray:
    """Mean ComputeScore between the sampled nodes of every zone pair (same-node pairs left out,
    unless a zone has one node: then its pods share it). A function of the topology and the
    samples only (not of what is bound), so it is kept on the state's places, which hold while the
    topology and every node's zone do: a plan recomputed after binds does not score them again."""
    nz = len(zones.names)
    everything = np.concatenate(zones.samples) if nz else np.zeros(0, dtype=np.int64)
    if state.topology.size == 0 or everything.size == 0:
        return np.zeros((nz, nz))
    derived = state.indexes.places.derived
    key = ("zone-scores", sensitivity, zones.names, tuple(z.size for z in zones.samples), everything.tobytes())
    known: np.ndarray | None = derived.get(key)
    if known is not None:
        return known
    matrix = pair_scores(state.indexes.vectors, everything, everything, sensitivity)
    out = cast(np.ndarray, np.nan_to_num(_block_means(matrix, zones, diagonal=DEFAULT_SAME_NODE_SCORE), nan=0.0))
    out.setflags(write=False)
    derived[key] = out
    return out


def _zone_costs(state: ClusterState, zones: _Zones) -> np.ndarray:
    """KEP network cost between zones (NetworkOverhead's rules: 1 in a zone, zone/region costs
    from the topology, MaxCost when unknown)."""
    topo = state.topology
    nz = len(zones.names)
    out = np.full((nz, nz), float(MAX_COST))
    for a, (za, ra) in enumerate(zip(zones.names, zones.regions, strict=True)):
        for b, (zb, rb) in enumerate(zip(zones.names, zones.regions, strict=True)):
            if a == b and za:
                out[a, b] = 1.0
            elif ra == rb and ra and za and zb:
                out[a, b] = topo.zone_costs.get((za, zb), float(MAX_COST))
            elif ra and rb and ra != rb:
                out[a, b] = topo.region_costs.get((ra, rb), float(MAX_COST))
    return out


def _zone_call_ms(state: ClusterState, zones: _Zones) -> np.ndarray:
    """Modelled time of one call between the zones' sampled nodes (the evaluation's latency model; an
    unmeasured pair counts as 100 ms, 1 Mbit/s, 10 % loss; a one-node zone talks over loopback)."""
    everything = np.concatenate(zones.samples) if zones.samples else np.zeros(0, dtype=np.int64)
    topo = state.topology
    ix = np.ix_(everything, everything)
    lat = np.nan_to_num(topo.latency_ms[ix], nan=100.0)
    bw = np.nan_to_num(topo.bandwidth_mbps[ix], nan=1.0)
    loss = np.nan_to_num(topo.loss_pct[ix], nan=10.0) / 100.0
    call = lat + CALL_BYTES * 8 / (np.maximum(bw, 1e-3) * 1e6) * 1e3 + CALL_PACKETS * loss * RTO_MS
    return _block_means(call, zones, diagonal=0.05)


def _zone_transfer_usd(zones: _Zones, prices: TransferPrices) -> np.ndarray:
    """Price per GB between zones: 0 inside one, the zone or region price otherwise."""
    regions = np.array(zones.regions, dtype=object)
    same_region = regions[:, None] == regions[None, :]
    out = np.where(same_region, prices.zone, prices.region)
    np.fill_diagonal(out, 0.0)
    per_gb: np.ndarray = out.astype(np.float64)
    return per_gb


def _benefit(cost: np.ndarray) -> np.ndarray:
    """A cost matrix as a 0..1 benefit (1 = free, 0 = the costliest known pair; unknown pairs 0)."""
    top = float(np.nanmax(cost)) if np.isfinite(cost).any() else 0.0
    if top <= 0:
        return np.ones_like(cost)
    benefit: np.ndarray = np.nan_to_num(1.0 - cost / top, nan=0.0)
    return benefit


def _zone_bandwidth_mbps(state: ClusterState, zones: _Zones) -> np.ndarray:
    everything = np.concatenate(zones.samples) if zones.samples else np.zeros(0, dtype=np.int64)
    bw = state.topology.bandwidth_mbps[np.ix_(everything, everything)]
    return _block_means(bw, zones, diagonal=np.inf)  # a one-node zone: pods share the node


@dataclass
class _Problem:
    group: AppGroupSpec
    zones: _Zones
    names: list[str]  # workloads
    demand: np.ndarray  # (W, 3) per pod
    replicas: np.ndarray  # (W,) total pods
    placed: np.ndarray  # (W, Z) pods already bound
    slots: np.ndarray  # (W, Z) pods of w that fit the zone's nodes one by one
    edges: list[tuple[int, int, np.ndarray, float]]  # (u, d, S[z1, z2], coef)
    forbidden: list[tuple[int, int, int, int]]  # (u, z1, d, z2): t[u, z1] > 0 and t[d, z2] > 0 not allowed
    diagnosis: list[str]
    sensitivities: list[Sensitivity] = field(default_factory=list)  # per edge (node-level refinement)
    cell: np.ndarray | None = None  # per workload, its cell (the cell model of minZones; else None)

    def __post_init__(self) -> None:
        nz = self.placed.shape[1]
        self.us = np.array([e[0] for e in self.edges], dtype=np.int64)
        self.ds = np.array([e[1] for e in self.edges], dtype=np.int64)
        self.weighted = (np.array([e[2] * e[3] for e in self.edges]).reshape(len(self.edges), nz, nz))
        self.forbid = tuple(np.array([f[k] for f in self.forbidden], dtype=np.int64) for k in range(4))

    @property
    def todo(self) -> np.ndarray:
        return cast(np.ndarray, np.maximum(self.replicas - self.placed.sum(axis=1), 0))


def _problem(state: ClusterState, group: AppGroupSpec, objective: str,
             reserved: Mapping[str, np.ndarray] | None, prices: TransferPrices = DEFAULT_TRANSFER_PRICES) -> _Problem:
    zones = _zones(state, reserved)
    zi = {z: i for i, z in enumerate(zones.names)}
    workloads = [w for w in group.workloads if w.replicas > 0]
    names = [w.name for w in workloads]
    wi = {n: i for i, n in enumerate(names)}
    nw, nz = len(workloads), len(zones.names)
    demand = np.array([[w.cpu_request_millicores, w.memory_request_bytes, 1] for w in workloads],
                      dtype=np.float64).reshape(nw, 3)
    placed = np.zeros((nw, nz))
    for i, w in enumerate(workloads):
        for node in state.placements.get((group.namespace, group.name, w.name), ()):
            res = state.nodes.get(node)
            if res is not None:
                placed[i, zi[res.zone]] += 1
    replicas = np.maximum(np.array([w.replicas for w in workloads], dtype=np.float64), placed.sum(axis=1))
    slots = np.zeros((nw, nz))
    divisor = np.where(demand > 0, demand, 1.0)[:, None, :]
    for z in range(nz):  # pods of each workload the zone's nodes hold, one node at a time (whole numbers: exact sums)
        rows = zones.node_free[z]
        per_node = np.where(demand[:, None, :] > 0, np.floor(rows[None, :, :] / divisor), np.inf).min(axis=2)
        slots[:, z] = np.minimum(per_node.sum(axis=1), replicas)
    diagnosis: list[str] = []
    # Algorithm 2's normalizations, as evaluation/optimum.py (so the value is the average network score).
    total_w = np.zeros(nw)
    raw: list[tuple[int, int, Any, float]] = []
    for w in workloads:
        for dep in w.dependencies:
            if dep.target in wi and dep.target != w.name:
                weight = w.weight * dep.weight  # the caller's importance times the edge's weight, as Score
                raw.append((wi[w.name], wi[dep.target], dep, weight))
                total_w[wi[w.name]] += weight
                total_w[wi[dep.target]] += weight
    importance = np.array([w.weight for w in workloads], dtype=np.float64)
    imp_sum = float(importance[total_w > 0].sum()) or 1.0
    costs = _zone_costs(state, zones) if objective == "network-cost" or any(
        d.max_network_cost is not None for _, _, d, _ in raw) else None
    bandwidth = _zone_bandwidth_mbps(state, zones) if any(d.min_bandwidth_bps for _, _, d, _ in raw) else None
    score_cache: dict[Sensitivity, np.ndarray] = {}
    fixed = (_benefit(_zone_call_ms(state, zones)) if objective == "latency" and raw else
             _benefit(_zone_transfer_usd(zones, prices)) if objective == "transfer-cost" and raw else None)
    edges: list[tuple[int, int, np.ndarray, float]] = []
    forbidden: list[tuple[int, int, int, int]] = []
    for u, d, dep, weight in raw:
        if objective == "network-cost":
            assert costs is not None
            matrix = 1.0 - np.minimum(costs, MAX_COST) / float(MAX_COST)
        elif fixed is not None:
            matrix = fixed
        else:
            if dep.sensitivity not in score_cache:
                score_cache[dep.sensitivity] = _zone_scores(state, zones, dep.sensitivity)
            matrix = score_cache[dep.sensitivity]
        coef = sum(importance[side] * weight / (total_w[side] * replicas[u] * replicas[d])
                   for side in (u, d) if total_w[side] > 0) * 100.0 / imp_sum
        edges.append((u, d, matrix, coef))
        bad = np.zeros((nz, nz), dtype=bool)
        if dep.max_network_cost is not None and costs is not None:
            bad |= costs > dep.max_network_cost
        if dep.min_bandwidth_bps and bandwidth is not None:
            bad |= ~(bandwidth * 1e6 >= dep.min_bandwidth_bps)
        for z1, z2 in zip(*np.nonzero(bad), strict=True):
            if placed[u, z1] > 0 and placed[d, z2] > 0:
                diagnosis.append(f"{names[u]} in {zones.names[z1]} and {names[d]} in {zones.names[z2]} are already "
                                 "placed beyond the dependency's max network cost or min bandwidth")
            else:
                forbidden.append((u, int(z1), d, int(z2)))
    return _Problem(group, zones, names, demand, replicas, placed, slots, edges, forbidden, diagnosis,
                    [dep.sensitivity for _u, _d, dep, _w in raw])


def _value(problem: _Problem, t: np.ndarray) -> float:
    """The objective of pod counts ``t`` (W, Z) under uniform pairing: exactly Algorithm 2's mean."""
    if not problem.edges:
        return 0.0
    return float(np.einsum("ez,ezy,ey->", t[problem.us], problem.weighted, t[problem.ds]))


# ------------------------------------------------------------------------------------------- cells

# In the cell model every pair of copies keeps its edge (so the model's value is the uniform one the
# evaluation and the network score measure) and the pairs inside a cell count this much more: among
# equally good plans, the one whose zones hold complete call chains (what PreferClose routing keeps in zone).
CELL_BONUS = 0.25


@dataclass(frozen=True)
class _Cells:
    """High availability (``minZones``) as *cells*: a workload that must span k zones is split into k
    copies (its replicas shared out), a dependency's cell pairs are cell c of the caller and cell c of the
    callee (or its only copy when that one is exempt), and two copies of one
    workload may never share a zone. The ordinary planner then packs each cell as it packs an AppGroup:
    into one zone where it fits, so every zone a workload uses also holds the chain it calls, and
    Services with ``trafficDistribution: PreferClose`` keep the traffic there. The cell model scores
    every pair of pods (uniform routing, as the network score does), in-cell pairs CELL_BONUS more."""

    problem: _Problem  # the split model
    owner: np.ndarray  # (W',) original workload of each copy

    def merge(self, x: np.ndarray) -> np.ndarray:
        """Pod counts of the copies (W', Z) summed back per original workload (W, Z)."""
        out = np.zeros((int(self.owner.max(initial=-1)) + 1, x.shape[1]))
        np.add.at(out, self.owner, x)
        return out

    def on(self, zones: _Zones) -> _Problem:
        """The split model over ``zones`` (the packing rounds shrink the zones' free room)."""
        return self.problem if zones is self.problem.zones else replace(self.problem, zones=zones)


def _cells(problem: _Problem, min_zones: Sequence[int]) -> _Cells | None:
    """The cell model of ``problem`` for per-workload ``min_zones`` (capped at the cluster's zones and
    the replicas), or None when no workload asks for more than one zone."""
    nw, nz = problem.placed.shape
    ks = [max(1, min(int(k), nz, int(problem.replicas[w]))) for w, k in enumerate(min_zones)]
    if nw == 0 or max(ks, default=1) < 2:
        return None
    owner: list[int] = []
    first: list[int] = []  # index of each workload's first copy
    sizes: list[int] = []
    placed_rows: list[np.ndarray] = []
    for w, k in enumerate(ks):
        first.append(len(owner))
        r = int(problem.replicas[w])
        share = [r // k + (1 if c < r % k else 0) for c in range(k)]
        placed = np.zeros((k, nz))
        left = list(share)
        # Pods already bound: each zone's pods to the copy with the most room left (a zone, one cell).
        for z in np.argsort(-problem.placed[w], kind="stable").tolist():
            n = int(problem.placed[w, z])
            while n > 0:
                c = int(np.argmax(left)) if max(left) > 0 else 0
                take = n if left[c] <= 0 else min(n, left[c])
                placed[c, z] += take
                left[c] -= take
                n -= take
        for c in range(k):
            owner.append(w)
            sizes.append(max(share[c], int(placed[c].sum())))
            placed_rows.append(placed[c])
    own = np.array(owner, dtype=np.int64)
    placed_all = np.array(placed_rows, dtype=np.float64).reshape(len(owner), nz)
    replicas = np.array(sizes, dtype=np.float64)
    slots = np.minimum(problem.slots[own], replicas[:, None])
    edges: list[tuple[int, int, np.ndarray, float]] = []
    sens: list[Sensitivity] = []
    for e, (u, d, matrix, coef) in enumerate(problem.edges):
        ku, kd = ks[u], ks[d]
        same_cell = {(first[u] + c, first[d] + (c % kd)) for c in range(ku)} if ku >= kd else \
            {(first[u] + (c % ku), first[d] + c) for c in range(kd)}
        for a in range(first[u], first[u] + ku):
            for b in range(first[d], first[d] + kd):
                edges.append((a, b, matrix, coef * (1.0 + CELL_BONUS if (a, b) in same_cell else 1.0)))
                if problem.sensitivities:
                    sens.append(problem.sensitivities[e])
    forbidden = [(a, z1, b, z2) for (u, z1, d, z2) in problem.forbidden
                 for a in range(first[u], first[u] + ks[u]) for b in range(first[d], first[d] + ks[d])]
    for w, k in enumerate(ks):
        for c1 in range(k):
            for c2 in range(c1 + 1, k):
                forbidden.extend((first[w] + c1, z, first[w] + c2, z) for z in range(nz))
    names = [f"{problem.names[w]}#{c}" if ks[w] > 1 else problem.names[w]
             for w, k in enumerate(ks) for c in range(k)]
    cell = np.array([c for k in ks for c in range(k)], dtype=np.int64)
    split = _Problem(problem.group, problem.zones, names, problem.demand[own], replicas, placed_all, slots, edges,
                     forbidden, [], sens, cell)
    return _Cells(split, own)


def spread_zones(counts: Mapping[str, int], zone: str, left: int, min_zones: int) -> bool:
    """Can a workload with pods per zone ``counts`` still span ``min_zones`` zones once one more pod goes
    to ``zone`` and ``left`` pods follow (each of them able to open a new zone)?"""
    used = {z for z, n in counts.items() if n > 0} | {zone}
    return len(used) + max(left, 0) >= min_zones


def _served(name: str, lost: str, zones_of: Mapping[str, Mapping[str, int]], calls: Mapping[str, list[str]],
            served: dict[str, set[str]], stack: tuple[str, ...]) -> set[str]:
    """Zones other than ``lost`` where ``name`` runs together with (recursively) all it calls; in a
    cycle, a member already on the ``stack`` counts as served where it runs."""
    if name in served:
        return served[name]
    here = {z for z, n in zones_of.get(name, {}).items() if n > 0 and z != lost}
    for target in calls.get(name, ()):
        if target not in stack:
            here &= _served(target, lost, zones_of, calls, served, (*stack, name))
    served[name] = here
    return here


def survives_zone_loss(group: AppGroupSpec, zones_of: Mapping[str, Mapping[str, int]], zones: Sequence[str], *,
                       chains: bool = False) -> tuple[bool, tuple[str, ...]]:
    """Does ``group`` survive the loss of any one of ``zones``: every workload keeps a replica in a
    surviving zone (so every call still has a callee). With ``chains``, the stricter cell property: that
    zone also holds (recursively) every dependency it calls, so each request can stay in one zone.
    Also the zones whose loss breaks it."""
    names = [w.name for w in group.workloads if w.replicas > 0]
    calls = {w.name: [d.target for d in w.dependencies if d.target in names and d.target != w.name]
             for w in group.workloads} if chains else {}
    breaking: list[str] = []
    for lost in zones:
        served: dict[str, set[str]] = {}
        if any(not _served(name, lost, zones_of, calls, served, ()) for name in names):
            breaking.append(lost)
    return not breaking, tuple(breaking)


# ------------------------------------------------------------------------------------------- MILP

def adapted_budget(budget_s: float, workloads: int, zones: int) -> float:
    """The work budget (nominal seconds) for a model of ``workloads`` x ``zones``: the configured
    one, scaled up for models larger than PLAN_SIZE_REFERENCE, never above MAX_ADAPTED_BUDGET_S
    (nor below what was configured)."""
    scaled = budget_s * max(1.0, workloads * zones / PLAN_SIZE_REFERENCE)
    return max(budget_s, min(scaled, MAX_ADAPTED_BUDGET_S))


def _solve_milp(problem: _Problem, time_limit: float) -> tuple[np.ndarray | None, bool]:
    """The zone MILP's proven optimum (None if not proven within ``time_limit``), and whether the
    time limit (the wall-time safety net) stopped it."""
    nw, nz = problem.placed.shape
    ne = len(problem.edges)
    use_b = bool(problem.forbidden)
    n_x, n_y, n_b = nw * nz, ne * nz * nz, (nw * nz if use_b else 0)
    n = n_x + n_y + n_b
    c = np.zeros(n)
    c[:n_x] = -PLACE_BONUS  # every new pod placed
    rows = Rows()
    add = rows.add

    todo = problem.todo
    placed = problem.placed
    for w in range(nw):  # at most the pods not yet placed
        add([(w * nz + z, 1.0) for z in range(nz)], 0.0, float(todo[w]))
    for k in range(3):  # capacity per zone
        for z in range(nz):
            entries = [(w * nz + z, float(problem.demand[w, k])) for w in range(nw) if problem.demand[w, k]]
            if entries:
                add(entries, -np.inf, float(problem.zones.free[z, k]))
    for e, (u, d, matrix, coef) in enumerate(problem.edges):  # transportation bounds on pod pairs
        base = n_x + e * nz * nz
        c[base:base + nz * nz] = -coef * matrix.ravel()
        rep_u, rep_d = problem.replicas[u], problem.replicas[d]
        for z1 in range(nz):
            add([*((base + z1 * nz + z2, 1.0) for z2 in range(nz)), (u * nz + z1, -rep_d)],
                -np.inf, float(rep_d * placed[u, z1]))
        for z2 in range(nz):
            add([*((base + z1 * nz + z2, 1.0) for z1 in range(nz)), (d * nz + z2, -rep_u)],
                -np.inf, float(rep_u * placed[d, z2]))
    if use_b:
        base = n_x + n_y
        for w in range(nw):
            for z in range(nz):
                # t[w, z] > 0 => b[w, z] = 1
                add([(w * nz + z, 1.0), (base + w * nz + z, -float(problem.replicas[w]))], -np.inf,
                    float(-placed[w, z]))
        for u, z1, d, z2 in problem.forbidden:
            add([(base + u * nz + z1, 1.0), (base + d * nz + z2, 1.0)], -np.inf, 1.0)
    upper = np.concatenate([problem.slots.ravel(), np.full(n_y, np.inf), np.ones(n_b)])
    integrality = np.concatenate([np.ones(n_x), np.zeros(n_y), np.ones(n_b)])
    result = milp(c, constraints=rows.constraint(n), integrality=integrality,
                  bounds=Bounds(np.zeros(n), upper),
                  options={"time_limit": max(time_limit, 1e-3), "mip_rel_gap": 1e-4, "disp": False})
    if result.x is None or result.status != 0:  # only a proven optimum: a time-limited incumbent varies run to run
        return None, result.status == 1
    return cast(np.ndarray, np.rint(result.x[:n_x]).reshape(nw, nz)), False


# -------------------------------------------------------------------------------------- heuristic

# The budget counts *work*, not time: every step of the heuristics charges the array elements it
# touches (plus a fixed overhead per numpy call), so the same state gives the same plan on any machine
# under any load (issue 20). ``WORK_PER_SECOND`` converts the configured budget (seconds, as before)
# into work units: measured on the 2-core development machine (docs/benchmarks.md, "Placement plans"),
# so a plan takes about its budget there. Wall time is only a safety net (WALL_SLACK x the budget):
# when it cuts a plan short the plan says so in its diagnosis, as it may then differ between machines.
WALL_SLACK = 4.0
# ... and never more than this much wall time, whatever the (adapted) budget: far below kube-scheduler's
# extender httpTimeout (5 s as shipped), as a plan is computed inside a filter request.
MAX_WALL_S = 2.0
WORK_PER_SECOND = 2.0e7
CALL_OVERHEAD = 400.0  # work units charged per numpy call (~20 µs)


class _Deadline:
    """A work budget (units, see WORK_PER_SECOND) with a wall-time safety net. A child budget charges
    its parent too, so a plan's stages share one total."""

    __slots__ = ("left", "parent", "wall", "wall_hit")

    def __init__(self, seconds: float, slack: float = WALL_SLACK, *, parent: _Deadline | None = None) -> None:
        self.left = seconds * WORK_PER_SECOND
        self.parent = parent
        self.wall = (time.perf_counter() + min(seconds * slack, MAX_WALL_S) if slack != float("inf")
                     else float("inf"))
        self.wall_hit = False

    def child(self, fraction_of_left: float, slack: float = WALL_SLACK) -> _Deadline:
        sub = _Deadline(max(self.left, 0.0) * fraction_of_left / WORK_PER_SECOND, slack, parent=self)
        sub.wall = self.wall  # the safety net bounds the whole plan, not each stage's share of it
        return sub

    def spend(self, units: float) -> None:
        self.left -= units
        if self.parent is not None:
            self.parent.spend(units)

    def expired(self) -> bool:
        if self.left <= 0:
            return True
        if time.perf_counter() >= self.wall:
            self._hit()
            return True
        return False

    def _hit(self) -> None:
        self.wall_hit = True
        if self.parent is not None:
            self.parent._hit()

    def remaining(self) -> float:
        """Work left, in seconds of the nominal rate."""
        return max(0.0, self.left) / WORK_PER_SECOND


def _gain_parts(problem: _Problem, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The edges leaving and entering workload w (their weights and far ends), for ``_gain_of``."""
    out, inc = problem.us == w, problem.ds == w
    return problem.weighted[out], problem.ds[out], problem.us[inc], problem.weighted[inc]


def _gain_of(parts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], t: np.ndarray) -> np.ndarray:
    w_out, far_out, far_in, w_in = parts
    g = np.einsum("ezy,ey->z", w_out, t[far_out])
    return cast(np.ndarray, g + np.einsum("ez,ezy->y", t[far_in], w_in))


def _gain(problem: _Problem, t: np.ndarray, w: int) -> np.ndarray:
    """Objective gained per extra pod of workload w in each zone (others fixed; linear in t[w])."""
    return _gain_of(_gain_parts(problem, w), t)


def _allowed(problem: _Problem, t: np.ndarray, w: int) -> np.ndarray:
    """Zones where a pod of w breaks no forbidden zone pair with the pods counted in ``t``."""
    ok = np.ones(t.shape[1], dtype=bool)
    fu, fz1, fd, fz2 = problem.forbid
    if fu.size:
        ok[fz1[(fu == w) & (t[fd, fz2] > 0)]] = False
        ok[fz2[(fd == w) & (t[fu, fz1] > 0)]] = False
    return ok


def _violates(problem: _Problem, t: np.ndarray) -> bool:
    """Do the pod counts ``t`` use a forbidden pair of zones (pods already bound there excepted)?"""
    fu, fz1, fd, fz2 = problem.forbid
    both = (t[fu, fz1] > 0) & (t[fd, fz2] > 0)
    bound = (problem.placed[fu, fz1] > 0) & (problem.placed[fd, fz2] > 0)
    return bool((both & ~bound).any())


def _greedy(problem: _Problem, order: Sequence[int], anchor: int | None, deadline: _Deadline | None = None
            ) -> np.ndarray:
    """Pods one by one in ``order``, each to the zone gaining most that still has room; the first
    pod with nothing placed around it goes to ``anchor`` (else the best-connected zone)."""
    nw, nz = problem.placed.shape
    x = np.zeros((nw, nz))
    free = problem.zones.free.copy()
    # Node rooms of the zones small enough to track (each pod goes to the best-fitting node), so a
    # zone takes only pods that its nodes can hold, not just its total.
    # All tracked zones' node rooms live in one array (each zone's ``rooms`` entry is a view of its rows), so
    # "does some node of each zone hold this pod" is one vectorized test, not a Python loop over zones.
    tracked = [nf.shape[0] <= MAX_PACKING_NODES for nf in problem.zones.node_free]
    sizes = [nf.shape[0] if keep else 0 for nf, keep in zip(problem.zones.node_free, tracked, strict=True)]
    all_rooms = (np.concatenate([nf for nf, keep in zip(problem.zones.node_free, tracked, strict=True) if keep])
                 .astype(np.float64, copy=False) if any(sizes) else np.zeros((0, 3)))
    row_zone = np.repeat(np.arange(nz), sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rooms = [all_rooms[offsets[z]:offsets[z + 1]] if tracked[z] else None for z in range(nz)]
    untracked = ~np.asarray(tracked, dtype=bool)
    scales = [np.maximum(r.max(axis=0, initial=0.0), 1.0) if r is not None else None for r in rooms]
    connected = problem.weighted.sum(axis=(0, 2)) if problem.edges else np.zeros(nz)
    per_pod = CALL_OVERHEAD * 8 + float(problem.weighted.size) / max(nw, 1) * 2 + nz * 8
    for w in order:
        if deadline is not None and deadline.expired():
            break  # out of work: what is placed so far (the caller treats the rest as not planned)
        parts = _gain_parts(problem, w)  # the same for each of w's pods
        for _ in range(int(problem.todo[w])):
            if deadline is not None:
                deadline.spend(per_pod)
            t = problem.placed + x
            gain = _gain_of(parts, t)
            if not gain.any():
                gain = connected + (1e6 * (np.arange(nz) == anchor) if anchor is not None else 0.0)
            need = problem.demand[w]
            ok = np.all(free >= need[None, :], axis=1) & (x[w] < problem.slots[w]) & _allowed(problem, t, w)
            fits_any = np.bincount(row_zone[(all_rooms >= need[None, :]).all(axis=1)], minlength=nz) > 0
            ok &= untracked | fits_any
            if not ok.any():
                break
            z = int(np.argmax(np.where(ok, gain, -np.inf)))
            x[w, z] += 1
            free[z] -= need
            room = rooms[z]
            if room is not None:
                fits = (room >= need[None, :]).all(axis=1)
                after = np.where(fits, ((room - need[None, :]) / scales[z]).sum(axis=1), np.inf)
                room[int(np.argmin(after))] -= need
    return x


def _zone_packs(problem: _Problem, x: np.ndarray, z: int) -> bool:
    """Do the new pods ``x[:, z]`` pack into zone z's nodes (always True for a zone too big to track)?"""
    node_free = problem.zones.node_free[z]
    if node_free.shape[0] > MAX_PACKING_NODES:
        return True
    ws = np.flatnonzero(x[:, z] > 0)
    return _packs(node_free, np.repeat(problem.demand[ws], x[ws, z].astype(np.int64), axis=0))


def _gains(problem: _Problem, t: np.ndarray) -> np.ndarray:
    """``_gain`` of every workload at once (W, Z)."""
    g = np.zeros(t.shape)
    if problem.edges:
        np.add.at(g, problem.us, np.einsum("ezy,ey->ez", problem.weighted, t[problem.ds]))
        np.add.at(g, problem.ds, np.einsum("ez,ezy->ey", t[problem.us], problem.weighted))
    return g


def _components(problem: _Problem) -> np.ndarray:
    """Connected part of every workload in the dependency graph (its smallest member's index)."""
    parent = list(range(problem.placed.shape[0]))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for u, d in zip(problem.us.tolist(), problem.ds.tolist(), strict=True):
        a, b = root(u), root(d)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return np.array([root(i) for i in range(len(parent))], dtype=np.int64)


def _move_part(problem: _Problem, x: np.ndarray, count: np.ndarray, deadline: _Deadline) -> np.ndarray | None:
    """The best improving move of a whole connected part (in a joint plan: an AppGroup) — all its new
    pods — into one zone that holds them, or None. Moving one workload at a time cannot leave a zone a
    tenant shares with another for a zone of its own: each single move splits it first (issue 20). In
    the cell model (minZones) a part's cells move: one cell to a zone, or its first two cells to two zones."""
    if not problem.edges:
        return None
    component = _components(problem)
    current = _value(problem, problem.placed + x)
    nz = problem.placed.shape[1]
    best, best_gain = None, 1e-9
    for part in sorted(set(component[count > 0].tolist())):
        members = np.flatnonzero((component == part) & (count > 0))
        moves: list[list[tuple[np.ndarray, int]]]
        if problem.cell is None:
            moves = [[(members, z)] for z in range(nz)]
        else:
            cells = [members[problem.cell[members] == c] for c in sorted(set(problem.cell[members].tolist()))]
            moves = [[(cell, z)] for cell in cells for z in range(nz)]
            if len(cells) >= 2:
                moves += [[(cells[0], z1), (cells[1], z2)] for z1 in range(nz) for z2 in range(nz) if z1 != z2]
        for move in moves:
            if all((x[group, z] == count[group]).all() for group, z in move):
                continue  # already there
            deadline.spend(CALL_OVERHEAD * 6 + 2.0 * problem.weighted.size)
            trial = x.copy()
            for group, z in move:
                trial[group] = 0
                trial[group, z] = count[group]
            if ((problem.zones.free - trial.T @ problem.demand) < 0).any() or (trial > problem.slots).any():
                continue
            if problem.forbidden and _violates(problem, problem.placed + trial):
                continue
            gain = _value(problem, problem.placed + trial) - current
            if gain > best_gain and all(_zone_packs(problem, trial, z) for _group, z in move):
                best, best_gain = trial, gain
    return best


def _local_search(problem: _Problem, x: np.ndarray, deadline: _Deadline) -> np.ndarray:
    """Best improving move (all new pods of one workload to one zone) or swap (two single-zone
    workloads trade zones) until none improves or time is up. The objective is linear in one
    workload's counts, so every move's gain comes from one gain matrix; a swap adds the term of the
    edges between the two workloads."""
    nw, nz = problem.placed.shape
    x = x.copy()
    demand = problem.demand
    count = x.sum(axis=1)
    movable = count > 0
    per_iteration = CALL_OVERHEAD * 40 + 2.0 * problem.weighted.size + 12.0 * nw * nz
    for _ in range(4 * nw * nz):
        if deadline.expired():
            break
        deadline.spend(per_iteration + float(np.count_nonzero(count)) ** 2)
        t = problem.placed + x
        g = _gains(problem, t)
        free = problem.zones.free - x.T @ demand
        # moves
        delta = count[:, None] * g - (x * g).sum(axis=1)[:, None]
        room = free[None, :, :] + x[:, :, None] * demand[:, None, :] >= count[:, None, None] * demand[:, None, :]
        ok = room.all(axis=2) & (problem.slots >= count[:, None]) & movable[:, None]
        delta = np.where(ok, delta, -np.inf)
        best_move = float(delta.max(initial=-np.inf))
        # swaps
        single = np.where((x > 0).sum(axis=1) == 1, np.argmax(x > 0, axis=1), -1)
        best_swap, swap = -np.inf, (-1, -1)
        cand = np.flatnonzero(single >= 0)
        if cand.size > 1:
            za, c = single[cand], count[cand]
            # gain of a (in za) going to zb = g[a, zb] - g[a, za], times its count
            ga = c[:, None] * (g[cand][:, za] - g[cand, za][:, None])  # [a, b]: a moves to b's zone
            sw = ga + ga.T
            if problem.edges:
                pos = np.full(nw, -1)
                pos[cand] = np.arange(cand.size)
                us, ds = problem.us, problem.ds
                both = (pos[us] >= 0) & (pos[ds] >= 0)
                e_idx = np.flatnonzero(both)
                ze, zf = single[us[e_idx]], single[ds[e_idx]]
                m = problem.weighted[e_idx]
                k = np.arange(e_idx.size)
                term = count[us[e_idx]] * count[ds[e_idx]] * (m[k, zf, ze] - m[k, zf, zf] - m[k, ze, ze] + m[k, ze, zf])
                np.add.at(sw, (pos[us[e_idx]], pos[ds[e_idx]]), term)
                np.add.at(sw, (pos[ds[e_idx]], pos[us[e_idx]]), term)
            np.fill_diagonal(sw, -np.inf)
            sw[za[:, None] == za[None, :]] = -np.inf
            flat = np.argsort(-sw, axis=None)
            for k in flat[:8].tolist():
                i, j = divmod(k, cand.size)
                if sw[i, j] <= 1e-9:
                    break
                a_, b_ = int(cand[i]), int(cand[j])
                trial = x.copy()
                trial[a_], trial[b_] = 0, 0
                trial[a_, single[b_]], trial[b_, single[a_]] = count[a_], count[b_]
                if ((problem.zones.free - trial.T @ demand) < 0).any() or (trial > problem.slots).any():
                    continue
                if problem.forbidden and not (_allowed(problem, problem.placed + trial, a_)[single[b_]]
                                              and _allowed(problem, problem.placed + trial, b_)[single[a_]]):
                    continue
                deadline.spend(CALL_OVERHEAD * (trial[:, single[a_]].sum() + trial[:, single[b_]].sum()))
                if not (_zone_packs(problem, trial, single[a_]) and _zone_packs(problem, trial, single[b_])):
                    continue
                best_swap, swap = float(sw[i, j]), (a_, b_)
                break
        if max(best_move, best_swap) <= 1e-9:
            break
        if best_move >= best_swap:
            applied = False
            for k in np.argsort(-delta, axis=None)[:8].tolist():
                w, z = divmod(k, nz)
                if delta[w, z] <= 1e-9:
                    break
                rest = x.copy()
                rest[w] = 0
                if problem.forbidden and not _allowed(problem, problem.placed + rest, w)[z]:
                    continue
                rest[w, z] = count[w]
                deadline.spend(CALL_OVERHEAD * rest[:, z].sum())
                if not _zone_packs(problem, rest, z):
                    continue
                x, applied = rest, True
                break
            if not applied:
                break
        else:
            a_, b_ = swap
            za_, zb_ = single[a_], single[b_]
            x[a_], x[b_] = 0, 0
            x[a_, zb_], x[b_, za_] = count[a_], count[b_]
    return x


def _solve_in_one_domain(problem: _Problem, mode: str, deadline: _Deadline, diagnosis: list[str]) -> np.ndarray:
    """Hard mode: the best plan that keeps the whole AppGroup in one zone (or one region): each
    candidate domain is solved with the other zones closed; a domain must hold the pods already
    placed. Pods that fit in no single domain stay unplanned (they wait), said in ``diagnosis``."""
    names = problem.zones.names
    keys = names if mode == "zone" else problem.zones.regions
    domains: dict[str, list[int]] = {}
    for z, k in enumerate(keys):
        domains.setdefault(k, []).append(z)
    used = {keys[z] for z in np.flatnonzero(problem.placed.sum(axis=0)).tolist()}
    if len(used) > 1:
        diagnosis.append(f"{mode} mode: pods already run in {len(used)} {mode}s ({', '.join(sorted(used))}); "
                         "only the first keeps taking pods")
    if used:
        domains = {k: v for k, v in domains.items() if k == sorted(used)[0]}
    best: np.ndarray | None = None
    best_domain = ""
    for key, zs in domains.items():
        closed = np.ones(len(names), dtype=bool)
        closed[zs] = False
        slots = problem.slots.copy()
        slots[:, closed] = 0
        x = _solve_heuristic(replace(problem, slots=slots), deadline)
        if best is None or _better(problem, x, best):
            best, best_domain = x, key
    assert best is not None
    missing = problem.todo.sum() - best.sum()
    if missing > 0:
        diagnosis.append(f"{mode} mode: no single {mode} holds the whole AppGroup; {best_domain} holds "
                         f"{int(best.sum())} of its {int(problem.todo.sum())} pods to place, {int(missing)} wait")
    return best


def _better(problem: _Problem, a: np.ndarray, b: np.ndarray) -> bool:
    """Does ``a`` place more pods, or as many with a higher score, than ``b``?"""
    ka, kb = float(a.sum()), float(b.sum())
    return ka > kb or (ka == kb and _value(problem, problem.placed + a) > _value(problem, problem.placed + b) + 1e-9)


def _solve_heuristic(problem: _Problem, deadline: _Deadline, *, must_finish: bool = True) -> np.ndarray:
    """Greedy from several starts (heavy pods first, then most connected; each zone as the anchor of
    the first pod), each improved by local search; the best within the deadline."""
    nw, nz = problem.placed.shape
    degree = np.zeros(nw)
    np.add.at(degree, problem.us, problem.weighted.sum(axis=(1, 2)))
    np.add.at(degree, problem.ds, problem.weighted.sum(axis=(1, 2)))
    size = problem.demand[:, 0] / max(float(problem.demand[:, 0].max(initial=0.0)), 1.0) + problem.demand[:, 1] / max(
        float(problem.demand[:, 1].max(initial=0.0)), 1.0)
    orders = [sorted(range(nw), key=lambda w: (-size[w], -degree[w])),
              sorted(range(nw), key=lambda w: (-degree[w], -size[w]))]
    if problem.cell is not None:  # cell by cell: each cell packs like a whole AppGroup, the next beside it
        cell = problem.cell
        orders = [sorted(range(nw), key=lambda w: (int(cell[w]), -degree[w], -size[w])),
                  sorted(range(nw), key=lambda w: (int(cell[w]), -size[w], -degree[w])), *orders]
    anchors: list[int | None] = [None]
    if not problem.placed.any():
        room = problem.zones.free[:, 0]
        anchors += [int(z) for z in np.argsort(-room)[:3]]
    best: np.ndarray | None = None
    seen: set[bytes] = set()
    for anchor in anchors:
        for order in orders:
            if best is not None and deadline.expired():
                return _polish(problem, best, deadline)
            start = _greedy(problem, order, anchor, deadline if best is not None or not must_finish else None)
            if start.tobytes() in seen:
                continue
            seen.add(start.tobytes())
            x = _local_search(problem, start, deadline)
            if best is None or _better(problem, x, best):
                best = x
    return _polish(problem, best, deadline) if best is not None else np.zeros((nw, nz))


def _polish(problem: _Problem, x: np.ndarray, deadline: _Deadline) -> np.ndarray:
    """Move whole parts (AppGroups of a joint plan) while that improves the best plan, each followed by
    local search; the part moves run even when the budget is spent (they are a few dozen evaluations)."""
    for _round in range(PART_ROUNDS):
        moved = _move_part(problem, x, x.sum(axis=1), deadline)
        if moved is None:
            break
        moved = _local_search(problem, moved, deadline)
        if not _better(problem, moved, x):
            break
        x = moved
    return x


# ------------------------------------------------------------------------------ nodes inside a zone

def _refine_zone(state: ClusterState, problem: _Problem, t: np.ndarray, z: int, deadline: _Deadline
                 ) -> dict[str, dict[str, int]] | None:
    """Which node of zone ``z`` each of its planned pods takes: the same model with the zone's nodes
    as the places and node-pair ComputeScores (the same-node score where pods share a node), so the
    pods pack into the nodes and dependent pods land on the best pairs. Edges leaving the zone are
    constant here. None for a zone too big to plan node by node (the network scorer picks there)."""
    zone = problem.zones.names[z]
    members = sorted(n for n, res in state.nodes.items() if res.zone == zone)
    if not members or len(members) > MAX_PACKING_NODES:
        return None
    index = state.topology.index
    col = {n: k for k, n in enumerate(members)}
    ws = [w for w in range(len(problem.names)) if t[w, z] > 0]
    local = {w: k for k, w in enumerate(ws)}
    placed = np.zeros((len(ws), len(members)))
    for w in ws:
        for node in state.placements.get((problem.group.namespace, problem.group.name, problem.names[w]), ()):
            if node in col:
                placed[local[w], col[node]] += 1
    free = np.array([_free_row(state.nodes[n]) for n in members], dtype=np.float64).reshape(len(members), 3)
    demand = problem.demand[ws]
    per_node = np.where(demand[:, None, :] > 0, np.floor(free[None, :, :] / np.where(demand > 0, demand, 1.0)[:, None, :]),
                        np.inf).min(axis=2)
    slots = np.minimum(per_node, t[ws, z][:, None])
    positions = np.array([index.get(n, -1) for n in members], dtype=np.int64)
    known = positions >= 0
    cache: dict[Sensitivity, np.ndarray] = {}
    silent: np.ndarray | None = None
    edges: list[tuple[int, int, np.ndarray, float]] = []
    for e, (u, d, _m, coef) in enumerate(problem.edges):
        if u in local and d in local:
            sens = problem.sensitivities[e]
            if sens not in cache:
                matrix = np.zeros((len(members), len(members)))
                if known.any() and state.topology.size:
                    sub = pair_scores(state.indexes.vectors, positions[known], positions[known], sens)
                    if silent is None:
                        silent = _silent_agents(state.topology, positions[known])
                    if silent.any():
                        either = silent[:, None] | silent[None, :]
                        sub = np.where(either, sub * (1.0 - SILENT_NODE_DISCOUNT), sub)
                    matrix[np.ix_(known, known)] = sub
                np.fill_diagonal(matrix, DEFAULT_SAME_NODE_SCORE)
                cache[sens] = matrix
            edges.append((local[u], local[d], cache[sens], coef))
    sub_zones = _Zones(tuple(members), tuple(state.nodes[n].region for n in members), free,
                       tuple(free[k:k + 1] for k in range(len(members))), tuple(positions[k:k + 1] for k in range(len(members))))
    node_problem = _Problem(problem.group, sub_zones, [problem.names[w] for w in ws], demand,
                            t[ws, z].astype(np.float64), placed, slots, edges, [], [])
    x = _solve_heuristic(node_problem, deadline, must_finish=False)
    if float(x.sum() + placed.sum()) < float(t[ws, z].sum()):
        return None  # the zone's pods do not pack node by node: leave the choice to per-pod scoring
    counts = placed + x
    return {problem.names[w]: {members[k]: int(counts[i, k]) for k in np.flatnonzero(counts[i]).tolist()}
            for i, w in enumerate(ws)}


# ------------------------------------------------------------------------------------------ entry

def _plan_id(group: AppGroupSpec, *places: Mapping[str, Mapping[str, int]]) -> str:
    text = f"{group.namespace}/{group.name}:" + "|".join(";".join(
        f"{w}={','.join(f'{z}:{n}' for z, n in sorted(zs.items()))}" for w, zs in sorted(where.items()))
        for where in places)
    return hashlib.blake2s(text.encode(), digest_size=4).hexdigest()


def compute_plan(*, state: ClusterState, group: AppGroupSpec, objective: str = "network-score",
                 budget_s: float = DEFAULT_BUDGET_S, reserved: Mapping[str, np.ndarray] | None = None,
                 use_milp: bool = True, reason: str = "", mode: str = "soft",
                 wall_slack: float = WALL_SLACK, prices: TransferPrices = DEFAULT_TRANSFER_PRICES) -> PlacementPlan:
    """A plan for every pod of ``group`` not yet bound in ``state`` within ``budget_s`` worth of work
    (WORK_PER_SECOND; WALL_SLACK x ``budget_s`` of wall time as a safety net), beyond the granularity
    of one greedy pass and of building the model. ``reserved``: per zone (cpu, memory, pods) held by other
    AppGroups' plans (first come keeps its plan)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if mode not in MODES:
        raise ValueError(f"mode: must be one of {', '.join(MODES)}, got {mode!r}")
    started = time.perf_counter()
    label = f"{group.namespace}/{group.name}"
    problem = _problem(state, group, objective, reserved, prices)
    nw, nz = problem.placed.shape
    budget_s = adapted_budget(budget_s, nw, nz)
    total = _Deadline(budget_s, wall_slack)
    if nw == 0 or nz == 0:
        note = "the AppGroup has no workload with replicas" if nw == 0 else "the cluster has no nodes"
        return PlacementPlan(label, _plan_id(group, {}), "none", objective, float("nan"),
                             (time.perf_counter() - started) * 1e3, {}, {}, {}, (note,), reason)
    diagnosis = list(problem.diagnosis)
    spec_of = {w.name: w for w in group.workloads}
    cells = _cells(problem, [group.min_zones_of(spec_of[n]) for n in problem.names]) if mode != "zone" else None
    if mode == "zone" and any(group.min_zones_of(w) > 1 for w in group.workloads):
        diagnosis.append("zone mode keeps the AppGroup in one zone: its minZones cannot hold")

    def solve(p: _Problem, deadline: _Deadline, notes: list[str]) -> np.ndarray:
        """New pods per workload and zone for ``p`` (through its cell model when there is one)."""
        target = p if cells is None else cells.on(p.zones)
        x = _solve_in_one_domain(target, mode, deadline, notes) if mode != "soft" else _solve_heuristic(target, deadline)
        return x if cells is None else cells.merge(x)

    # The heuristic always answers (40 % of the work budget at most; it usually needs far less); the
    # MILP is charged a fixed 20 % (its result only counts when proven optimal, so it is the same on
    # every machine unless its wall-time safety net cuts it); the rest places each zone's pods on nodes.
    method = "heuristic"
    x = solve(problem, total.child(0.6 if mode != "soft" else 0.4, wall_slack), diagnosis)
    # A zone's capacity counts as a whole, but pods go on nodes: when a zone's planned pods do not pack
    # into its nodes (best-fit decreasing), shrink that zone by what was left over and plan again.
    for _round in range(PACKING_ROUNDS):
        short = _unpacked(problem, x)
        if not short:
            break
        free = problem.zones.free.copy()
        for z, leftover in short.items():
            free[z] = np.maximum(free[z] - leftover, 0.0)
        problem = replace(problem, zones=replace(problem.zones, free=free))
        retry = solve(problem, total.child(0.5, wall_slack), [])
        if float(retry.sum()) >= float(x.sum()):
            x = retry
        else:
            break
    exact_model = problem if cells is None else cells.on(problem.zones)
    if mode == "soft" and use_milp and len(exact_model.edges) * nz * nz <= MAX_MILP_PAIR_VARS:
        total.spend(0.2 * budget_s * WORK_PER_SECOND)
        cap = MILP_WALL_CAP_S if wall_slack == float("inf") else max(0.2 * budget_s * wall_slack, 0.003)
        try:
            exact, timed_out = _solve_milp(exact_model, cap)
            if exact is not None and cells is not None:
                exact = cells.merge(exact)
        except (ValueError, RuntimeError) as exc:  # a solver error: the heuristic's plan stands, and says so
            exact, timed_out = None, False
            diagnosis.append(f"MILP failed ({exc}); heuristic plan used")
        if timed_out:
            total._hit()
        # The MILP counts a zone's capacity as a whole: its plan counts only if the pods pack into the nodes.
        if exact is not None and _better(problem, exact, x) and not _unpacked(problem, exact):
            x, method = exact, "milp"
    t = problem.placed + x
    zones = {name: {problem.zones.names[z]: int(t[w, z]) for z in range(nz) if t[w, z] > 0}
             for w, name in enumerate(problem.names)}
    short = problem.replicas - t.sum(axis=1)
    unplaced = {problem.names[w]: int(short[w]) for w in range(nw) if short[w] > 0}
    if unplaced:
        free = problem.zones.free
        totals = (problem.demand * problem.todo[:, None]).sum(axis=0)
        diagnosis.append(
            "the cluster does not hold the whole AppGroup: "
            + ", ".join(f"{w} {n} pod(s)" for w, n in sorted(unplaced.items()))
            + f" left out (needs {totals[0]:.0f}m CPU, {totals[1] / 2**20:.0f}Mi memory; free "
            f"{free[:, 0].sum():.0f}m, {free[:, 1].sum() / 2**20:.0f}Mi)")
    value = _value(problem, t)
    nodes: dict[str, dict[str, int]] = {}
    used = [z for z in range(nz) if t[:, z].any()]
    # The nodes keep at least NODE_SHARE of the budget, whatever the zone stages spent: without node
    # plans the per-pod scorer picks nodes inside the zones and loses what the plan predicted.
    stage = total
    if total.left < NODE_SHARE * budget_s * WORK_PER_SECOND:
        stage = _Deadline(NODE_SHARE * budget_s, wall_slack)
        stage.wall = total.wall
        stage.parent = total
    for i, z in enumerate(used):
        share = stage.child(1.0 / (len(used) - i), wall_slack)
        refined = _refine_zone(state, problem, t, z, share) if share.left > 0 else None
        for workload, counts in (refined or {}).items():
            nodes.setdefault(workload, {}).update(counts)
    if total.wall_hit:
        diagnosis.append(f"the wall-time safety net ({min(budget_s * wall_slack, MAX_WALL_S) * 1e3:.0f} ms) cut "
                         "this plan short: "
                         "it may differ from the same state's plan on another machine")
    if not problem.edges:
        value = float("nan")  # no dependency: nothing to score
    informed = bool(problem.edges) and bool(np.ptp(problem.weighted) > 0)
    return PlacementPlan(label, _plan_id(group, zones, nodes), method, objective, value,
                         (time.perf_counter() - started) * 1e3, zones, unplaced, nodes, tuple(diagnosis), reason,
                         informed)


def compute_joint_plans(*, state: ClusterState, groups: Sequence[AppGroupSpec], objective: str = "network-score",
                        budget_s: float = DEFAULT_BUDGET_S, reserved: Mapping[str, np.ndarray] | None = None,
                        use_milp: bool = True, reason: str = "", mode: str = "soft",
                        wall_slack: float = WALL_SLACK,
                        prices: TransferPrices = DEFAULT_TRANSFER_PRICES) -> list[PlacementPlan]:
    """Plans for several AppGroups decided together (one model, their capacity shared), one per
    group in ``groups`` order: the first is the AppGroup a pod asked for, the others AppGroups with
    no pod placed yet, so that the first does not take the room the others' best zones had."""
    if len(groups) == 1:
        return [compute_plan(state=state, group=groups[0], objective=objective, budget_s=budget_s,
                             reserved=reserved, use_milp=use_milp, reason=reason, mode=mode, wall_slack=wall_slack,
                             prices=prices)]
    first = groups[0]

    def joint(g: AppGroupSpec, name: str) -> str:
        return f"{g.namespace}/{g.name}/{name}"

    workloads = tuple(replace(w, name=joint(g, w.name), min_zones=g.min_zones_of(w), dependencies=tuple(
        replace(d, target=joint(g, d.target)) for d in w.dependencies)) for g in groups for w in g.workloads)
    combined = AppGroupSpec(first.namespace, first.name, workloads)
    placements = dict(state.placements)
    for g in groups:
        for w in g.workloads:
            nodes = state.placements.get((g.namespace, g.name, w.name))
            if nodes:
                placements[(first.namespace, first.name, joint(g, w.name))] = nodes
    plan = compute_plan(state=evolve(state, placements=placements), group=combined, objective=objective,
                        budget_s=budget_s, reserved=reserved, use_milp=use_milp, reason=reason, wall_slack=wall_slack,
                        prices=prices)
    out = []
    for i, g in enumerate(groups):
        prefix = f"{g.namespace}/{g.name}/"

        def mine(where: Mapping[str, Any], prefix: str = prefix) -> dict[str, Any]:
            return {k[len(prefix):]: v for k, v in where.items() if k.startswith(prefix)}

        own_zones, own_nodes = mine(plan.zones), mine(plan.nodes)
        why = reason if i == 0 else f"planned together with {first.namespace}/{first.name} (no pod placed yet)"
        out.append(PlacementPlan(f"{g.namespace}/{g.name}", _plan_id(g, own_zones, own_nodes), plan.method,
                                 objective, plan.value, plan.elapsed_ms, own_zones, mine(plan.unplaced), own_nodes,
                                 plan.diagnosis, why, plan.informed))
    return out


def demand_by_zone(plan: PlacementPlan, group: AppGroupSpec, placed: Mapping[str, Mapping[str, int]]
                   ) -> dict[str, np.ndarray]:
    """Per zone, (cpu, memory, pods) the plan still has to place (what it reserves)."""
    out: dict[str, np.ndarray] = {}
    for workload in group.workloads:
        for zone, count in plan.zones_for(workload.name).items():
            left = count - placed.get(workload.name, {}).get(zone, 0)
            if left > 0:
                need = np.array([workload.cpu_request_millicores, workload.memory_request_bytes, 1.0]) * left
                out[zone] = out.get(zone, np.zeros(3)) + need
    return out


def placed_by_zone(state: ClusterState, group: AppGroupSpec) -> dict[str, dict[str, int]]:
    """workload -> zone -> pods bound there (once per state: the state's score memo keeps it; do not mutate)."""
    key = ("placed-by-zone", group.namespace, group.name)
    cached = state.score_memo.get(key)
    if cached is not None and cached[0] == group:
        result: dict[str, dict[str, int]] = cached[1]
        return result
    out = _count_by_zone(state, group)
    state.score_memo.put(key, (group, out), size=1)
    return out


def _count_by_zone(state: ClusterState, group: AppGroupSpec) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    # A workload's counts depend only on its placements tuple (the cache hands out the same tuple
    # until its pods change) and the nodes' zones (the state's places survive binds, not zone changes).
    derived = state.indexes.places.derived
    for workload in group.workloads:
        key = ("zone-counts", group.namespace, group.name, workload.name)
        pods = state.placements.get(key[1:], ())
        known = derived.get(key)
        if known is not None and known[0] is pods:
            counts: dict[str, int] = known[1]
        else:
            counts = {}
            for node, n in Counter(pods).items():
                res = state.nodes.get(node)
                if res is not None:  # pods on nodes the cluster no longer lists are not planned around
                    counts[res.zone] = counts.get(res.zone, 0) + n
            derived[key] = (pods, counts)
        if counts:
            out[workload.name] = dict(counts)
    return out


@dataclass
class _Entry:
    plan: PlacementPlan
    group: AppGroupSpec
    topology: weakref.ref[Any]  # the topology it was made on (weakly: an id alone can be reused)
    placed: dict[str, dict[str, int]]


class PlanBook:
    """Plans per AppGroup, kept while they stay valid (shared by the states one scheduler steps
    through: the extender's runtime, one evaluation run). A plan is recomputed when the AppGroup or
    the topology changes, a pod of the AppGroup lands outside it, or its zones lost the room it
    still needs; other AppGroups' valid plans reserve their remaining pods' room (first come keeps
    its plan). The last few state versions (topology, the AppGroup's placements) each keep the plan
    they were answered with, so every request against one version sees the same plan, whichever
    thread asks and in whatever order."""

    VERSIONS = 8

    def __init__(self, *, budget_s: float = DEFAULT_BUDGET_S, wall_slack: float = WALL_SLACK) -> None:
        self.budget_s = min(max(budget_s, 1e-3), 10.0)
        self.wall_slack = wall_slack
        self._plans: dict[tuple[str, str, str, str], OrderedDict[tuple[Any, ...], _Entry]] = {}
        self._lock = threading.Lock()
        self.computed = 0

    def plan_for(self, state: ClusterState, group: AppGroupSpec, *, objective: str = "network-score",
                 mode: str = "soft", prices: TransferPrices = DEFAULT_TRANSFER_PRICES) -> PlacementPlan:
        key = (group.namespace, group.name, objective_key(objective, prices), mode)
        # The placements tuples themselves: the cache hands out the same tuple objects until the
        # workload's pods change, so this is cheap, and equal tuples mean the same pods.
        version = (id(state.topology), tuple(
            state.placements.get((group.namespace, group.name, w.name), ()) for w in group.workloads))
        placed = placed_by_zone(state, group)
        with self._lock:
            versions = self._plans.setdefault(key, OrderedDict())
            known = versions.get(version)
            if known is not None and self._invalid(state, group, known, placed) is None:
                return known.plan
            latest = next(reversed(versions.values()), None)
            reason = self._invalid(state, group, latest, placed) if latest is not None else "first pod of the AppGroup"
            if latest is not None and reason is None:
                self._keep(versions, version, latest)
                return latest.plan
            reserved = self._reserved(state, key)
            companions = self._unstarted(state, group, key[2]) if mode == "soft" else []
        plans = compute_joint_plans(state=state, groups=[group, *companions], objective=objective,
                                    budget_s=self.budget_s, reserved=reserved, reason=reason or "", mode=mode,
                                    wall_slack=self.wall_slack, prices=prices)
        plan = plans[0]
        with self._lock:
            versions = self._plans.setdefault(key, OrderedDict())
            raced = versions.get(version)
            if raced is not None and raced is not known:  # another request computed it meanwhile: one plan
                return raced.plan
            self._keep(versions, version, _Entry(plan, group, weakref.ref(state.topology), placed))
            for other, other_plan in zip(companions, plans[1:], strict=True):
                other_key = (other.namespace, other.name, key[2], mode)
                if other_key not in self._plans:  # still unplanned: it gets its share of the joint plan
                    self._keep(self._plans.setdefault(other_key, OrderedDict()),
                               (id(state.topology), tuple(() for _ in other.workloads)),
                               _Entry(other_plan, other, weakref.ref(state.topology), {}))
            self.computed += 1
            if len(self._plans) > 2 * len(state.appgroups) + 16:  # AppGroups deleted since: forget their plans
                alive = {(g.namespace, g.name) for g in state.appgroups}
                for stale in [k for k in self._plans if k[:2] not in alive]:
                    del self._plans[stale]
        return plan

    def _keep(self, versions: OrderedDict[tuple[Any, ...], _Entry], version: tuple[Any, ...], entry: _Entry) -> None:
        versions[version] = entry
        versions.move_to_end(version)
        while len(versions) > self.VERSIONS:
            versions.popitem(last=False)

    def _latest(self, key: tuple[str, str, str, str]) -> _Entry | None:
        versions = self._plans.get(key)
        return next(reversed(versions.values()), None) if versions else None

    def peek(self, namespace: str, name: str, objective: str = "network-score", mode: str = "soft"
             ) -> PlacementPlan | None:
        with self._lock:
            entry = self._latest((namespace, name, objective, mode))
        return entry.plan if entry is not None else None

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            for key in [k for k in self._plans if k[:2] == (namespace, name)]:
                del self._plans[key]

    # One joint model by total benefit (issue 20): every AppGroup without pods, up to these sizes.
    MAX_JOINT_GROUPS = 8
    MAX_JOINT_WORKLOADS = 200

    def _unstarted(self, state: ClusterState, group: AppGroupSpec, objective_id: str) -> list[AppGroupSpec]:
        """AppGroups with no pod placed and no plan yet, planned together with ``group`` (a few); not
        those asking for a hard ``topologyMode``, whose pods will ask for a plan in that mode."""
        out: list[AppGroupSpec] = []
        size = len(group.workloads)
        for other in state.appgroups:
            if (other.namespace, other.name) == (group.namespace, group.name) or (
                    other.namespace, other.name, objective_id, "soft") in self._plans or not any(
                    w.replicas > 0 for w in other.workloads) or other.topology_mode != "soft":
                continue
            if any(state.placements.get((other.namespace, other.name, w.name)) for w in other.workloads):
                continue
            if len(out) + 1 >= self.MAX_JOINT_GROUPS or size + len(other.workloads) > self.MAX_JOINT_WORKLOADS:
                break
            out.append(other)
            size += len(other.workloads)
        return out

    def _reserved(self, state: ClusterState, own: tuple[str, str, str, str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for key in self._plans:
            entry = self._latest(key)
            if key[:2] == own[:2] or entry is None:
                continue
            for zone, need in demand_by_zone(entry.plan, entry.group, placed_by_zone(state, entry.group)).items():
                out[zone] = out.get(zone, np.zeros(3)) + need
        return out

    def _invalid(self, state: ClusterState, group: AppGroupSpec, entry: _Entry,
                 placed: dict[str, dict[str, int]]) -> str | None:
        if entry.group is not group and entry.group != group:
            return "the AppGroup changed"
        if entry.topology() is not state.topology:
            return "the topology changed"
        plan = entry.plan
        for workload, counts in placed.items():
            planned = plan.zones_for(workload)
            if sum(counts.values()) > sum(planned.values()) + plan.unplaced.get(workload, 0):
                continue  # more pods than the AppGroup's replicas hint: beyond any plan, not against it
            for zone, count in counts.items():
                if count > planned.get(zone, 0):
                    return f"a pod of {workload} was placed in zone {zone or '(none)'} outside the plan"
        for workload, counts in entry.placed.items():
            for zone, count in counts.items():
                if placed.get(workload, {}).get(zone, 0) < count:
                    # a pod the plan was built around is gone (evicted, e.g. by the rebalancer, or deleted):
                    # keeping the plan would send its replacement back where it was
                    return f"a pod of {workload} left zone {zone or '(none)'} since the plan"
        if plan.unplaced and placed != entry.placed:
            return "pods were placed since a plan that did not hold the whole AppGroup"
        need = demand_by_zone(plan, group, placed)
        if need:
            # Summed once per node set and patched by each bind (indexes.ZoneRoom): this runs on every request.
            free = state.indexes.zone_room.get(state.nodes, MAX_PODS_PER_NODE)
            for zone, amount in need.items():
                if np.any(np.array(free.get(zone, (0, 0, 0)), dtype=np.float64) < amount):
                    return f"zone {zone or '(none)'} no longer has room for the plan's pods"
        return None



# Packing inside a zone: the plan counts a zone's capacity as a whole, so a light pod taking the only
# node big enough for a planned heavy pod would break it. Steering keeps such nodes for the heavy pods.
MAX_PACKING_NODES = 64
# Share of the budget kept for placing each zone's pods on its nodes (compute_plan).
NODE_SHARE = 0.3
# Node by node, the pairs of a node whose agent went silent (every pair from it stale or never measured, at
# least one stale: a hung agent, often a sick node) count this much less than their filled-in values say, so a
# zone's pods take the nodes the topology can see while there is room; small enough never to outweigh a measured
# difference of more than 2 %. A single stale pair is not a silent agent: bandwidth tests rotate over peers, so
# a healthy node's older bandwidth readings go stale while its current peers stay fresh.
SILENT_NODE_DISCOUNT = 0.02


def _silent_agents(topology: Topology, positions: np.ndarray) -> np.ndarray:
    """Of the nodes at ``positions``: whose agent reports nothing fresh (every pair from it stale or
    inferred, at least one stale)."""
    stale = topology.stale[positions]
    unseen = stale | topology.inferred[positions]
    unseen[np.arange(positions.size), positions] = True  # the node's pair with itself is never measured
    return cast(np.ndarray, unseen.all(axis=1) & stale.any(axis=1))
# Rounds of moving a whole part (an AppGroup of a joint plan) to one zone after the local search.
PART_ROUNDS = 3
# Rounds of shrinking zones whose planned pods do not pack into their nodes (compute_plan).
PACKING_ROUNDS = 3
# ... and at most this many of the plan's pods left there (beyond, the check would cost more than a request).
MAX_PACKING_PODS = 48


def _packs(free: np.ndarray, pods: np.ndarray) -> bool:
    """Best-fit decreasing of ``pods`` (k, 3) into nodes with ``free`` (n, 3) room."""
    return not _leftover(free, pods).any()


def _leftover(free: np.ndarray, pods: np.ndarray) -> np.ndarray:
    """Total demand (3,) of the ``pods`` that best-fit decreasing cannot put on nodes with ``free`` room."""
    room = free.copy()
    scale = np.maximum(room.max(axis=0, initial=0.0), 1.0)
    left = np.zeros(3)
    for pod in pods[np.argsort(-(pods / scale).sum(axis=1), kind="stable")]:
        fits = (room >= pod[None, :]).all(axis=1)
        if not fits.any():
            left += pod
            continue
        after = np.where(fits, ((room - pod[None, :]) / scale).sum(axis=1), np.inf)
        room[int(np.argmin(after))] -= pod
    return left


def _unpacked(problem: _Problem, x: np.ndarray) -> dict[int, np.ndarray]:
    """Zones whose new planned pods ``x`` do not pack into their nodes -> the demand left over."""
    out: dict[int, np.ndarray] = {}
    for z in np.flatnonzero(x.sum(axis=0) > 0).tolist():
        if problem.zones.node_free[z].shape[0] > MAX_PACKING_NODES:
            continue
        ws = np.flatnonzero(x[:, z] > 0)
        pods = np.repeat(problem.demand[ws], x[ws, z].astype(np.int64), axis=0)
        left = _leftover(problem.zones.node_free[z], pods)
        if left.any():
            out[z] = left
    return out


def _zone_members(state: ClusterState) -> Mapping[str, tuple[str, ...]]:
    """zone -> names of the cluster's nodes labelled with it, kept on the state's places (they hold
    while no node is added, removed or moved to another zone), so a request does not scan every node."""
    derived = state.indexes.places.derived
    known: Mapping[str, tuple[str, ...]] | None = derived.get("zone-members")
    if known is None:
        by_zone: dict[str, list[str]] = {}
        for name, node in state.nodes.items():
            by_zone.setdefault(node.zone, []).append(name)
        known = derived["zone-members"] = {zone: tuple(names) for zone, names in by_zone.items()}
    return known


def nodes_keeping_plan(state: ClusterState, plan: PlacementPlan, group: AppGroupSpec, workload: str,
                       candidates: Sequence[str]) -> np.ndarray | None:
    """Which ``candidates`` (nodes of the plan's zones) leave room for the rest of the plan's pods
    there once this pod of ``workload`` is bound; None when it cannot tell (a zone of more than
    MAX_PACKING_NODES nodes or MAX_PACKING_PODS planned pods left, or the rest does not pack anyway),
    so the caller does not narrow."""
    spec = {w.name: w for w in group.workloads}
    if workload not in spec:
        return None
    placed = placed_by_zone(state, group)
    demand = {w: np.array([s.cpu_request_millicores, s.memory_request_bytes, 1.0]) for w, s in spec.items()}
    out = np.zeros(len(candidates), dtype=bool)
    by_zone: dict[str, list[int]] = {}
    for i, name in enumerate(candidates):
        node = state.nodes.get(name)
        if node is not None:
            by_zone.setdefault(node.zone, []).append(i)
    for zone, idx in by_zone.items():
        rest: list[np.ndarray] = []
        for w in spec:
            left = plan.zones_for(w).get(zone, 0) - placed.get(w, {}).get(zone, 0) - (1 if w == workload else 0)
            rest.extend([demand[w]] * max(left, 0))
        if not rest or len(rest) > MAX_PACKING_PODS:
            return None  # nothing left to keep room for, or too much to check on a request
        names = _zone_members(state).get(zone, ())
        if len(names) > MAX_PACKING_NODES:
            return None
        members = [state.nodes[n] for n in names]
        pods = np.array(rest, dtype=np.float64).reshape(len(rest), 3)
        free = np.array([_free_row(n) for n in members], dtype=np.float64).reshape(len(members), 3)
        row = {n: k for k, n in enumerate(names)}
        for i in idx:
            k = row[candidates[i]]
            trial = free.copy()
            trial[k] -= demand[workload]
            out[i] = bool((trial[k] >= 0).all()) and _packs(trial, pods)
    return out if out.any() else None
