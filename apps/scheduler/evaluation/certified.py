"""A certified optimum that scales: zone (bin) MILP, refined to nodes, with a proven bound and gap.

The node-level MILP (``optimum.py``) has edges x nodes² pair variables: 94 nodes and 210 edges are
1.9 M columns, which HiGHS cannot solve in minutes (issue 20). But the average network score only
depends on *which link class* joins two pods, and inside a zone every node pair has the same
nominal link. So:

1. **Bins.** Nodes are grouped into bins whose links are uniform: a zone's nodes, minus any node
   with its own node links or unreachable pairs (``uniform_bins``). For every dependency's
   sensitivity, ``S[b1, b2]`` is the *largest* ComputeScore over node pairs of the two bins (the
   same-node score counts inside a bin), so any node placement scores at most what its bin counts
   score with ``S``: the bin problem is a relaxation, its dual bound a proven upper bound.
2. **Bin MILP (HiGHS, exact products).** ``x[w, b]`` pods of workload w in bin b; capacity per bin
   (cpu, memory, pod slots, and per workload the pods that fit node by node). A dependency u -> d
   scores ``sum S[b1, b2] * x[u, b1] * x[d, b2]``: when one side has one replica the
   transportation marginals make the pair variables that product exactly; when both have
   replicas, the side with fewer gets one-hot *levels* (``x = sum k * L[k]``) and each
   level x bin pair is linearised exactly (McCormick on binary x integer). No relaxation gap from
   the linearisation, so the MILP's optimum is the bin problem's optimum.
3. **Refinement to nodes.** Each bin's pods go to its nodes (heaviest first, on the node where
   it shares the node with the fewest dependent pods, then the fullest that fits), and the
   placement is re-scored exactly through the extender's Score (``achieved``, a lower bound).

``bound - achieved`` is the certified gap: when it is 0 (uniform bins, no forced co-location, the
MILP proved optimal) ``achieved`` *is* the optimum. Limits: ``time_limit`` (HiGHS, wall seconds)
and ``memory_limit`` (bytes of address space the solver may add, enforced in a forked child with
RLIMIT_AS); hitting either gives a result with a one-line ``message``, never a traceback, and the
bound is always within 0..100.
"""

from __future__ import annotations

import multiprocessing
import resource
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import Bounds, milp

from apps.appgroups.graph import AppGroupSpec, Sensitivity
from apps.scheduler.scoring.linear import Rows
from apps.scheduler.scoring.state import ClusterState
from apps.topology.topomath import Topology

from .adapter import best_joint_plans, pair_score_matrix
from .metrics import network_metrics

MAX_PODS_PER_NODE = 110
DEFAULT_TIME_LIMIT_S = 60.0
DEFAULT_MEMORY_LIMIT_BYTES = 2 * 2**30


@dataclass(frozen=True)
class CertifiedOptimum:
    """The best placement found and a proven upper bound on the average network score (0..100)."""

    bound: float  # proven upper bound (0..100), NaN when nothing was proven
    achieved: float  # the refined placement re-scored through the extender's Score (a lower bound)
    status: str  # "optimal" | "time limit" | "memory limit" | "infeasible" | "error"
    message: str  # one line for people
    seconds: float
    bins: int
    uniform: bool  # every bin pair's links are uniform (the bin MILP's value is a node placement's)
    milp_value: float = float("nan")  # the bin MILP incumbent's objective
    placements: Mapping[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)

    @property
    def gap(self) -> float:
        """(bound - achieved) / bound: 0 means ``achieved`` is the proven optimum."""
        if not (self.bound == self.bound and self.achieved == self.achieved) or self.bound <= 0:
            return float("nan")
        return max(0.0, (self.bound - self.achieved) / self.bound)

    @property
    def exact(self) -> bool:
        return self.gap == self.gap and self.gap <= 1e-6

    @property
    def reference(self) -> float:
        """What profiles are compared with: the best placement found (certified within ``gap``)."""
        return self.achieved


# ------------------------------------------------------------------------------------------- bins


