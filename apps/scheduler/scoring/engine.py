"""Scoring engine: profiles of scorers and filters, run over a ClusterState for one pod.

The extender (HTTP filter/prioritize) and the evaluation harness both call ``run_filters`` and
``run_scorers`` here, so a placement decision is computed identically in both. Nothing in this
module raises for bad cluster data: unknown nodes, missing AppGroups or metrics turn into neutral
scores, passing filters and notes. Bad *configuration* (a profile naming an unknown scorer, a
parameter of the wrong type) raises ``ProfileError`` naming the field.

Extender score mapping: kube-scheduler multiplies an extender's 0..MaxExtenderPriority (10) score
by the extender weight and by MaxNodeScore / MaxExtenderPriority (10), then adds it to the score
plugins' 0..100 sums. We compute a 0..100 weighted mean and hand back ``floor(total / 10 + 0.5)``
(round half up) clipped to 0..10, so 100 -> 10, 85 -> 9 (8.5 rounds up), 84.9 -> 8.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from itertools import compress
from typing import Any, cast

import numpy as np

from apps.appgroups.graph import AppGroupSpec
from netaware_core.fielderrors import FieldError

from . import bandwidth, cold_start, load_aware, network_overhead, network_score, plans
from .common import (
    MAX_EXTENDER_PRIORITY,
    MAX_NODE_SCORE,
    NEUTRAL_SCORE,
    WorkloadRef,
    node_zone_region,
    param_bool,
    param_float,
    pinned_appgroup,
    placed_nodes,
    resolve_workload,
    topology_positions,
)
from .indexes import lookup
from .state import ClusterState, PodInfo

PROFILE_ANNOTATION = "netaware.io/profile"


class ProfileError(FieldError):
    """A profile is invalid; ``field_path`` names where (dotted path)."""


@dataclass(frozen=True)
class Profile:
    """Named set of weighted scorers and filters.

    ``scorers``: (scorer name, weight >= 0, params); ``filters``: filter names; ``params``: per
    filter name, that filter's parameters.
    """

    name: str
    scorers: tuple[tuple[str, float, Mapping[str, Any]], ...]
    filters: tuple[str, ...] = ()
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @cached_property
    def parsed(self) -> dict[str, dict[str, Any]]:
        """``validate_profile(self)``, once per (immutable) profile; an invalid one raises every time."""
        return validate_profile(self)


@dataclass(frozen=True)
class FilterOutcome:
    passed: tuple[str, ...]
    failed: dict[str, str]  # node -> reason; preemption might help
    unresolvable: dict[str, str]  # node -> reason; preemption cannot help (network constraints)
    workload: tuple[str, str] | None = None
    notes: tuple[str, ...] = ()
    plan: Mapping[str, Any] | None = None  # the placement plan the answer followed (decision log)


@dataclass(frozen=True)
class ScoreOutcome:
    nodes: tuple[str, ...]
    total: np.ndarray  # float 0..100, weighted mean over the profile's scorers
    extender: np.ndarray  # int64 0..10 (MaxExtenderPriority)
    breakdown: dict[str, np.ndarray]  # scorer name -> 0..100 per node
    workload: tuple[str, str] | None  # ("namespace/appgroup", workload)
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Diagnosis:
    pod: str
    appgroup: str | None  # "namespace/name"
    workload: str | None
    problems: tuple[str, ...]  # why scores would be neutral/zero or filters unhelpful
    info: tuple[str, ...]  # context (placed neighbours, topology coverage)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(eq=False)
class _Resolved:
    """What one (pod, candidate tuple) resolves to against one state, shared by filter and
    prioritize through the state's memo (``state.memo``): a pure function of the three, so serving
    it again can never differ from recomputing it. ``results`` holds outcomes and intermediate
    results computed so far (filter/score outcomes per profile, NetworkOverhead maps, Algorithm 2's
    terms, usage rows)."""

    candidates: tuple[str, ...]
    ref: WorkloadRef | None
    ref_notes: tuple[str, ...]
    positions: np.ndarray  # read-only
    known: np.ndarray  # read-only
    results: dict[Hashable, Any] = field(default_factory=dict)


_POD_FIELDS = tuple(f.name for f in fields(PodInfo))


def _pod_key(pod: PodInfo) -> tuple[Any, ...] | None:
    """Every PodInfo field (mappings as sorted items): anything a scorer could read. None when a
    value is unhashable (then nothing is memoized)."""
    try:
        key = tuple(tuple(sorted(v.items())) if isinstance(v, Mapping) else v
                    for v in (getattr(pod, name) for name in _POD_FIELDS))
        hash(key)
    except TypeError:
        return None
    return key


@dataclass
class _Context:
    state: ClusterState
    pod: PodInfo
    candidates: tuple[str, ...]
    ref: WorkloadRef | None
    positions: np.ndarray  # topology position, -1 = not in the topology
    notes: list[str]
    known: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # in topology or state
    resolved: _Resolved | None = None  # None: nothing is memoized for this call
    pod_key: tuple[Any, ...] | None = None
    plan_info: dict[str, Any] | None = None  # set by the plan filter, for the decision log

    def remember(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``, or what it returned before for this state, pod and candidates."""
        if self.resolved is None:
            return compute()
        results = self.resolved.results
        if key in results:
            return results[key]
        value = compute()
        results[key] = value
        return value

    @property
    def rows(self) -> np.ndarray:
        """The candidates' rows in the state's usage arrays (read-only)."""
        rows: np.ndarray = self.remember(("rows",), lambda: _readonly(self.state.indexes.usage.rows(self.candidates)))
        return rows


