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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import bandwidth, cold_start, load_aware, network_overhead, network_score
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
from .state import ClusterState, PodInfo

PROFILE_ANNOTATION = "netaware.io/profile"


class ProfileError(ValueError):
    """A profile is invalid; ``field`` names where (dotted path)."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path
        self.message = message


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


@dataclass(frozen=True)
class FilterOutcome:
    passed: tuple[str, ...]
    failed: dict[str, str]  # node -> reason; preemption might help
    unresolvable: dict[str, str]  # node -> reason; preemption cannot help (network constraints)
    workload: tuple[str, str] | None = None
    notes: tuple[str, ...] = ()


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


@dataclass
class _Context:
    state: ClusterState
    pod: PodInfo
    candidates: tuple[str, ...]
    ref: WorkloadRef | None
    positions: np.ndarray  # topology position, -1 = not in the topology
    notes: list[str]
    known: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # in topology or state


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


def _score_network(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    assert ctx.ref is not None
    scores, notes = network_score.network_scores(ctx.state, ctx.ref, ctx.positions,
                                                 same_node_score=p["same_node_score"])
    ctx.notes.extend(notes)
    if scores is None:
        if not p["cold_start"]:
            ctx.notes.append("network-score: no dependency or dependent placed yet; neutral")
            return np.full(len(ctx.candidates), NEUTRAL_SCORE)
        return _score_cold(ctx, p)
    return _network_known(ctx, scores)


def _score_cold(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    assert ctx.ref is not None
    terms, _ = network_score.network_terms(ctx.state, ctx.ref)
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
    result = network_overhead.overhead(ctx.state, ctx.ref, ctx.candidates)
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
    return load_aware.water_level_scores(ctx.state, ctx.pod, ctx.candidates, **p)


def _score_tlp(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    return load_aware.target_load_packing_scores(ctx.state, ctx.pod, ctx.candidates, **p)


def _score_lvrb(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    return load_aware.load_variation_risk_scores(ctx.state, ctx.pod, ctx.candidates, **p)


def _score_bw_risk(ctx: _Context, p: Mapping[str, Any]) -> np.ndarray:
    return bandwidth.bandwidth_risk_scores(ctx.state, ctx.pod, ctx.candidates, **p)


# ---------------------------------------------------------------- filters (failed, unresolvable)

FilterResult = tuple[dict[str, str], dict[str, str]]


def _filter_overhead(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    assert ctx.ref is not None
    result = network_overhead.overhead(ctx.state, ctx.ref, ctx.candidates)
    bad = {}
    for i, name in enumerate(ctx.candidates):
        if result.violated[i] > result.satisfied[i]:
            bad[name] = network_overhead.filter_reason(name, int(result.satisfied[i]), int(result.violated[i]))
    return {}, bad


def _filter_min_bw(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    assert ctx.ref is not None
    return {}, bandwidth.min_bandwidth_failures(ctx.state, ctx.ref, ctx.candidates)


def _filter_bw_risk(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    return bandwidth.bandwidth_risk_failures(ctx.state, ctx.pod, ctx.candidates, **p), {}


def _filter_overload(ctx: _Context, p: Mapping[str, Any]) -> FilterResult:
    return load_aware.overload_failures(ctx.state, ctx.candidates, **p), {}


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
}

FILTERS: dict[str, FilterDef] = {
    "network-overhead": FilterDef(_parse_none, _filter_overhead,
                                  "Reject when violated > satisfied maxNetworkCost dependencies"),
    "min-bandwidth": FilterDef(_parse_none, _filter_min_bw,
                               "Reject when bandwidth toward a placed dependency is below its minimum"),
    "bandwidth-risk": FilterDef(_parse_bw_risk_filter, _filter_bw_risk, "CheckRiskNodeBandwidth"),
    "overload": FilterDef(_parse_overload, _filter_overload, "Reject nodes above a utilisation limit"),
}

# Network-derived filter failures cannot be fixed by preempting pods on the node.
UNRESOLVABLE_FILTERS = frozenset({"network-overhead", "min-bandwidth"})

BUILTIN_PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("network", (("network-score", 1.0, {}),), ("min-bandwidth",)),
        Profile("network-overhead", (("network-overhead", 1.0, {}),), ("network-overhead",)),
        Profile("load-aware", (("water-level", 1.0, {}), ("load-variation-risk", 1.0, {})), ("overload",)),
        Profile("hybrid", (("network-score", 3.0, {}), ("water-level", 1.0, {})), ("min-bandwidth", "overload")),
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


def select_profile(pod: PodInfo, profiles: Mapping[str, Profile] | None = None,
                   default: str = DEFAULT_PROFILE) -> Profile:
    """The profile the pod's ``netaware.io/profile`` annotation names, else the default."""
    available = profiles if profiles is not None else BUILTIN_PROFILES
    wanted = pod.annotations.get(PROFILE_ANNOTATION, "")
    if wanted in available:
        return available[wanted]
    if default in available:
        return available[default]
    return BUILTIN_PROFILES[DEFAULT_PROFILE]