def uniform_bins(topology: Topology, nodes: Mapping[str, Any]) -> list[list[str]]:
    """Groups of nodes (one zone each) whose latency, loss and bandwidth to every other node are
    the same, and the same among themselves. A node differing from its zone's first bin (its own
    node links, unreachable pairs) starts a bin of its own. Node order: sorted names."""
    index = topology.index
    mats = [np.nan_to_num(m, nan=-1.0) for m in (topology.latency_ms, topology.loss_pct, topology.bandwidth_mbps)]
    by_zone: dict[str, list[str]] = {}
    for name in sorted(nodes):
        by_zone.setdefault(getattr(nodes[name], "zone", ""), []).append(name)
    bins: list[list[str]] = []
    for zone in sorted(by_zone):
        zone_bins: list[list[str]] = []
        for name in by_zone[zone]:
            if name not in index:
                zone_bins.append([name])
                continue
            n = index[name]
            for members in zone_bins:
                r = index.get(members[0], -1)
                if r < 0:
                    continue
                others = np.ones(topology.size, dtype=bool)
                others[[n, r]] = False
                if all(np.array_equal(m[n, others], m[r, others]) and np.array_equal(m[others, n], m[others, r])
                       and (len(members) < 2 or (m[n, r] == m[r, index[members[1]]] and m[r, n] == m[index[members[1]], r]))
                       for m in mats):
                    members.append(name)
                    break
            else:
                zone_bins.append([name])
        bins.extend(zone_bins)
    return bins


# ------------------------------------------------------------------------------------------ model


@dataclass
class _Model:
    names: list[tuple[str, str, str]]  # workload keys
    replicas: np.ndarray  # (W,)
    demand: np.ndarray  # (W, 3)
    edges: list[tuple[int, int, Sensitivity, float]]  # (u, d, sensitivity, coef: objective per pod pair score 0..1)
    bins: list[list[str]]
    free: np.ndarray  # (B, 3)
    slots: np.ndarray  # (W, B)
    scores: dict[Sensitivity, np.ndarray]  # (B, B) upper ComputeScore per bin pair
    uniform: bool
    same_node: dict[Sensitivity, float]  # the same-node ComputeScore
    node_free: list[np.ndarray]  # per bin: (nodes, 3)
    node_fit: list[np.ndarray]  # per bin: (W, nodes) pods of w that fit the node alone
    node_offset: list[int]  # per bin: index of its first node in the concatenated bins


def _free_rows(state: ClusterState, names: Sequence[str]) -> np.ndarray:
    rows = [(n.allocatable_cpu_millicores - n.requested_cpu_millicores,
             n.allocatable_memory_bytes - n.requested_memory_bytes, MAX_PODS_PER_NODE - n.pod_count)
            for n in (state.nodes[name] for name in names)]
    return np.maximum(np.array(rows, dtype=np.float64).reshape(len(names), 3), 0.0)


