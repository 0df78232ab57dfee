"""NetworkScore (score): the paper's Algorithm 2 over the pod's placed dependencies and dependents;
cold start (``cold_start``) while none is placed. See ``../network_score.py`` for the algorithm."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apps.appgroups.graph import AppGroupSpec

from .. import network_score
from ..common import NEUTRAL_SCORE, WorkloadRef, placed_nodes, topology_positions
from ..plugin import Context, Explanation, Plugin, flag
from ..state import ClusterState
from .cold_start import ColdStartArgs
from .cold_start import score_nodes as cold_start_score
from .shared import known_only, terms

NAME = "network-score"


@dataclass(frozen=True)
class NetworkScoreArgs(ColdStartArgs):
    """The cold-start arguments (used while nothing is placed) and whether to cold-start at all."""

    cold_start: bool = flag(True)


def score_nodes(ctx: Context, args: NetworkScoreArgs) -> np.ndarray:
    ref = ctx.workload
    scores, notes = network_score.network_scores(ctx.state, ref, ctx.positions,
                                                 same_node_score=args.same_node_score, terms=terms(ctx))
    ctx.notes.extend(notes)
    if scores is None:
        if not args.cold_start:
            ctx.notes.append("network-score: no dependency or dependent placed yet; neutral")
            return np.full(len(ctx.candidates), NEUTRAL_SCORE)
        return cold_start_score(ctx, args)
    return known_only(ctx, scores)


def _explain_neighbour(state: ClusterState, group: AppGroupSpec, label: str, name: str, reverse: bool,
                       out: Explanation) -> bool:
    """One dependency (or dependent): where its pods are and which node pairs lack measurements.
    True when it has placed pods."""
    topo = state.topology
    nodes = placed_nodes(state, group, name)
    if not nodes:
        out.info.append(f"{label} {name} has no placed pods")
        return False
    outside = sorted({n for n in nodes if n not in topo.index})
    if outside:
        out.problems.append(f"{label} {name} has pods on nodes missing from the topology: {', '.join(outside)}")
    inside = sorted({n for n in nodes if n in topo.index})
    out.info.append(f"{label} {name}: {len(nodes)} placed pod(s) on {len(set(nodes))} node(s)")
    if not inside or not topo.size:
        return True
    pos = topology_positions(topo, inside)
    if reverse:
        block = np.stack([topo.latency_ms[pos, :].T, topo.bandwidth_mbps[pos, :].T, topo.loss_pct[pos, :].T])
    else:
        block = np.stack([topo.latency_ms[:, pos], topo.bandwidth_mbps[:, pos], topo.loss_pct[:, pos]])
    offdiag = ~(np.arange(topo.size)[:, None] == pos[None, :])
    all_missing = (np.isnan(block).all(axis=0) & offdiag).sum()
    some_missing = ((np.isnan(block).any(axis=0) & ~np.isnan(block).all(axis=0)) & offdiag).sum()
    if all_missing:
        out.problems.append(f"{label} {name}: {int(all_missing)} node pair(s) have no latency, bandwidth or "
                            "loss measurement (they score 0 as unreachable)")
    if some_missing:
        out.info.append(f"{label} {name}: {int(some_missing)} node pair(s) miss one or two metrics "
                        "(scored over the metrics present)")
    return True


def explain(state: ClusterState, ref: WorkloadRef, out: Explanation) -> None:
    """Topology coverage and placed neighbours: why Algorithm 2 would be neutral, zero or cold."""
    group, workload = ref.group, ref.workload
    topo = state.topology
    if topo.size == 0:
        out.problems.append("the network topology is empty (no probe measurements yet)")
    dependents = group.dependents_of(workload.name)
    if not workload.dependencies and not dependents:
        out.problems.append(f"workload {workload.name} has no dependencies and no dependents in the AppGroup")
    neighbours = ([("dependency", d.target, False) for d in workload.dependencies]
                  + [("dependent", w.name, True) for w, _ in dependents])
    placed = [_explain_neighbour(state, group, label, name, reverse, out) for label, name, reverse in neighbours]
    if neighbours and not any(placed):
        out.info.append("no dependency or dependent is placed: the network-score uses cold start")
    ext = state.indexes.vectors.extrema if topo.size else None
    if ext is not None and not all(np.isfinite(v) for v in (ext.min_latency, ext.max_latency, ext.min_bandwidth,
                                                              ext.max_bandwidth, ext.min_lossrate, ext.max_lossrate)):
        out.problems.append("topology extrema are unknown for at least one metric (no measurements at all)")


PLUGIN: Plugin[NetworkScoreArgs] = Plugin(
    NAME, NetworkScoreArgs, "Paper's Algorithm 2 over dependencies and dependents; cold start when none placed",
    score=score_nodes, explain=explain)