# ---------------------------------------------------------------- running

def _known_mask(ctx: _Context) -> np.ndarray:
    known = ctx.positions >= 0
    if known.all():
        return known
    nodes, usage = ctx.state.nodes, ctx.state.usage
    in_state = np.fromiter((n in nodes or n in usage for n in ctx.candidates), dtype=bool,
                           count=len(ctx.candidates))
    return known | in_state


def _context(state: ClusterState, pod: PodInfo, candidates: Sequence[str]) -> _Context:
    names = tuple(str(c) for c in candidates)
    ref, notes = resolve_workload(state, pod)
    ctx = _Context(state, pod, names, ref, topology_positions(state.topology, names), list(notes))
    ctx.known = _known_mask(ctx)
    if ref is None:
        ctx.notes.append("pod matches no AppGroup workload: every node passes with neutral scores")
    unknown = ~ctx.known
    if unknown.any():
        listed = ", ".join(np.array(names, dtype=object)[unknown][:10])
        ctx.notes.append(f"{int(unknown.sum())} candidate node(s) unknown to the topology and the cluster: {listed}")
    return ctx


def to_extender_scores(total: np.ndarray) -> np.ndarray:
    """0..100 -> kube-scheduler's 0..MaxExtenderPriority (round half up)."""
    return np.clip(np.floor(np.asarray(total, dtype=np.float64) / 10.0 + 0.5), 0,
                   MAX_EXTENDER_PRIORITY).astype(np.int64)


def run_filters(state: ClusterState, pod: PodInfo, candidates: Sequence[str], profile: Profile) -> FilterOutcome:
    """Apply the profile's filters. Unknown nodes pass (with a note); a pod in no AppGroup passes."""
    parsed = validate_profile(profile)
    ctx = _context(state, pod, candidates)
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    if ctx.ref is not None:
        known = ctx.known
        for name in profile.filters:
            soft, hard = FILTERS[name].run(ctx, parsed[name])
            target = unresolvable if name in UNRESOLVABLE_FILTERS else failed
            for node, reason in {**soft, **hard}.items():
                if node not in failed and node not in unresolvable:
                    target[node] = reason
        # Never reject a node we know nothing about.
        for i, node in enumerate(ctx.candidates):
            if not known[i]:
                failed.pop(node, None)
                unresolvable.pop(node, None)
    passed = tuple(n for n in ctx.candidates if n not in failed and n not in unresolvable)
    return FilterOutcome(passed, failed, unresolvable, ctx.ref.label if ctx.ref else None, tuple(ctx.notes))


def run_scorers(state: ClusterState, pod: PodInfo, candidates: Sequence[str], profile: Profile) -> ScoreOutcome:
    """Weighted mean (0..100) of the profile's scorers per candidate, plus the 0..10 extender score."""
    parsed = validate_profile(profile)
    ctx = _context(state, pod, candidates)
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
        key = name if name not in breakdown else f"{name}#{i}"
        breakdown[key] = scores
        total += float(weight) * scores
        weight_sum += float(weight)
    total = total / weight_sum if weight_sum > 0 else np.full(n, NEUTRAL_SCORE)
    return ScoreOutcome(ctx.candidates, total, to_extender_scores(total), breakdown,
                        ctx.ref.label if ctx.ref else None, tuple(dict.fromkeys(ctx.notes)))


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
    ext = network_score.topology_extrema(topo) if topo.size else None
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
    stale = sum(1 for u in state.usage.values() if u.stale)
    without = sum(1 for n in state.nodes if n not in state.usage)
    if stale or without:
        info.append(f"load-aware scorers neutral on {stale} node(s) with stale and {without} without usage metrics")
    return Diagnosis(podname, f"{group.namespace}/{group.name}", workload.name, tuple(problems), tuple(info))