def build_model(state: ClusterState, groups: Sequence[AppGroupSpec]) -> _Model:
    topology = state.topology
    workloads = [(g, w) for g in groups for w in g.workloads if w.replicas > 0]
    wid = {(g.namespace, g.name, w.name): i for i, (g, w) in enumerate(workloads)}
    replicas = np.array([w.replicas for _, w in workloads], dtype=np.float64)
    demand = np.array([[w.cpu_request_millicores, w.memory_request_bytes, 1.0] for _, w in workloads],
                      dtype=np.float64).reshape(len(workloads), 3)
    raw: list[tuple[int, int, Sensitivity, float]] = []
    total_w = np.zeros(len(workloads))
    for g in groups:
        for spec in g.workloads:
            u = wid.get((g.namespace, g.name, spec.name))
            if u is None:
                continue
            for dep in spec.dependencies:
                d = wid.get((g.namespace, g.name, dep.target))
                if d is None or d == u:
                    continue
                weight = spec.weight * dep.weight  # the caller's importance times the edge's weight, as Score
                raw.append((u, d, dep.sensitivity, weight))
                total_w[u] += weight
                total_w[d] += weight
    importance = np.array([w.weight for _, w in workloads], dtype=np.float64)
    imp_sum = float(importance[total_w > 0].sum()) or 1.0
    edges = []
    for u, d, sens, weight in raw:
        coef = sum(importance[side] * weight / (total_w[side] * replicas[u] * replicas[d])
                   for side in (u, d) if total_w[side] > 0)
        edges.append((u, d, sens, 100.0 * coef / imp_sum))
    bins = [b for b in uniform_bins(topology, state.nodes) if b]
    free_nodes = [_free_rows(state, b) for b in bins]
    free = np.array([f.sum(axis=0) for f in free_nodes], dtype=np.float64).reshape(len(bins), 3)
    slots = np.zeros((len(workloads), len(bins)))
    node_fit: list[np.ndarray] = []
    for b, rows in enumerate(free_nodes):
        fit = np.zeros((len(workloads), rows.shape[0]))
        for w in range(len(workloads)):
            need = demand[w]
            per_node = np.min(np.where(need > 0, np.floor(rows / np.where(need > 0, need, 1.0)), np.inf), axis=1)
            fit[w] = np.minimum(per_node, replicas[w])
            slots[w, b] = min(float(per_node.sum()), float(replicas[w]))
        node_fit.append(fit)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in bins])]).astype(int).tolist()
    # Bin-pair scores: the largest pair score (upper bound); uniform when the smallest equals it.
    positions = [np.array([topology.index.get(n, -1) for n in b], dtype=np.int64) for b in bins]
    scores: dict[Sensitivity, np.ndarray] = {}
    same_node: dict[Sensitivity, float] = {}
    uniform = True
    for _u, _d, sens, _c in edges:
        if sens in scores:
            continue
        full = pair_score_matrix(topology, sens).astype(np.float64)
        same_node[sens] = float(full[0, 0]) if full.size else 0.0
        nb = len(bins)
        upper = np.zeros((nb, nb))
        for i, pi in enumerate(positions):
            for j, pj in enumerate(positions):
                if (pi < 0).any() or (pj < 0).any():
                    uniform = False
                    known_i, known_j = pi[pi >= 0], pj[pj >= 0]
                    block = full[np.ix_(known_i, known_j)] if known_i.size and known_j.size else np.zeros((1, 1))
                    upper[i, j] = max(float(block.max(initial=0.0)), float(full.diagonal().max(initial=0.0))
                                      if i == j else 0.0)
                    continue
                block = full[np.ix_(pi, pj)]
                upper[i, j] = float(block.max())
                if i == j and pi.size > 1:
                    off = block[~np.eye(pi.size, dtype=bool)]
                    if np.ptp(off) > 1e-6:
                        uniform = False
                elif i != j and np.ptp(block) > 1e-6:
                    uniform = False
        scores[sens] = upper
    return _Model([(g.namespace, g.name, w.name) for g, w in workloads], replicas, demand, edges, bins, free,
                  slots, scores, uniform, same_node, free_nodes, node_fit, offsets[:-1])


