"""Scoring pipeline: run a profile's filter and score plugins over a ClusterState for one pod.

The extender (HTTP filter/prioritize) and the evaluation harness both call ``run_filters`` and
``run_scorers`` here, so a placement decision is computed identically in both. Nothing in this
module raises for bad cluster data: unknown nodes, missing AppGroups or metrics turn into neutral
scores, passing filters and notes. Bad *configuration* (a profile naming an unknown plugin, an
argument of the wrong type) raises ``ProfileError`` naming the field (``profile.py``).

The plugins are one module each (``plugins/``, the registry ``plugins.REGISTRY``); this module
holds what they share: the per-call ``Context``, the per-state score memo of resolved calls, how
filter verdicts combine, the weighted mean of scores and ``explain`` (each plugin's own
explanation after the pod's workload resolution).

Extender score mapping: kube-scheduler multiplies an extender's 0..MaxExtenderPriority (10) score
by the extender weight and by MaxNodeScore / MaxExtenderPriority (10), then adds it to the score
plugins' 0..100 sums. We compute a 0..100 weighted mean and hand back ``floor(total / 10 + 0.5)``
(round half up) clipped to 0..10, so 100 -> 10, 85 -> 9 (8.5 rounds up), 84.9 -> 8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from itertools import compress
from typing import Any, cast

import numpy as np

from .common import (
    MAX_EXTENDER_PRIORITY,
    MAX_NODE_SCORE,
    NEUTRAL_SCORE,
    pinned_appgroup,
    resolve_workload,
    topology_positions,
)
from .plugin import Context, Explanation, ProfileError, Resolved, readonly
from .plugins import PLUGINS, REGISTRY
from .profile import (
    API_VERSIONS,
    BUILTIN_PROFILES,
    DEFAULT_PROFILE,
    PROFILE_ANNOTATION,
    V1,
    V1ALPHA1,
    ParsedProfile,
    Profile,
    choose_profile,
    convert_profile,
    parse_profile,
    profile_to_dict,
    select_profile,
    validate_profile,
)
from .state import ClusterState, PodInfo

__all__ = [
    "API_VERSIONS",
    "BUILTIN_PROFILES",
    "DEFAULT_PROFILE",
    "PROFILE_ANNOTATION",
    "REGISTRY",
    "V1",
    "V1ALPHA1",
    "Diagnosis",
    "FilterOutcome",
    "Profile",
    "ProfileError",
    "ScoreOutcome",
    "choose_profile",
    "convert_profile",
    "explain",
    "parse_profile",
    "profile_to_dict",
    "run_filters",
    "run_scorers",
    "select_profile",
    "to_extender_scores",
    "validate_profile",
]


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


_POD_FIELDS = tuple(f.name for f in fields(PodInfo))


def _pod_key(pod: PodInfo) -> tuple[Any, ...] | None:
    """Every PodInfo field (mappings as sorted items): anything a scorer could read. None when a
    value is unhashable (then nothing is memoized). Kept on the PodInfo itself (it is immutable, and
    the wire interner hands filter and prioritize of one pod the same object), so sorting its labels
    and annotations happens once per pod, not once per call."""
    known = pod.__dict__.get("_memo_key", _UNSET)
    if known is not _UNSET:
        return cast("tuple[Any, ...] | None", known)
    key = _pod_fields_key(pod)
    pod.__dict__["_memo_key"] = key  # frozen: bypass __setattr__; not a field, so eq/hash ignore it
    return key


_UNSET = object()


def _pod_fields_key(pod: PodInfo) -> tuple[Any, ...] | None:
    try:
        key = tuple(tuple(sorted(v.items())) if isinstance(v, Mapping) else v
                    for v in (getattr(pod, name) for name in _POD_FIELDS))
        hash(key)
    except TypeError:
        return None
    return key


# ---------------------------------------------------------------- running

def _known_mask(state: ClusterState, names: tuple[str, ...], positions: np.ndarray) -> np.ndarray:
    known = positions >= 0
    if known.all():
        return known
    nodes, usage = state.nodes, state.usage
    in_state = np.fromiter((n in nodes or n in usage for n in names), dtype=bool, count=len(names))
    return cast(np.ndarray, known | in_state)


def _context(state: ClusterState, pod: PodInfo, candidates: Sequence[str], memo: bool) -> Context:
    names = tuple(map(str, candidates))
    pod_key = _pod_key(pod) if memo else None
    key = (pod_key, names) if pod_key is not None else None
    resolved: Resolved | None = state.score_memo.get(key) if key is not None else None
    if resolved is None:
        ref, ref_notes = resolve_workload(state, pod)
        positions = readonly(topology_positions(state.topology, names))
        resolved = Resolved(names, ref, ref_notes, positions, readonly(_known_mask(state, names, positions)))
        if key is not None:
            state.score_memo.put(key, resolved, size=len(names))
    ctx = Context(state, pod, resolved.candidates, resolved.ref, resolved.positions, list(resolved.ref_notes),
                   resolved.known, resolved if key is not None else None, pod_key)
    if resolved.ref is None:
        ctx.notes.append("pod matches no AppGroup workload: every node passes with neutral scores")
    unknown = ~ctx.known
    if unknown.any():
        listed = ", ".join(np.array(resolved.candidates, dtype=object)[unknown][:10])
        ctx.notes.append(f"{int(unknown.sum())} candidate node(s) unknown to the topology and the cluster: {listed}")
    return ctx


def _remember_survivors(ctx: Context, keep: np.ndarray, passed: tuple[str, ...]) -> None:
    """Prioritize usually comes next with exactly the nodes that passed: give it the subset of this
    context (positions, workload, and every result a plugin remembered with a carry rule: NetworkOverhead
    maps, Algorithm 2's terms, usage rows, bandwidth risk) indexed from the arrays built."""
    resolved = ctx.resolved
    if resolved is None or ctx.pod_key is None:
        return
    sub = Resolved(passed, resolved.ref, resolved.ref_notes, readonly(resolved.positions[keep]),
                   readonly(resolved.known[keep]))
    results = resolved.results
    for key, carry in resolved.carry.copy().items():
        sub.results[key] = carry(results[key], keep)
        sub.carry[key] = carry
    ctx.state.score_memo.put((ctx.pod_key, passed), sub, size=len(passed))


def to_extender_scores(total: np.ndarray) -> np.ndarray:
    """0..100 -> kube-scheduler's 0..MaxExtenderPriority (round half up)."""
    return np.clip(np.floor(np.asarray(total, dtype=np.float64) / 10.0 + 0.5), 0,
                   MAX_EXTENDER_PRIORITY).astype(np.int64)


def _verdicts(ctx: Context, parsed: ParsedProfile) -> tuple[dict[str, str], dict[str, str]]:
    """(failed, unresolvable) node -> reason from the profile's filter plugins, in order (a node keeps
    the first reason). A steering plugin's rejections count only if some node survives them; a node
    unknown to the topology and the cluster is never rejected."""
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    steering: dict[str, str] = {}
    for plugin, args in parsed.filters:
        assert plugin.filter is not None  # validate_profile: a filter entry names a filter plugin
        soft, hard = plugin.filter(ctx, args)
        # hard topology mode (the profile's or the AppGroup's): a real filter
        required = plugin.hard_mode is not None and plugin.hard_mode(ctx, args)
        real = unresolvable if plugin.unresolvable else failed
        if plugin.steering and not required:
            # A steering plugin's first map holds constraints that always count (minZones, zone spread).
            for node, reason in soft.items():
                if node not in failed and node not in unresolvable:
                    real[node] = reason
            soft, target = {}, steering
        else:
            target = real
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
    if failed or unresolvable:
        known = ctx.known
        for i, node in enumerate(ctx.candidates):
            if not known[i]:
                failed.pop(node, None)
                unresolvable.pop(node, None)
    return failed, unresolvable


def run_filters(state: ClusterState, pod: PodInfo, candidates: Sequence[str], profile: Profile, *,
                memo: bool = True) -> FilterOutcome:
    """Apply the profile's filters. Unknown nodes pass (with a note); a pod in no AppGroup passes.

    With ``memo``, memoised per (state, pod, candidates, profile) in ``state.score_memo``, and the
    survivors' context is kept for the prioritize call that follows (docs/scoring.md, "State indexes and the per-state score memo")."""
    parsed = profile.parsed if memo else validate_profile(profile)
    ctx = _context(state, pod, candidates, memo)
    key = ("filter", id(profile))
    hit = ctx.resolved.results.get(key) if ctx.resolved is not None else None
    if hit is not None and hit[0] is profile:
        out: FilterOutcome = hit[1]
        return FilterOutcome(out.passed, dict(out.failed), dict(out.unresolvable), out.workload, out.notes, out.plan)
    failed, unresolvable = _verdicts(ctx, parsed) if ctx.ref is not None else ({}, {})
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
    for i, (plugin, weight, args) in enumerate(parsed.scorers):
        name = plugin.name
        if ctx.ref is None:
            scores = np.full(n, NEUTRAL_SCORE)
        else:
            assert plugin.score is not None  # validate_profile: a score entry names a score plugin
            scores = np.asarray(plugin.score(ctx, args), dtype=np.float64)
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

def _explain_unresolved(state: ClusterState, pod: PodInfo) -> list[str]:
    """Why the pod matches no AppGroup workload (its pin label, its namespace, the selectors)."""
    pin = pinned_appgroup(pod)
    groups = [g for g in state.appgroups if g.namespace == pod.namespace]
    if pin is not None and not any((g.namespace, g.name) == pin for g in state.appgroups):
        return [f"the pod's label names AppGroup {pin[0]}/{pin[1]}, which does not exist"]
    if not groups and pin is None:
        return [f"no AppGroup exists in namespace {pod.namespace}"]
    labels = ", ".join(f"{k}={v}" for k, v in sorted(pod.labels.items())) or "(none)"
    checked = [g for g in state.appgroups if (g.namespace, g.name) == pin] if pin else groups
    problems = []
    for g in checked:
        selectors = "; ".join(
            f"{w.name}: {', '.join(f'{k}={v}' for k, v in w.selector.match_labels.items()) or 'expressions'}"
            for w in g.workloads)
        problems.append(f"pod labels ({labels}) match no workload selector of AppGroup "
                        f"{g.namespace}/{g.name} ({selectors})")
    return problems


def explain(state: ClusterState, pod: PodInfo) -> Diagnosis:
    """Why would this pod's network scores be all-zero or neutral? (served at /api/scheduler/diagnose)

    After resolving the pod's workload, every plugin with an explanation adds its own (in
    ``plugins.PLUGINS`` order; a function shared by several plugins runs once)."""
    podname = f"{pod.namespace}/{pod.name}"
    ref, notes = resolve_workload(state, pod)
    if ref is None:
        return Diagnosis(podname, None, None, tuple(_explain_unresolved(state, pod)), tuple(notes))
    out = Explanation(info=list(notes))
    for fn in dict.fromkeys(p.explain for p in PLUGINS if p.explain is not None):
        fn(state, ref, out)
    return Diagnosis(podname, f"{ref.group.namespace}/{ref.group.name}", ref.workload.name, tuple(out.problems),
                     tuple(out.info))