# ---------------------------------------------------------------- parameter parsing

def _parse_network(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "same_node_score": param_float(params, "same_node_score", network_score.DEFAULT_SAME_NODE_SCORE,
                                       low=0.0, high=1.0),
        "cold_start": param_bool(params, "cold_start", True),
        **_parse_cold(params),
    }


def _parse_cold(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "same_node_score": param_float(params, "same_node_score", network_score.DEFAULT_SAME_NODE_SCORE,
                                       low=0.0, high=1.0),
        "max_pods_per_node": param_float(params, "max_pods_per_node", cold_start.DEFAULT_MAX_PODS_PER_NODE,
                                         low=1.0),
        "sample": int(param_float(params, "sample", cold_start.DEFAULT_SAMPLE, low=8, high=4096)),
        **_parse_cold_scale(params),
    }


def _parse_cold_scale(params: Mapping[str, Any]) -> dict[str, Any]:
    knee = param_float(params, "cold_start_knee", cold_start.DEFAULT_KNEE, low=1e-4, high=0.5)
    spread = param_float(params, "cold_start_spread", cold_start.DEFAULT_SPREAD, low=1e-3, high=1.0)
    if spread <= knee:
        raise ValueError(f"cold_start_spread: must be > cold_start_knee ({knee}), got {spread}")
    return {"cold_start_knee": knee, "cold_start_spread": spread}


def _parse_none(params: Mapping[str, Any]) -> dict[str, Any]:
    return {}


def _parse_water(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "average_weight": param_float(params, "average_weight", load_aware.DEFAULT_AVERAGE_WEIGHT,
                                      low=0.0, high=1.0),
        "hot_spot_penalty": param_float(params, "hot_spot_penalty", load_aware.DEFAULT_HOT_SPOT_PENALTY,
                                        low=0.0, high=100.0),
        "cpu_weight": param_float(params, "cpu_weight", 0.5, low=0.0),
        "memory_weight": param_float(params, "memory_weight", 0.5, low=0.0),
    }


def _parse_tlp(params: Mapping[str, Any]) -> dict[str, Any]:
    return {"target_utilization": param_float(params, "target_utilization",
                                              load_aware.DEFAULT_TARGET_UTILIZATION, low=1.0, high=99.0)}


def _parse_lvrb(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "margin": param_float(params, "margin", load_aware.DEFAULT_LVRB_MARGIN, low=0.0),
        "sensitivity": param_float(params, "sensitivity", load_aware.DEFAULT_LVRB_SENSITIVITY, low=1e-6),
    }


def _parse_bw_risk(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "margin": param_float(params, "margin", bandwidth.DEFAULT_MARGIN, low=0.0),
        "sensitivity": param_float(params, "sensitivity", bandwidth.DEFAULT_SENSITIVITY, low=1e-6),
    }


def _parse_bw_risk_filter(params: Mapping[str, Any]) -> dict[str, Any]:
    return {**_parse_bw_risk(params),
            "threshold": param_float(params, "threshold", bandwidth.DEFAULT_RISK_THRESHOLD, low=0.0, high=1.0)}


def _parse_overload(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "cpu_threshold": param_float(params, "cpu_threshold", load_aware.DEFAULT_OVERLOAD_THRESHOLD,
                                     low=0.0, high=1.0),
        "memory_threshold": param_float(params, "memory_threshold", load_aware.DEFAULT_OVERLOAD_THRESHOLD,
                                        low=0.0, high=1.0),
    }


# ---------------------------------------------------------------- scorers

def _network_known(ctx: _Context, scores: np.ndarray) -> np.ndarray:
    unknown = ctx.positions < 0
    if unknown.any():
        ctx.notes.append("network scores neutral for nodes not in the topology: "
                         + ", ".join(np.array(ctx.candidates, dtype=object)[unknown][:10]))
    return np.where(unknown, NEUTRAL_SCORE, scores)


def _terms(ctx: _Context) -> tuple[tuple[network_score.Term, ...], tuple[str, ...]]:
    assert ctx.ref is not None
    ref = ctx.ref
    result: tuple[tuple[network_score.Term, ...], tuple[str, ...]] = ctx.remember(
        ("terms",), lambda: network_score.network_terms(ctx.state, ref))
    return result


def _overhead(ctx: _Context) -> network_overhead.OverheadResult:
    assert ctx.ref is not None
    ref = ctx.ref
    result: network_overhead.OverheadResult = ctx.remember(
        ("overhead",), lambda: network_overhead.overhead(ctx.state, ref, ctx.candidates))
    return result