def _solve_bins(model: _Model, time_limit: float, *, node_level: bool = True,
                fixed: np.ndarray | None = None, node_limit: int | None = None) -> dict[str, Any]:
    """The bin MILP (see the module docstring); returns counts (W, B), objective, dual bound, status."""
    nw, nb = len(model.names), len(model.bins)
    rows = Rows()
    cols_c: list[float] = []
    upper: list[float] = []
    integer: list[int] = []

    def new(count: int, ub: float | np.ndarray, is_int: bool, cost: float | np.ndarray = 0.0) -> np.ndarray:
        start = len(cols_c)
        cols_c.extend(np.broadcast_to(np.asarray(cost, dtype=np.float64), (count,)).tolist())
        upper.extend(np.broadcast_to(np.asarray(ub, dtype=np.float64), (count,)).tolist())
        integer.extend([1 if is_int else 0] * count)
        return np.arange(start, start + count)

    x = new(nw * nb, model.slots.ravel(), True).reshape(nw, nb)
    for w in range(nw):
        rows.add(((int(x[w, b]), 1.0) for b in range(nb)), model.replicas[w], model.replicas[w])
    if fixed is not None:  # bin counts given (the node stage): x fixed
        for w in range(nw):
            for b in range(nb):
                rows.add([(int(x[w, b]), 1.0)], float(fixed[w, b]), float(fixed[w, b]))
    if not node_level:
        for k in range(3):
            for b in range(nb):
                entries = [(int(x[w, b]), float(model.demand[w, k])) for w in range(nw) if model.demand[w, k]]
                if entries:
                    rows.add(entries, -np.inf, float(model.free[b, k]))
    # Node level: z[w, n] pods of w on node n (bins split into their nodes), node capacity exact.
    z: dict[tuple[int, int], int] = {}
    for b, members in enumerate(model.bins if node_level else ()):
        fit = model.node_fit[b]  # (W, nodes of b)
        for w in range(nw):
            entries = []
            for k in range(len(members)):
                if fit[w, k] > 0:
                    z[(w, model.node_offset[b] + k)] = col = int(new(1, fit[w, k], True)[0])
                    entries.append((col, 1.0))
            rows.add([*entries, (int(x[w, b]), -1.0)], 0.0, 0.0)
        for k in range(len(members)):
            node = model.node_offset[b] + k
            for r in range(3):
                entries = [(z[(w, node)], float(model.demand[w, r])) for w in range(nw)
                           if (w, node) in z and model.demand[w, r]]
                if entries:
                    rows.add(entries, -np.inf, float(model.node_free[b][k, r]))
    # Same-node pairs score the same-node score, not the bin's link: p[e, n] >= pod pairs of e on n.
    for u, d, sens, coef in model.edges if node_level else ():
        for b, members in enumerate(model.bins):
            if len(members) < 2:
                continue  # one node: its bin score already is the same-node score
            delta = coef * (model.scores[sens][b, b] - model.same_node[sens])
            if delta <= 1e-12:
                continue
            for k in range(len(members)):
                node = model.node_offset[b] + k
                if (u, node) not in z or (d, node) not in z:
                    continue
                fu, fd = model.node_fit[b][u, k], model.node_fit[b][d, k]
                p = int(new(1, np.inf, False, delta)[0])
                zu, zd = z[(u, node)], z[(d, node)]
                if fu <= 1:  # z_u binary: p >= z_d - fd * (1 - z_u)
                    rows.add([(p, 1.0), (zd, -1.0), (zu, -fd)], -fd, np.inf)
                elif fd <= 1:
                    rows.add([(p, 1.0), (zu, -1.0), (zd, -fu)], -fu, np.inf)
                else:  # McCormick under-estimate (the bound stays valid)
                    rows.add([(p, 1.0), (zu, -fd), (zd, -fu)], -fu * fd, np.inf)
    levels: dict[int, np.ndarray] = {}

    def level_vars(w: int) -> np.ndarray:
        if w not in levels:
            r = int(model.replicas[w])
            lv = new(nb * r, 1.0, True).reshape(nb, r)
            for b in range(nb):
                rows.add(((int(lv[b, k]), 1.0) for k in range(r)), -np.inf, 1.0)
                rows.add([(int(x[w, b]), 1.0), *((int(lv[b, k]), -float(k + 1)) for k in range(r))], 0.0, 0.0)
            levels[w] = lv
        return levels[w]

    for u, d, sens, coef in model.edges:
        s = model.scores[sens]
        ru, rd = model.replicas[u], model.replicas[d]
        if ru == 1 or rd == 1:
            y = new(nb * nb, np.inf, False, -coef * s.ravel()).reshape(nb, nb)
            for b1 in range(nb):
                rows.add([*((int(y[b1, b2]), 1.0) for b2 in range(nb)), (int(x[u, b1]), -rd)], 0.0, 0.0)
            for b2 in range(nb):
                rows.add([*((int(y[b1, b2]), 1.0) for b1 in range(nb)), (int(x[d, b2]), -ru)], 0.0, 0.0)
            continue
        # Both replicated: levels on the side with fewer replicas (a), products with the other (o).
        a, o, sa = (u, d, s) if ru <= rd else (d, u, s.T)
        ra, ro = int(model.replicas[a]), float(model.replicas[o])
        lv = level_vars(a)
        for b1 in range(nb):
            for k in range(ra):
                q = new(nb, ro, False, -coef * (k + 1) * sa[b1])
                for b2 in range(nb):
                    rows.add([(int(q[b2]), 1.0), (int(x[o, b2]), -1.0)], -np.inf, 0.0)
                rows.add([*((int(q[b2]), 1.0) for b2 in range(nb)), (int(lv[b1, k]), -ro)], -np.inf, 0.0)
    n = len(cols_c)
    result = milp(np.array(cols_c), constraints=rows.constraint(n), integrality=np.array(integer),
                  bounds=Bounds(np.zeros(n), np.array(upper)),
                  options={"time_limit": max(time_limit, 0.01), "mip_rel_gap": 1e-7, "disp": False,
                           **({"node_limit": int(node_limit)} if node_limit is not None else {})})
    out: dict[str, Any] = {"status": int(result.status), "message": str(result.message), "columns": n,
                           "rows": len(rows)}
    if result.x is not None:
        out["counts"] = np.rint(result.x[x.ravel()]).reshape(nw, nb)
        out["nodes"] = {key: round(result.x[col]) for key, col in z.items() if result.x[col] > 0.5}
        out["value"] = -float(result.fun)
    dual = getattr(result, "mip_dual_bound", None)
    if result.status == 0 and result.x is not None:
        out["bound"] = -float(result.fun)
    elif dual is not None and np.isfinite(dual):
        out["bound"] = -float(dual)
    return out


