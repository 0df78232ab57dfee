"""NetworkOverhead (filter and score), as in scheduler-plugins' networkaware/networkoverhead: the
filter rejects a node where more dependencies violate their maxNetworkCost than satisfy it; the
score is the normalized accumulated zone/region cost. See ``../network_overhead.py``."""

from __future__ import annotations

import numpy as np

from .. import network_overhead
from ..common import NEUTRAL_SCORE, WorkloadRef, node_zone_region, placed_nodes
from ..plugin import Context, Explanation, FilterResult, NoArgs, Plugin
from ..state import ClusterState

NAME = "network-overhead"


def _carry(value: network_overhead.OverheadResult, keep: np.ndarray) -> network_overhead.OverheadResult:
    return network_overhead.OverheadResult(value.costs[keep], value.satisfied[keep], value.violated[keep],
                                           has_dependencies=value.has_dependencies)


def overhead(ctx: Context) -> network_overhead.OverheadResult:
    """Costs and satisfied/violated counts per candidate, shared by the filter and the score."""
    ref = ctx.workload
    result: network_overhead.OverheadResult = ctx.remember(
        ("overhead",), lambda: network_overhead.overhead(ctx.state, ref, ctx.candidates), _carry)
    return result


def filter_nodes(ctx: Context, args: NoArgs) -> FilterResult:
    result = overhead(ctx)
    names = ctx.candidates
    return {}, {names[i]: network_overhead.filter_reason(names[i], int(result.satisfied[i]), int(result.violated[i]))
                for i in np.flatnonzero(result.violated > result.satisfied).tolist()}


def score_nodes(ctx: Context, args: NoArgs) -> np.ndarray:
    ref = ctx.workload
    result = overhead(ctx)
    if not result.has_dependencies or not any(
        placed_nodes(ctx.state, ref.group, d.target) for d in ref.workload.dependencies
    ):
        return np.full(len(ctx.candidates), NEUTRAL_SCORE)
    known = ctx.known
    out = np.full(len(ctx.candidates), NEUTRAL_SCORE)
    if known.any():
        out[known] = network_overhead.normalize_costs(result.costs[known])
    return out


def explain(state: ClusterState, ref: WorkloadRef, out: Explanation) -> None:
    """Zone/region labels and costs NetworkOverhead needs for every placed dependency."""
    group, topo = ref.group, state.topology
    for dep in ref.workload.dependencies:
        dep_nodes = set(placed_nodes(state, group, dep.target))
        if not dep_nodes:
            continue
        zr = {node_zone_region(state, n) for n in dep_nodes}
        if any(not z and not r for z, r in zr):
            out.problems.append(f"dependency {dep.target} runs on nodes without zone and region labels "
                                "(NetworkOverhead counts cost 100 / violated)")
        all_zr = {node_zone_region(state, n) for n in (set(state.nodes) | set(topo.nodes))}
        missing_costs = set()
        for z1, r1 in all_zr:
            for z2, r2 in zr:
                if r1 == r2 and z1 != z2 and (z1, z2) not in topo.zone_costs:
                    missing_costs.add(f"zone {z1}->{z2}")
                if r1 != r2 and (r1, r2) not in topo.region_costs:
                    missing_costs.add(f"region {r1}->{r2}")
        if missing_costs:
            out.problems.append(f"dependency {dep.target}: no network cost for "
                                f"{', '.join(sorted(missing_costs)[:8])} (NetworkOverhead uses 100)")
        if dep.max_network_cost is None:
            out.info.append(f"dependency {dep.target} has no max network cost (NetworkOverhead filter ignores it)")


PLUGIN: Plugin[NoArgs] = Plugin(
    NAME, NoArgs,
    "scheduler-plugins NetworkOverhead: reject when violated > satisfied maxNetworkCost dependencies; "
    "score the normalized accumulated zone/region cost",
    score=score_nodes, filter=filter_nodes, explain=explain, unresolvable=True)