def _score_network(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    assert ctx.ref is not None
    scores, notes = network_score.network_scores(ctx.state, ctx.ref, ctx.positions,
                                                 same_node_score=p["same_node_score"], terms=_terms(ctx))
    ctx.notes.extend(notes)
    if scores is None:
        if not p["cold_start"]:
            ctx.notes.append("network-score: no dependency or dependent placed yet; neutral")
            return np.full(len(ctx.candidates), NEUTRAL_SCORE)
        return _score_cold(ctx, p)
    return _network_known(ctx, scores)


def _score_cold(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    assert ctx.ref is not None
    terms, _ = _terms(ctx)
    if terms:
        return np.full(len(ctx.candidates), NEUTRAL_SCORE)  # neighbours placed: Score applies
    scores, notes = cold_start.cold_start_scores(
        ctx.state, ctx.ref, ctx.pod, ctx.positions, same_node_score=p["same_node_score"],
        max_pods_per_node=p["max_pods_per_node"], sample=p["sample"], knee=p["cold_start_knee"],
        spread=p["cold_start_spread"])
    ctx.notes.extend(notes)
    if scores is None:
        return np.full(len(ctx.candidates), NEUTRAL_SCORE)
    ctx.notes.append("cold start: no dependency or dependent placed yet; scored toward free capacity")
    return _network_known(ctx, scores)


def _score_overhead(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    assert ctx.ref is not None
    result = _overhead(ctx)
    if not result.has_dependencies or not any(
        placed_nodes(ctx.state, ctx.ref.group, d.target) for d in ctx.ref.workload.dependencies
    ):
        return np.full(len(ctx.candidates), NEUTRAL_SCORE)
    known = ctx.known
    out = np.full(len(ctx.candidates), NEUTRAL_SCORE)
    if known.any():
        out[known] = network_overhead.normalize_costs(result.costs[known])
    return out


def _score_water(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    return load_aware.water_level_scores(ctx.state, ctx.pod, ctx.candidates, **p, rows=ctx.rows)


def _score_tlp(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    return load_aware.target_load_packing_scores(ctx.state, ctx.pod, ctx.candidates, **p, rows=ctx.rows)


def _score_lvrb(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    return load_aware.load_variation_risk_scores(ctx.state, ctx.pod, ctx.candidates, **p, rows=ctx.rows)


def _bw_risk(ctx: _Context, margin: float, sensitivity: float) -> np.ndarray:
    """Node bandwidth risk, shared by the bandwidth-risk filter and scorer (read-only)."""
    result: np.ndarray = ctx.remember(("bw-risk", margin, sensitivity), lambda: _readonly(bandwidth.bandwidth_risk(
        ctx.state, ctx.pod, ctx.candidates, margin=margin, sensitivity=sensitivity, rows=ctx.rows)))
    return result


def _score_bw_risk(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    return bandwidth.bandwidth_risk_scores(ctx.state, ctx.pod, ctx.candidates, **p,
                                           risk=_bw_risk(ctx, p["margin"], p["sensitivity"]))


def _parse_plan(params: Mapping[str, Any]) -> dict[str, Any]:
    objective = params.get("objective", "network-score")
    if objective not in plans.OBJECTIVES:
        raise ValueError(f"objective: must be one of {', '.join(plans.OBJECTIVES)}, got {str(objective)[:40]!r}")
    mode = params.get("mode", "soft")
    if mode not in plans.MODES:
        raise ValueError(f"mode: must be one of {', '.join(plans.MODES)}, got {str(mode)[:40]!r}")
    return {"objective": objective, "mode": mode}


def _plan_mode(ctx: _Context, p: Mapping[str, Any]) -> str:
    """The profile's plan mode, made stricter by the AppGroup's ``spec.topologyMode``."""
    assert ctx.ref is not None
    return plans.stricter_mode(p.get("mode", "soft"), ctx.ref.group.topology_mode)


def _plan(ctx: _Context, objective: str, mode: str) -> plans.PlacementPlan:
    """The AppGroup's plan: from the state's plan book (kept while valid), else computed; asked once
    per state (``state.memo``)."""
    assert ctx.ref is not None
    group = ctx.ref.group
    book = ctx.state.plan_book
    # Once per state (filter and prioritize of every pod of this state share it).
    key = ("plan", group.namespace, group.name, objective, mode)
    cached = ctx.state.memo.get(key)
    if cached is None or cached[0] != group:
        plan = (book.plan_for(ctx.state, group, objective=objective, mode=mode) if book is not None
                else plans.compute_plan(state=ctx.state, group=group, objective=objective, mode=mode))
        cached = (group, plan)
        ctx.state.memo.put(key, cached, size=1)
    result: plans.PlacementPlan = cached[1]
    return result


def _plan_masks(ctx: _Context, p: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, plans.PlacementPlan,
                                                                 tuple[str, ...]]:
    """Candidates on a node, and in a zone, where the plan still wants a pod of this workload."""
    assert ctx.ref is not None
    plan = _plan(ctx, p["objective"], _plan_mode(ctx, p))
    workload = ctx.ref.workload.name
    zones_left = dict(plan.zones_for(workload))
    nodes_left = dict(plan.nodes_for(workload))
    by_zone, by_node = _placed_counts(ctx.state, ctx.ref.group, workload)
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
    in_zone = ctx.remember(("plan-zones", wanted), lambda: _readonly(_in_zones(ctx, wanted)))
    on_node = np.zeros(len(ctx.candidates), dtype=bool)
    targets = [n for n, c in nodes_left.items() if c > 0]
    if targets:
        on_node = np.isin(np.asarray(ctx.candidates, dtype=object), np.asarray(targets, dtype=object))
    return on_node & in_zone, in_zone, plan, zones


def _placed_counts(state: ClusterState, group: AppGroupSpec, workload: str) -> tuple[Counter[str], Counter[str]]:
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


def _in_zones(ctx: _Context, zones: frozenset[str]) -> np.ndarray:
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


def _score_plan(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    """100 on a planned node, 75 elsewhere in a planned zone, 0 outside."""
    on_node, in_zone, plan, zones = _plan_masks(ctx, p)
    ctx.notes.append(f"{plan.summary()}; this pod's zone(s): {', '.join(zones) or 'none left'}")
    return np.where(on_node, MAX_NODE_SCORE, np.where(in_zone, 0.75 * MAX_NODE_SCORE, 0.0))


# ---------------------------------------------------------------- filters (failed, unresolvable)

FilterResult = tuple[dict[str, str], dict[str, str]]


def _filter_overhead(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    assert ctx.ref is not None
    result = _overhead(ctx)
    names = ctx.candidates
    return {}, {names[i]: network_overhead.filter_reason(names[i], int(result.satisfied[i]), int(result.violated[i]))
                for i in np.flatnonzero(result.violated > result.satisfied).tolist()}


def _filter_min_bw(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    assert ctx.ref is not None
    return {}, bandwidth.min_bandwidth_failures(ctx.state, ctx.ref, ctx.candidates)


def _filter_bw_risk(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    return bandwidth.bandwidth_risk_failures(ctx.state, ctx.pod, ctx.candidates, **p,
                                             risk=_bw_risk(ctx, p["margin"], p["sensitivity"])), {}


def _filter_overload(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    return load_aware.overload_failures(ctx.state, ctx.candidates, **p, rows=ctx.rows), {}


def _filter_plan(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    """Narrow to the plan's node(s) for the pod, else to the nodes of its zone(s) that leave room for
    the rest of the plan. Never depends on the plan alone: ``run_filters`` ignores a steering filter
    that would leave no node (the plan is stale or infeasible now)."""
    assert ctx.ref is not None
    on_node, in_zone, plan, zones = _plan_masks(ctx, p)
    names = ctx.candidates
    workload = ctx.ref.workload.name
    ctx.plan_info = {"id": plan.plan_id, "method": plan.method, "value": round(plan.value, 2)
                     if plan.value == plan.value else None, "zones": list(zones),
                     "nodes": sorted(n for n, c in plan.nodes_for(workload).items() if c > 0),
                     "reason": plan.reason, "followed": bool(in_zone.any())}
    if plan.diagnosis:
        ctx.plan_info["diagnosis"] = list(plan.diagnosis)
    mode = _plan_mode(ctx, p)
    if mode == "soft" and not plan.informed:
        ctx.notes.append(f"plan {plan.plan_id}: no dependency or measured link tells zones apart; not steering")
        ctx.plan_info["followed"] = False
        return {}, {}
    if not in_zone.any():
        ctx.notes.append(f"plan {plan.plan_id}: no candidate in its zone(s) ({', '.join(zones) or 'none left'})")
        if mode != "soft":  # hard mode: the pod waits, and says why
            why = "; ".join(plan.diagnosis) or f"no candidate node in its planned zone(s) {', '.join(zones)}"
            reason = f"topology mode {mode}: AppGroup {plan.appgroup} stays in one {mode}: {why}"
            return {}, {name: reason for name in names}
        return {}, {}
    outside = f"outside placement plan {plan.plan_id} (zone {', '.join(zones)})"
    failures = {names[i]: outside for i in np.flatnonzero(~in_zone).tolist()}
    if on_node.any():
        other = f"placement plan {plan.plan_id} puts this pod on another node of its zone"
        failures.update({names[i]: other for i in np.flatnonzero(in_zone & ~on_node).tolist()})
        return {}, failures
    inside = [names[i] for i in np.flatnonzero(in_zone).tolist()]
    keeps = plans.nodes_keeping_plan(ctx.state, plan, ctx.ref.group, ctx.ref.workload.name, inside)
    if keeps is not None:
        held = f"kept for the rest of placement plan {plan.plan_id} (its pods would no longer fit zone {{}})"
        for name, ok in zip(inside, keeps.tolist(), strict=True):
            if not ok:
                failures[name] = held.format(ctx.state.nodes[name].zone)
    return {}, failures


@dataclass(frozen=True)
class ScorerDef:
    parse: Callable[[Mapping[str, Any]], dict[str, Any]]
    run: Callable[[_Context, Mapping[str, Any]], np.ndarray]
    description: str


@dataclass(frozen=True)
class FilterDef:
    parse: Callable[[Mapping[str, Any]], dict[str, Any]]
    run: Callable[[_Context, Mapping[str, Any]], FilterResult]
    description: str


SCORERS: dict[str, ScorerDef] = {
    "network-score": ScorerDef(_parse_network, _score_network,
                               "Paper's Algorithm 2 over dependencies and dependents; cold start when none placed"),
    "cold-start": ScorerDef(_parse_cold, _score_cold,
                            "Connectivity toward free capacity when no neighbour is placed; neutral otherwise"),
    "network-overhead": ScorerDef(_parse_none, _score_overhead,
                                  "scheduler-plugins NetworkOverhead: normalized accumulated zone/region cost"),
    "water-level": ScorerDef(_parse_water, _score_water,
                             "Water level toward a dynamic cluster target, hot-spot penalty"),
    "target-load-packing": ScorerDef(_parse_tlp, _score_tlp, "Trimaran TargetLoadPacking (CPU)"),
    "load-variation-risk": ScorerDef(_parse_lvrb, _score_lvrb, "Trimaran LoadVariationRiskBalancing"),
    "bandwidth-risk": ScorerDef(_parse_bw_risk, _score_bw_risk, "(1 - CheckRiskNodeBandwidth risk) x 100"),
    "plan": ScorerDef(_parse_plan, _score_plan, "100 in a zone where the AppGroup's placement plan wants this pod"),
}

FILTERS: dict[str, FilterDef] = {
    "network-overhead": FilterDef(_parse_none, _filter_overhead,
                                  "Reject when violated > satisfied maxNetworkCost dependencies"),
    "min-bandwidth": FilterDef(_parse_none, _filter_min_bw,
                               "Reject when bandwidth toward a placed dependency is below its minimum"),
    "bandwidth-risk": FilterDef(_parse_bw_risk_filter, _filter_bw_risk, "CheckRiskNodeBandwidth"),
    "overload": FilterDef(_parse_overload, _filter_overload, "Reject nodes above a utilisation limit"),
    "plan": FilterDef(_parse_plan, _filter_plan,
                      "Keep the placement plan's zone(s) for the pod; every candidate when none is there"),
}

# Network-derived filter failures cannot be fixed by preempting pods on the node.
UNRESOLVABLE_FILTERS = frozenset({"network-overhead", "min-bandwidth", "plan"})
# Filters that narrow the candidates but never leave a pod without a node on their own.
STEERING_FILTERS = frozenset({"plan"})

BUILTIN_PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("network", (("network-score", 1.0, {}),), ("min-bandwidth", "plan")),
        Profile("network-noplan", (("network-score", 1.0, {}),), ("min-bandwidth",)),
        Profile("network-overhead", (("network-overhead", 1.0, {}),), ("network-overhead",)),
        Profile("load-aware", (("water-level", 1.0, {}), ("load-variation-risk", 1.0, {})), ("overload",)),
        Profile("hybrid", (("network-score", 3.0, {}), ("water-level", 1.0, {})),
                ("min-bandwidth", "overload", "plan")),
        Profile("hybrid-noplan", (("network-score", 3.0, {}), ("water-level", 1.0, {})),
                ("min-bandwidth", "overload")),
        Profile(
            "balanced",
            (("network-score", 2.0, {}), ("network-overhead", 1.0, {}), ("water-level", 1.0, {}),
             ("load-variation-risk", 1.0, {}), ("bandwidth-risk", 1.0, {})),
            ("network-overhead", "min-bandwidth", "bandwidth-risk", "overload"),
        ),
    )
}
DEFAULT_PROFILE = "network"


def validate_profile(profile: Profile) -> dict[str, dict[str, Any]]:
    """Check names, weights and parameters; returns parsed params per 'scorers[i]' / filter name."""
    parsed: dict[str, dict[str, Any]] = {}
    if not profile.name:
        raise ProfileError("name", "is required")
    if not profile.scorers:
        raise ProfileError("scorers", "a profile needs at least one scorer")
    total = 0.0
    for i, entry in enumerate(profile.scorers):
        if len(entry) != 3:
            raise ProfileError(f"scorers[{i}]", "must be (name, weight, params)")
        name, weight, params = entry
        if name not in SCORERS:
            raise ProfileError(f"scorers[{i}].name", f"unknown scorer {name!r} (known: {', '.join(SCORERS)})")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight < math.inf:
            raise ProfileError(f"scorers[{i}].weight", f"must be a finite number >= 0, got {str(weight)[:40]}")
        total += float(weight)
        if not isinstance(params, Mapping):
            raise ProfileError(f"scorers[{i}].params", "must be a mapping")
        _reject_non_finite(params, f"scorers[{i}].params")
        try:
            parsed[f"scorers[{i}]"] = SCORERS[name].parse(params)
        except ValueError as exc:
            raise ProfileError(f"scorers[{i}].params.{str(exc).split(':')[0]}", str(exc)) from exc
        _reject_unknown(params, parsed[f"scorers[{i}]"], f"scorers[{i}].params")
    if total <= 0:
        raise ProfileError("scorers", "at least one scorer needs a weight > 0")
    for i, name in enumerate(profile.filters):
        if name not in FILTERS:
            raise ProfileError(f"filters[{i}]", f"unknown filter {name!r} (known: {', '.join(FILTERS)})")
    for name, params in profile.params.items():
        if name not in profile.filters:
            raise ProfileError(f"params.{name}", "parameters for a filter the profile does not use")
        if not isinstance(params, Mapping):
            raise ProfileError(f"params.{name}", "must be a mapping")
        _reject_non_finite(params, f"params.{name}")
    for name in profile.filters:
        params = profile.params.get(name, {})
        try:
            parsed[name] = FILTERS[name].parse(params)
        except ValueError as exc:
            raise ProfileError(f"params.{name}.{str(exc).split(':')[0]}", str(exc)) from exc
        _reject_unknown(params, parsed[name], f"params.{name}")
    return parsed


def _reject_non_finite(value: Any, path: str) -> None:
    """JSON like 1e999 parses to inf: name the parameter instead of failing later in arithmetic."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ProfileError(path, f"must be a finite number, got {value}")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _reject_non_finite(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _reject_non_finite(item, f"{path}[{index}]")


def _reject_unknown(given: Mapping[str, Any], parsed: Mapping[str, Any], path: str) -> None:
    unknown = sorted(set(given) - set(parsed))
    if unknown:
        raise ProfileError(f"{path}.{unknown[0]}",
                           f"unknown parameter (allowed: {', '.join(sorted(parsed)) or 'none'})")


def parse_profile(data: Mapping[str, Any]) -> Profile:
    """A Profile from its JSON shape {"name", "scorers": [{"name", "weight", "params"}],
    "filters": [...], "params": {filter: {...}}}; raises ProfileError naming the field."""
    if not isinstance(data, Mapping):
        raise ProfileError("(profile)", "must be a mapping")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError("name", "is required")
    raw_scorers = data.get("scorers")
    if not isinstance(raw_scorers, list):
        raise ProfileError("scorers", "must be a list")
    scorers = []
    for i, raw in enumerate(raw_scorers):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            raise ProfileError(f"scorers[{i}].name", "is required")
        scorers.append((raw["name"], raw.get("weight", 1.0), raw.get("params") or {}))
    filters = data.get("filters") or []
    if not isinstance(filters, list) or not all(isinstance(f, str) for f in filters):
        raise ProfileError("filters", "must be a list of filter names")
    params = data.get("params") or {}
    if not isinstance(params, Mapping):
        raise ProfileError("params", "must be a mapping")
    profile = Profile(name, tuple(scorers), tuple(filters), dict(params))
    validate_profile(profile)
    return profile


def profile_to_dict(profile: Profile) -> dict[str, Any]:
    return {
        "name": profile.name,
        "scorers": [{"name": n, "weight": w, "params": dict(p)} for n, w, p in profile.scorers],
        "filters": list(profile.filters),
        "params": {k: dict(v) for k, v in profile.params.items()},
    }


def choose_profile(pod: PodInfo, profiles: Mapping[str, Profile] | None = None,
                   default: str = DEFAULT_PROFILE) -> tuple[str, Profile, str]:
    """(name, profile, note): the profile the pod's ``netaware.io/profile`` annotation names, else
    the default (the built-in default when that is missing too); the note says why a named one
    was not used. The extender, its decision log and diagnose all choose here."""
    available = profiles or BUILTIN_PROFILES
    wanted = pod.annotations.get(PROFILE_ANNOTATION, "")
    if wanted and wanted in available:
        return wanted, available[wanted], ""
    name = default if default in available else DEFAULT_PROFILE
    note = f"annotation {PROFILE_ANNOTATION}={wanted!r} names no profile; the default {name!r} is used" if wanted else ""
    return name, available.get(name) or BUILTIN_PROFILES[DEFAULT_PROFILE], note


def select_profile(pod: PodInfo, profiles: Mapping[str, Profile] | None = None,
                   default: str = DEFAULT_PROFILE) -> Profile:
    """The profile the pod's ``netaware.io/profile`` annotation names, else the default."""
    return choose_profile(pod, profiles, default)[1]


# ---------------------------------------------------------------- running

def _known_mask(state: ClusterState, names: tuple[str, ...], positions: np.ndarray) -> np.ndarray:
    known = positions >= 0
    if known.all():
        return known
    nodes, usage = state.nodes, state.usage
    in_state = np.fromiter((n in nodes or n in usage for n in names), dtype=bool, count=len(names))
    return cast(np.ndarray, known | in_state)


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _context(state: ClusterState, pod: PodInfo, candidates: Sequence[str], memo: bool) -> _Context:
    names = tuple(map(str, candidates))
    pod_key = _pod_key(pod) if memo else None
    key = (pod_key, names) if pod_key is not None else None
    resolved: _Resolved | None = state.memo.get(key) if key is not None else None
    if resolved is None:
        ref, ref_notes = resolve_workload(state, pod)
        positions = _readonly(topology_positions(state.topology, names))
        resolved = _Resolved(names, ref, ref_notes, positions, _readonly(_known_mask(state, names, positions)))
        if key is not None:
            state.memo.put(key, resolved, size=len(names))
    ctx = _Context(state, pod, resolved.candidates, resolved.ref, resolved.positions, list(resolved.ref_notes),
                   resolved.known, resolved if key is not None else None, pod_key)
    if resolved.ref is None:
        ctx.notes.append("pod matches no AppGroup workload: every node passes with neutral scores")
    unknown = ~ctx.known
    if unknown.any():
        listed = ", ".join(np.array(resolved.candidates, dtype=object)[unknown][:10])
        ctx.notes.append(f"{int(unknown.sum())} candidate node(s) unknown to the topology and the cluster: {listed}")
    return ctx


def _remember_survivors(ctx: _Context, keep: np.ndarray, passed: tuple[str, ...]) -> None:
    """Prioritize usually comes next with exactly the nodes that passed: give it the subset of this
    context (positions, workload, NetworkOverhead maps, usage rows) indexed from the arrays built."""
    resolved = ctx.resolved
    if resolved is None or ctx.pod_key is None:
        return
    sub = _Resolved(passed, resolved.ref, resolved.ref_notes, _readonly(resolved.positions[keep]),
                    _readonly(resolved.known[keep]))
    over = resolved.results.get(("overhead",))
    if over is not None:
        sub.results[("overhead",)] = network_overhead.OverheadResult(
            over.costs[keep], over.satisfied[keep], over.violated[keep], has_dependencies=over.has_dependencies)
    for key, value in resolved.results.copy().items():
        if key == ("terms",):  # per workload, not per candidate
            sub.results[key] = value
        elif isinstance(key, tuple) and key[0] in ("bw-risk", "rows"):  # per candidate
            sub.results[key] = _readonly(value[keep])
    ctx.state.memo.put((ctx.pod_key, passed), sub, size=len(passed))


def to_extender_scores(total: np.ndarray) -> np.ndarray:
    """0..100 -> kube-scheduler's 0..MaxExtenderPriority (round half up)."""
    return np.clip(np.floor(np.asarray(total, dtype=np.float64) / 10.0 + 0.5), 0,
                   MAX_EXTENDER_PRIORITY).astype(np.int64)


def run_filters(state: ClusterState, pod: PodInfo, candidates: Sequence[str], profile: Profile, *,
                memo: bool = True) -> FilterOutcome:
    """Apply the profile's filters. Unknown nodes pass (with a note); a pod in no AppGroup passes.

    With ``memo``, memoized per (state, pod, candidates, profile) in ``state.memo``, and the
    survivors' context is kept for the prioritize call that follows (docs/scoring.md, "Per-pod memo")."""
    parsed = profile.parsed if memo else validate_profile(profile)
    ctx = _context(state, pod, candidates, memo)
    key = ("filter", id(profile))
    hit = ctx.resolved.results.get(key) if ctx.resolved is not None else None
    if hit is not None and hit[0] is profile:
        out: FilterOutcome = hit[1]
        return FilterOutcome(out.passed, dict(out.failed), dict(out.unresolvable), out.workload, out.notes, out.plan)
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    if ctx.ref is not None:
        known = ctx.known
        steering: dict[str, str] = {}
        for name in profile.filters:
            soft, hard = FILTERS[name].run(ctx, parsed[name])
            # hard topology mode (the profile's or the AppGroup's): a real filter
            required = name in STEERING_FILTERS and _plan_mode(ctx, parsed[name]) != "soft"
            target = steering if name in STEERING_FILTERS and not required else (
                unresolvable if name in UNRESOLVABLE_FILTERS else failed)
            for node, reason in {**soft, **hard}.items():
                if node not in failed and node not in unresolvable:
                    target[node] = reason
        if steering:
            # A steering filter only narrows: if it would leave no node, it is ignored.
            if any(n not in steering and n not in failed and n not in unresolvable for n in ctx.candidates):
                for node, reason in steering.items():
                    if node not in failed and node not in unresolvable:
                        unresolvable[node] = reason
            else:
                ctx.notes.append("placement plan: no node in its zone passes the other filters; "
                                 "falling back to every candidate")
                if ctx.plan_info is not None:
                    ctx.plan_info["followed"] = False
        # Never reject a node we know nothing about.
        if failed or unresolvable:
            for i, node in enumerate(ctx.candidates):
                if not known[i]:
                    failed.pop(node, None)
                    unresolvable.pop(node, None)
    if failed or unresolvable:
        keep = np.fromiter((n not in failed and n not in unresolvable for n in ctx.candidates), dtype=bool,
                           count=len(ctx.candidates))
        passed = tuple(compress(ctx.candidates, keep))
        _remember_survivors(ctx, keep, passed)
    else:
        passed = ctx.candidates
    outcome = FilterOutcome(passed, failed, unresolvable, ctx.ref.label if ctx.ref else None, tuple(ctx.notes),
                            ctx.plan_info)
    if ctx.resolved is not None:
        ctx.resolved.results[key] = (profile, FilterOutcome(passed, dict(failed), dict(unresolvable), outcome.workload,
                                                        outcome.notes, outcome.plan))
    return outcome


def _copy_scores(out: ScoreOutcome) -> ScoreOutcome:
    return ScoreOutcome(out.nodes, out.total.copy(), out.extender.copy(),
                        {k: v.copy() for k, v in out.breakdown.items()}, out.workload, out.notes)


def run_scorers(state: ClusterState, pod: PodInfo, candidates: Sequence[str], profile: Profile, *,
                memo: bool = True) -> ScoreOutcome:
    """Weighted mean (0..100) of the profile's scorers per candidate, plus the 0..10 extender score.

    Memoized like ``run_filters``; the caller always gets its own arrays."""
    parsed = profile.parsed if memo else validate_profile(profile)
    ctx = _context(state, pod, candidates, memo)
    key = ("score", id(profile))
    hit = ctx.resolved.results.get(key) if ctx.resolved is not None else None
    if hit is not None and hit[0] is profile:
        return _copy_scores(hit[1])
    n = len(ctx.candidates)
    breakdown: dict[str, np.ndarray] = {}
    total = np.zeros(n)
    weight_sum = 0.0
    known = ctx.known
    for i, (name, weight, _params) in enumerate(profile.scorers):
        if ctx.ref is None:
            scores = np.full(n, NEUTRAL_SCORE)
        else:
            scores = np.asarray(SCORERS[name].run(ctx, parsed[f"scorers[{i}]"]), dtype=np.float64)
            scores = np.where(known, np.clip(scores, 0.0, MAX_NODE_SCORE), NEUTRAL_SCORE)
        key_name = name if name not in breakdown else f"{name}#{i}"
        breakdown[key_name] = scores
        total += float(weight) * scores
        weight_sum += float(weight)
    total = total / weight_sum if weight_sum > 0 else np.full(n, NEUTRAL_SCORE)
    outcome = ScoreOutcome(ctx.candidates, total, to_extender_scores(total), breakdown,
                           ctx.ref.label if ctx.ref else None, tuple(dict.fromkeys(ctx.notes)))
    if ctx.resolved is not None:
        ctx.resolved.results[key] = (profile, _copy_scores(outcome))
    return outcome


# ---------------------------------------------------------------- diagnosis

def explain(state: ClusterState, pod: PodInfo) -> Diagnosis:
    """Why would this pod's network scores be all-zero or neutral? (served at /api/scheduler/diagnose)"""
    podname = f"{pod.namespace}/{pod.name}"
    problems: list[str] = []
    info: list[str] = []
    ref, notes = resolve_workload(state, pod)
    info.extend(notes)
    if ref is None:
        pin = pinned_appgroup(pod)
        groups = [g for g in state.appgroups if g.namespace == pod.namespace]
        if pin is not None and not any((g.namespace, g.name) == pin for g in state.appgroups):
            problems.append(f"the pod's label names AppGroup {pin[0]}/{pin[1]}, which does not exist")
        elif not groups and pin is None:
            problems.append(f"no AppGroup exists in namespace {pod.namespace}")
        else:
            labels = ", ".join(f"{k}={v}" for k, v in sorted(pod.labels.items())) or "(none)"
            checked = [g for g in state.appgroups if pin is None or (g.namespace, g.name) == pin] if pin else groups
            for g in checked:
                selectors = "; ".join(
                    f"{w.name}: {', '.join(f'{k}={v}' for k, v in w.selector.match_labels.items()) or 'expressions'}"
                    for w in g.workloads)
                problems.append(f"pod labels ({labels}) match no workload selector of AppGroup "
                                f"{g.namespace}/{g.name} ({selectors})")
        return Diagnosis(podname, None, None, tuple(problems), tuple(info))
    group, workload = ref.group, ref.workload
    topo = state.topology
    if topo.size == 0:
        problems.append("the network topology is empty (no probe measurements yet)")
    dependents = group.dependents_of(workload.name)
    if not workload.dependencies and not dependents:
        problems.append(f"workload {workload.name} has no dependencies and no dependents in the AppGroup")
    any_placed = False
    for label, name, reverse in ([("dependency", d.target, False) for d in workload.dependencies]
                                 + [("dependent", w.name, True) for w, _ in dependents]):
        nodes = placed_nodes(state, group, name)
        if not nodes:
            info.append(f"{label} {name} has no placed pods")
            continue
        any_placed = True
        outside = sorted({n for n in nodes if n not in topo.index})
        if outside:
            problems.append(f"{label} {name} has pods on nodes missing from the topology: {', '.join(outside)}")
        inside = sorted({n for n in nodes if n in topo.index})
        info.append(f"{label} {name}: {len(nodes)} placed pod(s) on {len(set(nodes))} node(s)")
        if inside and topo.size:
            pos = topology_positions(topo, inside)
            block = np.stack([topo.latency_ms[:, pos], topo.bandwidth_mbps[:, pos], topo.loss_pct[:, pos]])
            if reverse:
                block = np.stack([topo.latency_ms[pos, :].T, topo.bandwidth_mbps[pos, :].T, topo.loss_pct[pos, :].T])
            offdiag = ~(np.arange(topo.size)[:, None] == pos[None, :])
            all_missing = (np.isnan(block).all(axis=0) & offdiag).sum()
            some_missing = ((np.isnan(block).any(axis=0) & ~np.isnan(block).all(axis=0)) & offdiag).sum()
            if all_missing:
                problems.append(f"{label} {name}: {int(all_missing)} node pair(s) have no latency, bandwidth or "
                                "loss measurement (they score 0 as unreachable)")
            if some_missing:
                info.append(f"{label} {name}: {int(some_missing)} node pair(s) miss one or two metrics "
                            "(scored over the metrics present)")
    if (workload.dependencies or dependents) and not any_placed:
        info.append("no dependency or dependent is placed: the network-score uses cold start")
    ext = state.indexes.vectors.extrema if topo.size else None
    if ext is not None and not all(np.isfinite(v) for v in (ext.min_latency, ext.max_latency, ext.min_bandwidth,
                                                              ext.max_bandwidth, ext.min_lossrate, ext.max_lossrate)):
        problems.append("topology extrema are unknown for at least one metric (no measurements at all)")
    # NetworkOverhead inputs.
    for dep in workload.dependencies:
        dep_nodes = set(placed_nodes(state, group, dep.target))
        if not dep_nodes:
            continue
        zr = {node_zone_region(state, n) for n in dep_nodes}
        if any(not z and not r for z, r in zr):
            problems.append(f"dependency {dep.target} runs on nodes without zone and region labels "
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
            problems.append(f"dependency {dep.target}: no network cost for {', '.join(sorted(missing_costs)[:8])} "
                            "(NetworkOverhead uses 100)")
        if dep.max_network_cost is None:
            info.append(f"dependency {dep.target} has no max network cost (NetworkOverhead filter ignores it)")
    book = state.plan_book
    plan = book.peek(group.namespace, group.name) if book is not None else None
    if plan is None and group.workloads:
        plan = plans.compute_plan(state=state, group=group, reason="computed for this diagnosis")
    if plan is not None:
        where = ", ".join(f"{z} x{n}" for z, n in sorted(plan.zones_for(workload.name).items())) or "nowhere"
        planned_nodes = ", ".join(sorted(plan.nodes_for(workload.name))) or "any node of the zone"
        info.append(f"placement plan {plan.plan_id} ({plan.method}{', ' + plan.reason if plan.reason else ''}): "
                    f"{workload.name} -> {where} ({planned_nodes})")
        problems.extend(f"placement plan: {d}" for d in plan.diagnosis if "does not hold" in d)
    stale = sum(1 for u in state.usage.values() if u.stale)
    without = sum(1 for n in state.nodes if n not in state.usage)
    if stale or without:
        info.append(f"load-aware scorers neutral on {stale} node(s) with stale and {without} without usage metrics")
    return Diagnosis(podname, f"{group.namespace}/{group.name}", workload.name, tuple(problems), tuple(info))