def split_bound(model: _Model, time_limit: float) -> tuple[float, bool]:
    """An upper bound from cuts: every pod pair of a dependency scores at most ``tau`` (the best
    score inside any bin, same node included) and at most ``sigma`` (the best between two bins) when
    its pods are in different bins. An AppGroup that no single bin can hold is split; grouping its
    parts into two, each side holds at least (demand - largest bin) / 2 of some resource, so it loses
    at least the balanced minimum cut of its pod graph weighted by ``coef * (tau - sigma)``,
    solved exactly with HiGHS. Returns (bound, proven: every cut MILP finished)."""
    base = 0.0
    weights: list[tuple[int, int, float]] = []
    for u, d, sens, coef in model.edges:
        s = model.scores[sens]
        tau = float(s.diagonal().max(initial=0.0))
        off = s[~np.eye(s.shape[0], dtype=bool)]
        sigma = float(off.max(initial=0.0)) if off.size else tau
        base += coef * model.replicas[u] * model.replicas[d] * tau
        if tau > sigma:
            weights.append((u, d, coef * (tau - sigma)))
    groups: dict[tuple[str, str], list[int]] = {}
    for w, key in enumerate(model.names):
        groups.setdefault(key[:2], []).append(w)
    proven = True
    largest = model.free.max(axis=0) if len(model.free) else np.zeros(3)
    for members in groups.values():
        total = (model.demand[members] * model.replicas[members, None]).sum(axis=0)
        if (model.free >= total[None, :] - 1e-9).all(axis=1).any():
            continue  # one bin may hold it whole: no cut forced
        over = np.where(total > 0, (total - largest) / np.where(total > 0, total, 1.0), -np.inf)
        r = int(np.argmax(over))
        low = max((total[r] - largest[r]) / 2.0, 0.0)
        mine = set(members)
        pods = [(w, k) for w in members for k in range(int(model.replicas[w]))]
        pid = {p: i for i, p in enumerate(pods)}
        pairs = [(pid[(u, i)], pid[(d, j)], wgt) for u, d, wgt in weights if u in mine
                 for i in range(int(model.replicas[u])) for j in range(int(model.replicas[d]))]
        if not pairs or low <= 0:
            continue
        n, m = len(pods), len(pairs)
        rows = Rows()
        for k, (p, q, _w) in enumerate(pairs):
            rows.add([(n + k, 1.0), (p, -1.0), (q, 1.0)], 0.0, np.inf)
            rows.add([(n + k, 1.0), (p, 1.0), (q, -1.0)], 0.0, np.inf)
        rows.add([(i, float(model.demand[w, r])) for i, (w, _k) in enumerate(pods)], low, float(total[r]) - low)
        lower = np.zeros(n + m)
        lower[0] = 1.0  # the two sides are symmetric: the first pod's side is "one"
        result = milp(np.concatenate([np.zeros(n), [w for *_pq, w in pairs]]), constraints=rows.constraint(n + m),
                      integrality=np.concatenate([np.ones(n), np.zeros(m)]), bounds=Bounds(lower, np.ones(n + m)),
                      options={"time_limit": max(time_limit, 0.05), "disp": False})
        if result.status == 0:
            base -= float(result.fun)
        else:
            proven = False
            dual = getattr(result, "mip_dual_bound", None)
            if dual is not None and np.isfinite(dual):
                base -= max(float(dual), 0.0)
    return base, proven


# A node-level model (pods on nodes, co-location exact) up to this many columns is solved whole.
FULL_MODEL_MAX_COLUMNS = 30_000


def _full_columns(model: _Model) -> int:
    nodes = sum(len(b) for b in model.bins)
    return len(model.names) * nodes + len(model.edges) * (len(model.bins) ** 2 + nodes)


