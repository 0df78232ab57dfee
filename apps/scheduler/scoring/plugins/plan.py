"""Plan (filter and score): follow the AppGroup's placement plan (``../plans.py``).

The filter narrows the candidates to the plan's node(s) for the pod, else to the nodes of its
zone(s) that leave room for the rest of the plan; it is a *steering* filter: the pipeline ignores it
when it would leave no node (the plan is stale or infeasible now), unless the profile's ``mode`` or
the AppGroup's ``spec.topologyMode`` asks for a hard zone/region. The score gives 100 on a planned
node, 75 elsewhere in a planned zone, 0 outside.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from apps.appgroups.graph import AppGroupSpec

from .. import plans
from ..common import MAX_NODE_SCORE, WorkloadRef, lookup, node_zone_region, placed_nodes
from ..plugin import Context, Explanation, FilterResult, Plugin, ProfileError, choice, number, readonly
from ..state import ClusterState

NAME = "plan"


@dataclass(frozen=True)
class PlanArgs:
    objective: str = choice("network-score", plans.OBJECTIVES)
    mode: str = choice("soft", plans.MODES)
    # The transfer-cost objective's prices (USD per GB between zones of a region / between regions).
    zone_usd_per_gb: float = number(plans.DEFAULT_TRANSFER_PRICES.zone, low=0.0, high=1000.0)
    region_usd_per_gb: float = number(plans.DEFAULT_TRANSFER_PRICES.region, low=0.0, high=1000.0)

    def check(self, path: str) -> None:
        if self.objective == "transfer-cost" and self.zone_usd_per_gb == 0 and self.region_usd_per_gb == 0:
            raise ProfileError(f"{path}.region_usd_per_gb", "region_usd_per_gb: with zone_usd_per_gb also 0 "
                               "every placement costs nothing, so the transfer-cost objective cannot choose")

    @cached_property  # once per (frozen) argument set, not per request
    def prices(self) -> plans.TransferPrices:
        return plans.TransferPrices(zone=self.zone_usd_per_gb, region=self.region_usd_per_gb)

    @cached_property
    def objective_key(self) -> str:
        return plans.objective_key(self.objective, self.prices)


def mode_of(ctx: Context, args: PlanArgs) -> str:
    """The profile's plan mode, made stricter by the AppGroup's ``spec.topologyMode``."""
    return plans.stricter_mode(args.mode, ctx.workload.group.topology_mode)


def hard_mode(ctx: Context, args: PlanArgs) -> bool:
    """A hard topology mode (the profile's or the AppGroup's): the filter is a real filter."""
    return mode_of(ctx, args) != "soft"


def _plan(ctx: Context, args: PlanArgs, mode: str) -> plans.PlacementPlan:
    """The AppGroup's plan: from the state's plan book (kept while valid), else computed; asked once
    per state (``state.score_memo``: filter and prioritize of every pod of this state share it)."""
    group = ctx.workload.group
    book = ctx.state.plan_book
    objective, prices = args.objective, args.prices
    key = ("plan", group.namespace, group.name, args.objective_key, mode)
    known = ctx.state.score_memo.get(key)
    if known is None or known[0] != group:
        plan = (book.plan_for(ctx.state, group, objective=objective, mode=mode, prices=prices) if book is not None
                else plans.compute_plan(state=ctx.state, group=group, objective=objective, mode=mode, prices=prices))
        known = (group, plan)
        ctx.state.score_memo.put(key, known, size=1)
    result: plans.PlacementPlan = known[1]
    return result


def placed_counts(state: ClusterState, group: AppGroupSpec, workload: str) -> tuple[Counter[str], Counter[str]]:
    """Pods of ``workload`` per zone (labels first, then the topology) and per node. Kept on the
    state's places (they hold while no node changes zone) with the placements tuple counted, so
    a bind recounts only the workload it placed; callers must not mutate the counters."""
    pods = placed_nodes(state, group, workload)
    derived = state.indexes.places.derived
    key = ("placed-zones-nodes", group.namespace, group.name, workload)
    known = derived.get(key)
    if known is not None and known[0] == pods:
        return known[1], known[2]
    by_node = Counter(pods)
    by_zone: Counter[str] = Counter()
    for node, count in by_node.items():
        by_zone[node_zone_region(state, node)[0]] += count
    derived[key] = (pods, by_zone, by_node)
    return by_zone, by_node


def _in_zones(ctx: Context, zones: frozenset[str]) -> np.ndarray:
    """Which candidates are in ``zones`` (the cluster's node labels; unknown nodes are not)."""
    if not zones:
        return np.zeros(len(ctx.candidates), dtype=bool)
    places = ctx.state.indexes.places
    positions = ctx.positions
    entry = np.full(len(positions), -1, dtype=np.int64)
    inside = positions >= 0
    entry[inside] = places.topology_entry[positions[inside]]
    outside = np.flatnonzero(~inside)
    if outside.size:  # not in the topology: look the names up
        entry[outside] = lookup(places.index, [ctx.candidates[i] for i in outside.tolist()])
    wanted = np.zeros(len(places.zone_codes) + 1, dtype=bool)  # the last entry: not a cluster node
    wanted[[places.zone_codes[z] for z in zones if z in places.zone_codes]] = True
    label = np.full(len(positions), -1, dtype=np.int64)
    label[entry >= 0] = places.label_zone[entry[entry >= 0]]
    return wanted[label]


def _masks(ctx: Context, args: PlanArgs) -> tuple[np.ndarray, np.ndarray, plans.PlacementPlan, tuple[str, ...]]:
    """Candidates on a node, and in a zone, where the plan still wants a pod of this workload."""
    ref = ctx.workload
    plan = _plan(ctx, args, mode_of(ctx, args))
    workload = ref.workload.name
    zones_left = dict(plan.zones_for(workload))
    nodes_left = dict(plan.nodes_for(workload))
    by_zone, by_node = placed_counts(ctx.state, ref.group, workload)
    for zone, count in by_zone.items():
        if zone in zones_left:
            zones_left[zone] -= count
    for node, count in by_node.items():
        if node in nodes_left:
            nodes_left[node] -= count
    zones = tuple(sorted(z for z, n in zones_left.items() if n > 0))
    if not zones and workload not in plan.unplaced:
        # Every planned pod of the workload is placed (more pods than its replicas hint): the extra
        # ones follow the workload's zones, with no node of their own.
        zones, nodes_left = tuple(sorted(plan.zones_for(workload))), {}
    wanted = frozenset(zones)
    in_zone = ctx.remember(("plan-zones", wanted), lambda: readonly(_in_zones(ctx, wanted)))
    on_node = np.zeros(len(ctx.candidates), dtype=bool)
    targets = [n for n, c in nodes_left.items() if c > 0]
    if targets:
        on_node = np.isin(np.asarray(ctx.candidates, dtype=object), np.asarray(targets, dtype=object))
    return on_node & in_zone, in_zone, plan, zones


def score_nodes(ctx: Context, args: PlanArgs) -> np.ndarray:
    """100 on a planned node, 75 elsewhere in a planned zone, 0 outside."""
    on_node, in_zone, plan, zones = _masks(ctx, args)
    ctx.notes.append(f"{plan.summary()}; this pod's zone(s): {', '.join(zones) or 'none left'}")
    return np.where(on_node, MAX_NODE_SCORE, np.where(in_zone, 0.75 * MAX_NODE_SCORE, 0.0))


def _cluster_zones(state: ClusterState) -> frozenset[str]:
    """The zones of the cluster's nodes (kept on the state's places, which hold while no node changes zone)."""
    derived = state.indexes.places.derived
    known = derived.get(("cluster-zones",))
    if known is None or known[0] is not state.nodes:
        known = (state.nodes, frozenset(n.zone for n in state.nodes.values() if n.zone))
        derived[("cluster-zones",)] = known
    zones: frozenset[str] = known[1]
    return zones


def spread_failures(ctx: Context) -> dict[str, str]:
    """Candidates whose zone would break the workload's spread: ``minZones`` (the replicas still to
    come could no longer reach that many zones) or the pod's own DoNotSchedule zone spread (maxSkew).
    Hard, like kube-scheduler's PodTopologySpread: a plan or a network score never overrides them."""
    ref = ctx.workload
    group, workload = ref.group, ref.workload
    wanted, skew = group.min_zones_of(workload), ctx.pod.zone_max_skew
    if wanted <= 1 and skew <= 0:
        return {}
    zones = _cluster_zones(ctx.state)
    by_zone, _ = placed_counts(ctx.state, group, workload.name)
    bad: dict[str, str] = {}
    wanted = min(wanted, len(zones), workload.replicas)
    used = {z for z, n in by_zone.items() if n > 0}
    left = workload.replicas - sum(by_zone.values()) - 1
    if wanted > 1 and len(used) + 1 + max(left, 0) <= wanted:  # only a new zone keeps minZones reachable
        for zone in used:
            if not plans.spread_zones(by_zone, zone, left, wanted):
                bad[zone] = (f"minZones {wanted}: {workload.name} already runs in zone {zone}; its remaining "
                             f"{max(left, 0) + 1} pod(s) must open {wanted - len(used)} more zone(s)")
    if skew > 0 and zones:
        lowest = min(by_zone.get(z, 0) for z in zones)
        for zone in zones:
            if zone not in bad and by_zone.get(zone, 0) + 1 - lowest > skew:
                bad[zone] = (f"topologySpreadConstraints (zone, maxSkew {skew}): zone {zone} would hold "
                             f"{by_zone.get(zone, 0) + 1} pods of {workload.name}, the emptiest {lowest}")
    if not bad:
        return {}
    names = ctx.candidates
    out: dict[str, str] = {}
    for zone, reason in bad.items():
        for i in np.flatnonzero(_in_zones(ctx, frozenset((zone,)))).tolist():
            out[names[i]] = reason
    return out


def filter_nodes(ctx: Context, args: PlanArgs) -> FilterResult:
    """Narrow to the plan's node(s) for the pod, else to the nodes of its zone(s) that leave room for
    the rest of the plan. Never depends on the plan alone: the pipeline ignores a steering filter
    that would leave no node (the plan is stale or infeasible now). The spread constraints
    (``spread_failures``) come first in the answer: they always count."""
    spread = spread_failures(ctx)
    steer = _steer(ctx, args)
    return spread, {n: r for n, r in steer.items() if n not in spread}


def _steer(ctx: Context, args: PlanArgs) -> dict[str, str]:
    ref = ctx.workload
    on_node, in_zone, plan, zones = _masks(ctx, args)
    names = ctx.candidates
    workload = ref.workload.name
    ctx.plan_info = {"id": plan.plan_id, "method": plan.method, "value": round(plan.value, 2)
                     if plan.value == plan.value else None, "zones": list(zones),
                     "nodes": sorted(n for n, c in plan.nodes_for(workload).items() if c > 0),
                     "reason": plan.reason, "followed": bool(in_zone.any())}
    if plan.diagnosis:
        ctx.plan_info["diagnosis"] = list(plan.diagnosis)
    mode = mode_of(ctx, args)
    if mode == "soft" and not plan.informed:
        ctx.notes.append(f"plan {plan.plan_id}: no dependency or measured link tells zones apart; not steering")
        ctx.plan_info["followed"] = False
        return {}
    if not in_zone.any():
        ctx.notes.append(f"plan {plan.plan_id}: no candidate in its zone(s) ({', '.join(zones) or 'none left'})")
        if mode != "soft":  # hard mode: the pod waits, and says why
            why = "; ".join(plan.diagnosis) or f"no candidate node in its planned zone(s) {', '.join(zones)}"
            reason = f"topology mode {mode}: AppGroup {plan.appgroup} stays in one {mode}: {why}"
            return {name: reason for name in names}
        return {}
    outside = f"outside placement plan {plan.plan_id} (zone {', '.join(zones)})"
    failures = {names[i]: outside for i in np.flatnonzero(~in_zone).tolist()}
    if on_node.any():
        other = f"placement plan {plan.plan_id} puts this pod on another node of its zone"
        failures.update({names[i]: other for i in np.flatnonzero(in_zone & ~on_node).tolist()})
        return failures
    inside = [names[i] for i in np.flatnonzero(in_zone).tolist()]
    keeps = plans.nodes_keeping_plan(ctx.state, plan, ref.group, workload, inside)
    if keeps is not None:
        held = f"kept for the rest of placement plan {plan.plan_id} (its pods would no longer fit zone {{}})"
        for name, ok in zip(inside, keeps.tolist(), strict=True):
            if not ok:
                failures[name] = held.format(ctx.state.nodes[name].zone)
    return failures


def explain(state: ClusterState, ref: WorkloadRef, out: Explanation) -> None:
    """Where the AppGroup's plan puts this workload, and which of its assumptions no longer hold."""
    group, workload = ref.group, ref.workload
    book = state.plan_book
    plan = book.peek(group.namespace, group.name) if book is not None else None
    if plan is None and group.workloads:
        plan = plans.compute_plan(state=state, group=group, reason="computed for this diagnosis")
    if plan is None:
        return
    where = ", ".join(f"{z} x{n}" for z, n in sorted(plan.zones_for(workload.name).items())) or "nowhere"
    planned_nodes = ", ".join(sorted(plan.nodes_for(workload.name))) or "any node of the zone"
    out.info.append(f"placement plan {plan.plan_id} ({plan.method}{', ' + plan.reason if plan.reason else ''}): "
                    f"{workload.name} -> {where} ({planned_nodes})")
    out.problems.extend(f"placement plan: {d}" for d in plan.diagnosis if "does not hold" in d)


PLUGIN: Plugin[PlanArgs] = Plugin(
    NAME, PlanArgs,
    "Keep the placement plan's zone(s) for the pod (every candidate when none is there); "
    "score 100 in a zone where the plan wants this pod",
    score=score_nodes, filter=filter_nodes, explain=explain, unresolvable=True, steering=True, hard_mode=hard_mode)
