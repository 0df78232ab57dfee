"""The best achievable average network score, by mixed-integer programming (scipy's HiGHS milp).

The average network score is a quadratic function of the placement: every dependency edge u -> d
contributes ComputeScore(node of u's pod, node of d's pod) for every pod pair, once to u's
Algorithm 2 score (weight w_u) and once to d's (as a dependent, weight w_u). Linearization:

* ``x[w, n]`` integer in [0, replicas_w]: pods of workload w on node n; sum over n = replicas_w;
* ``y[e, n, m] >= 0``: pod pairs of edge e with the caller on n and the callee on m, constrained to
  the marginals ``sum_m y = replicas_d * x[u, n]`` and ``sum_n y = replicas_u * x[d, m]``;
* capacity: cpu, memory and pod count per node (as NodeResourcesFit filters);
* maximize ``sum_e coef_e * sum_{n,m} C_e[n, m] * y[e, n, m]``, where C_e is the scorer's own
  ComputeScore matrix for the edge's sensitivities (same-node score on the diagonal) and coef_e
  folds in the importance weights and Algorithm 2's normalizations.

When every workload has one replica, x is binary and y is forced to the product x[u,n]·x[d,m]:
the optimum is *exact*. With replicas the marginals only bound the pairing (the solver may pick a
better-than-real coupling), so the objective is an *upper bound*; the solver's placement is then
re-scored through the extender's Score and reported as the best placement *achieved*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import Bounds, milp

from apps.appgroups.graph import AppGroupSpec
from apps.scheduler.scoring.linear import Rows
from apps.scheduler.scoring.state import ClusterState

from .adapter import pair_score_matrix
from .metrics import network_metrics


@dataclass(frozen=True)
class Optimum:
    bound: float  # the MILP objective (0..100): exact when ``exact``
    achieved: float  # the MILP's placement re-scored through the extender's Score
    exact: bool
    status: str
    mip_gap: float
    seconds: float
    placements: Mapping[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)

    @property
    def reference(self) -> float:
        """What profiles are compared with: the exact optimum, else the (upper) bound."""
        return self.bound


def optimum_placement(state: ClusterState, groups: Sequence[AppGroupSpec], *, time_limit: float = 30.0) -> Optimum:
    import time

    started = time.perf_counter()
    topology = state.topology
    node_names = [n for n in topology.nodes if n in state.nodes]
    positions = np.array([topology.index[n] for n in node_names], dtype=np.int64)
    n_nodes = len(node_names)
    workloads = [(g, w) for g in groups for w in g.workloads if w.replicas > 0]
    wid = {(g.namespace, g.name, w.name): i for i, (g, w) in enumerate(workloads)}
    replicas = np.array([w.replicas for _, w in workloads], dtype=np.float64)

    # Edges and Algorithm 2's normalizers (total weight of each workload's placed terms).
    edges: list[tuple[int, int, np.ndarray, float]] = []  # (u, d, C[n, m], weight of u)
    total_w = np.zeros(len(workloads))
    for g in groups:
        for spec in g.workloads:
            u = wid.get((g.namespace, g.name, spec.name))
            if u is None:
                continue
            for dep in spec.dependencies:
                d = wid.get((g.namespace, g.name, dep.target))
                if d is None:
                    continue
                matrix = pair_score_matrix(topology, dep.sensitivity)[np.ix_(positions, positions)]
                weight = spec.weight * dep.weight  # the caller's importance times the edge's weight, as Score
                edges.append((u, d, matrix, weight))
                total_w[u] += weight
                total_w[d] += weight
    importance = np.array([w.weight for _, w in workloads])
    scored = total_w > 0
    imp_sum = float(importance[scored].sum()) or 1.0

    n_x = len(workloads) * n_nodes
    n_y = len(edges) * n_nodes * n_nodes
    c = np.zeros(n_x + n_y)
    for e, (u, d, matrix, weight) in enumerate(edges):
        coef = 0.0
        for side in (u, d):
            if total_w[side] > 0:
                coef += importance[side] * weight / (total_w[side] * replicas[u] * replicas[d])
        base = n_x + e * n_nodes * n_nodes
        c[base: base + n_nodes * n_nodes] = -100.0 * coef * matrix.ravel() / imp_sum

    def xi(w: int, n: int) -> int:
        return w * n_nodes + n

    rows = Rows()
    for w in range(len(workloads)):  # every pod placed
        rows.add(((xi(w, n), 1.0) for n in range(n_nodes)), replicas[w], replicas[w])
    for e, (u, d, _m, _w) in enumerate(edges):  # transportation marginals
        base = n_x + e * n_nodes * n_nodes
        for n in range(n_nodes):
            rows.add([*((base + n * n_nodes + m, 1.0) for m in range(n_nodes)), (xi(u, n), -replicas[d])], 0.0, 0.0)
        for m in range(n_nodes):
            rows.add([*((base + n * n_nodes + m, 1.0) for n in range(n_nodes)), (xi(d, m), -replicas[u])], 0.0, 0.0)
    for n, name in enumerate(node_names):  # capacity
        node = state.nodes[name]
        for attr, free in (
            ("cpu_request_millicores", node.allocatable_cpu_millicores - node.requested_cpu_millicores),
            ("memory_request_bytes", node.allocatable_memory_bytes - node.requested_memory_bytes),
            ("pods", 110 - node.pod_count),
        ):
            amounts = ((w, 1.0 if attr == "pods" else float(getattr(wspec, attr)))
                       for w, (_g, wspec) in enumerate(workloads))
            rows.add(((xi(w, n), amount) for w, amount in amounts if amount), -np.inf, float(free))
    upper = np.concatenate([np.repeat(replicas, n_nodes), np.full(n_y, np.inf)])
    integrality = np.concatenate([np.ones(n_x), np.zeros(n_y)])
    result = milp(
        c, constraints=rows.constraint(n_x + n_y), integrality=integrality,
        bounds=Bounds(np.zeros(n_x + n_y), upper),
        options={"time_limit": time_limit, "mip_rel_gap": 1e-6, "disp": False},
    )
    seconds = time.perf_counter() - started
    if result.x is None:
        return Optimum(float("nan"), float("nan"), False, result.message, float("nan"), seconds)
    counts = np.rint(result.x[:n_x]).astype(int).reshape(len(workloads), n_nodes)
    placements: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for w, (g, wspec) in enumerate(workloads):
        placements[(g.namespace, g.name, wspec.name)] = tuple(
            name for n, name in enumerate(node_names) for _ in range(counts[w, n])
        )
    achieved = network_metrics(replace(state, placements=placements), groups).average
    gap = float(getattr(result, "mip_gap", 0.0) or 0.0)
    optimal = result.status == 0
    # With a remaining MIP gap the proven bound is the dual bound, not the incumbent.
    dual = getattr(result, "mip_dual_bound", None)
    bound = -float(dual) if (not optimal and dual is not None and np.isfinite(dual)) else -float(result.fun)
    exact = optimal and bool(np.all(replicas == 1))
    return Optimum(bound, achieved, exact, result.message, gap, seconds, placements)