def search(model: _Model, time_limit: float, candidates: Sequence[np.ndarray]) -> dict[str, Any]:
    """Everything that may need much memory or time (run under the limits, in the child):

    * a small model is solved whole at node level (exact when HiGHS proves it optimal);
    * otherwise the bin MILP gives a bin placement and, when proven optimal, a bound;
    * each bin placement (and the given ``candidates``, e.g. the planner's zones) is refined to
      nodes by the node-level MILP with the bin counts fixed (packing and co-location exact);
    * the split bound (``split_bound``) bounds what the bin MILP could not prove.

    Only proven results are used, so the outcome does not depend on the machine's speed, unless a
    time limit cut a stage (then ``complete`` is False and the message says so)."""
    started = time.perf_counter()

    def left(share: float) -> float:
        return max((time_limit - (time.perf_counter() - started)) * share, 0.05)

    out: dict[str, Any] = {"complete": True, "bound": 100.0, "value": -np.inf, "nodes": None, "stages": []}
    if _full_columns(model) <= FULL_MODEL_MAX_COLUMNS:
        full = _solve_bins(model, left(0.6), node_level=True)
        out["stages"].append("node-level MILP " + ("optimal" if full["status"] == 0 else "stopped"))
        if full["status"] == 0:
            out.update(bound=full["value"], value=full["value"], nodes=full["nodes"])
            return out
        out["complete"] = False
    # The split bound first: it is small and, given its time, proven (so the same on every machine);
    # the bin MILP, which rarely finishes on large cases, gets what is left.
    cut, proven = split_bound(model, left(0.4))
    out["bound"] = min(out["bound"], cut)
    out["complete"] = out["complete"] and proven
    bins = _solve_bins(model, left(0.6), node_level=False)
    pool = list(candidates)
    if bins["status"] == 0:
        out["bound"] = min(out["bound"], bins["value"])
        pool.insert(0, bins["counts"])
        out["stages"].append("bin MILP optimal")
    else:
        out["complete"] = False
        out["stages"].append("bin MILP stopped by the time limit")
    if not proven:
        out["stages"].append("split bound stopped by the time limit")
    for i, counts in enumerate(pool):
        node = _solve_bins(model, left(1.0 / (len(pool) - i)), node_level=True, fixed=counts)
        if node["status"] == 0 and node["value"] > out["value"]:
            out.update(value=node["value"], nodes=node["nodes"])
    return out


def _child(conn: Any, model: _Model, time_limit: float, memory_limit: int | None,
           candidates: Sequence[np.ndarray]) -> None:
    try:
        if memory_limit is not None:
            base = _address_space()
            limit = base + int(memory_limit)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        conn.send(("ok", search(model, time_limit, candidates)))
    except MemoryError:
        conn.send(("memory", "the solver ran out of its memory limit"))
    except Exception as exc:  # reported to the parent as one line, never a traceback
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        kind = "memory" if "bad_alloc" in message or "memory" in message.lower() else "error"
        conn.send((kind, message))
    finally:
        conn.close()


def _address_space() -> int:
    """This process's virtual memory size (bytes), from /proc; 0 when unknown."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def solve_limited(model: _Model, *, time_limit: float, memory_limit: int | None,
                  candidates: Sequence[np.ndarray] = ()) -> tuple[str, Any]:
    """``search`` under the limits: ("ok", result) or (kind, message). With a memory limit it runs in
    a forked child (RLIMIT_AS there; killed if it overruns its time); without, in this process."""
    if memory_limit is None:
        try:
            return "ok", search(model, time_limit, candidates)
        except MemoryError:
            return "memory", "out of memory"
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, model, time_limit, memory_limit, list(candidates)), daemon=True)
    proc.start()
    child.close()
    grace = time_limit + 30.0 + 0.5 * time_limit
    try:
        if parent.poll(grace):
            try:
                kind, payload = parent.recv()
            except EOFError:
                kind, payload = "memory", "the solver died (out of its memory limit?)"
        else:
            kind, payload = "time", "the solver did not stop at its time limit"
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5.0)
        parent.close()
    return kind, payload


# ------------------------------------------------------------------------------------- placement


def node_placements(model: _Model, nodes: Mapping[tuple[int, int], int]
                    ) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """The MILP's node counts ``(w, node index) -> pods`` as the state's placements."""
    names = [n for members in model.bins for n in members]
    out: dict[tuple[str, str, str], list[str]] = {}
    for (w, node), count in sorted(nodes.items()):
        out.setdefault(model.names[w], []).extend([names[node]] * count)
    return {key: tuple(v) for key, v in out.items()}


# ------------------------------------------------------------------------------------------ entry


def planner_candidate(state: ClusterState, groups: Sequence[AppGroupSpec], model: _Model) -> np.ndarray | None:
    """The placement planner's joint plan (its largest budget, work-counted: the same on every
    machine) as bin counts: its node-level placement where it has one, else its zone counts when the
    zone is one bin; None when a zone split into bins (its own node links) has pods planned by zone only."""
    bin_of_node = {node: b for b, members in enumerate(model.bins) for node in members}
    bins_of_zone: dict[str, set[int]] = {}
    for node, b in bin_of_node.items():
        bins_of_zone.setdefault(state.nodes[node].zone, set()).add(b)
    plans = best_joint_plans(state, groups)
    row = {key: w for w, key in enumerate(model.names)}
    counts = np.zeros((len(model.names), len(model.bins)))
    for group, plan in zip(groups, plans, strict=True):
        for workload, zones in plan.zones.items():
            w = row.get((group.namespace, group.name, workload))
            if w is None:
                continue
            planned_by_node: dict[str, int] = {}  # per zone: pods the node-level plan placed there
            for node, n in plan.nodes_for(workload).items():
                counts[w, bin_of_node[node]] += n
                zone = state.nodes[node].zone
                planned_by_node[zone] = planned_by_node.get(zone, 0) + n
            for zone, n in zones.items():
                left = n - planned_by_node.get(zone, 0)
                if left <= 0:
                    continue
                if len(bins_of_zone[zone]) != 1:
                    return None
                counts[w, next(iter(bins_of_zone[zone]))] += left
    if not np.array_equal(counts.sum(axis=1), model.replicas):
        return None  # the plan leaves pods out: not a complete placement
    return counts


def certified_optimum(state: ClusterState, groups: Sequence[AppGroupSpec], *,
                      time_limit: float = DEFAULT_TIME_LIMIT_S,
                      memory_limit: int | None = DEFAULT_MEMORY_LIMIT_BYTES) -> CertifiedOptimum:
    """The best average network score found and its proven bound (see the module docstring)."""
    started = time.perf_counter()
    model = build_model(state, groups)
    nb = len(model.bins)

    def done(status: str, message: str, bound: float = float("nan"), achieved: float = float("nan"),
             value: float = float("nan"),
             placements: Mapping[tuple[str, str, str], tuple[str, ...]] | None = None) -> CertifiedOptimum:
        if bound == bound:
            bound = min(100.0, max(bound, achieved if achieved == achieved else 0.0, 0.0))
        return CertifiedOptimum(bound, achieved, status, message, time.perf_counter() - started, nb, model.uniform,
                                value, dict(placements or {}))

    if not model.names:
        return done("error", "optimum: n/a — no pods to place")
    if ((model.demand * model.replicas[:, None]).sum(axis=0) > model.free.sum(axis=0) + 1e-9).any():
        return done("infeasible", "optimum: n/a — the cluster's free capacity cannot hold every pod")
    candidate = planner_candidate(state, groups, model)
    remaining = max(time_limit - (time.perf_counter() - started), 0.5)
    kind, payload = solve_limited(model, time_limit=remaining, memory_limit=memory_limit,
                                  candidates=[candidate] if candidate is not None else [])
    if kind == "memory":
        limit = ("the machine's memory" if not memory_limit else f"{memory_limit / 2**30:.1f} GiB"
                 if memory_limit >= 2**30 else f"{memory_limit / 2**20:.0f} MiB")
        return done("memory limit", f"optimum: n/a — the solver needed more than {limit} ({payload}); "
                    "raise --memory-limit")
    if kind == "time":
        return done("time limit", f"optimum: n/a — {payload}; raise --time-limit")
    if kind != "ok":
        return done("error", f"optimum: n/a — {payload}")
    result: dict[str, Any] = payload
    stages = "; ".join(result["stages"])
    if result["nodes"] is None:
        return done("time limit", f"optimum: n/a — no placement proven within the {time_limit:.0f} s time limit "
                    f"({stages}); raise --time-limit")
    placements = node_placements(model, result["nodes"])
    achieved = network_metrics(replace(state, placements=placements), groups).average
    status = "optimal" if result["complete"] else "time limit"
    opt = done(status, "", float(result["bound"]), achieved, float(result["value"]), placements)
    if opt.exact:
        message = f"optimum {achieved:.2f} (certified: proven bound {opt.bound:.2f})"
    else:
        message = (f"best found {achieved:.2f}, proven bound {opt.bound:.2f}, gap {100 * opt.gap:.2f} % ({stages})")
    return replace(opt, message=message)
