"""Writes and the extender's verbs: filter, prioritize, bind, preempt, the decision log, profiles.

Every handler takes the raw request body and returns the response bytes; parsing errors raise
``wire.WireError`` and everything else is caught at the view edge, so kube-scheduler always gets a
200 with a reason. Filter and prioritize score against the process's scheduling cache
(``runtime.py``) and never wait on Postgres, Redis or the Kubernetes API; bind waits on the
Kubernetes API only, within BIND_DEADLINE_SECONDS. Scoring itself is the framework-free engine
(``apps.scheduler.scoring``).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

import numpy as np
from django.db import transaction
from django.utils import timezone

from apps.appgroups.models import AppGroup, Placement
from apps.appgroups.selectors import appgroup_spec, appgroups_with_graph
from apps.scheduler.scoring.state import ClusterState, NodeResources, PodInfo, evolve
from apps.topology.selectors import current_snapshot

from . import decisionlog, metrics, selectors, wire
from .cache import CacheView
from .choices import Verb
from .evaluation.drift import DriftReport, assess_drift
from .models import Decision, DriftAssessment, ObservedPod, SchedulerProfile
from .runtime import ExtenderRuntime, notify_change, process_runtime
from .scoring import engine
from .selectors import conf

log = logging.getLogger(__name__)

NEUTRAL_EXTENDER_SCORE = 5  # NEUTRAL_SCORE 50 on 0..100 -> 5 on kube-scheduler's 0..10
_T = TypeVar("_T")


# === decision log ==============================================================================


def log_decision(
    *,
    verb: str,
    pod: PodInfo | None,
    started: float,
    profile: str = "",
    workload: str = "",
    node: str = "",
    candidates: int = 0,
    result: Mapping[str, Any] | None = None,
    breakdown: Mapping[str, Any] | None = None,
    error: str = "",
) -> None:
    """Record one decision: appended in O(1); encoded and shipped by the decision log's thread."""
    if not conf("DECISION_LOG"):
        return
    process_runtime().decisions.add(decisionlog.new_record(
        verb=verb, pod_namespace=pod.namespace if pod else "", pod_name=pod.name if pod else "",
        pod_uid=pod.uid if pod else "", profile=profile, workload=workload, node=node, candidates=candidates,
        result=result, breakdown=breakdown, error=error, duration_ms=(time.perf_counter() - started) * 1000.0))


def log_bad_request(*, verb: str, error: str, started: float) -> None:
    try:
        log_decision(verb=verb, pod=None, started=started, error=error)
    except Exception:
        log.exception("could not log a bad %s request", verb)


def drain_decisions(*, limit: int = 5000) -> int:
    """Move queued decisions from Redis into Postgres (batched, idempotent) and prune."""
    return decisionlog.drain(redis_client=selectors.redis_client(), limit=limit,
                             retention=int(conf("DECISION_RETENTION")),
                             lock_seconds=float(conf("DECISION_DRAIN_LOCK_SECONDS")))


def prune_decisions(*, keep: int) -> int:
    return decisionlog.prune(keep=keep)


# === request context ============================================================================


class _Context:
    """What one filter/prioritize/preempt call scores against: the cache's view (plus the request's
    Node objects in Nodes mode), the pod's profile and the notes the decision log carries."""

    __slots__ = ("args", "notes", "profile", "profile_name", "stale", "state", "unavailable", "view")

    def __init__(self, rt: ExtenderRuntime, pod: PodInfo, nodes: Sequence[wire.NodeObject] | None) -> None:
        view = rt.view()
        serving, why = rt.serving()
        self.view: CacheView = view
        self.unavailable = "" if serving else why  # the handler sets the "degraded" outcome (its thread)
        now = time.monotonic()
        self.stale = view.stale_notes(now)
        if view.state.topology.stale_reason:
            self.stale = (*self.stale, f"topology: {view.state.topology.stale_reason}")
        if waiting := rt.loader.waiting_note(now):
            self.stale = (*self.stale, waiting)
        self.state: ClusterState = view.state if nodes is None else _with_node_objects(view.state, nodes)
        self.notes: list[str] = []
        self.profile_name, self.profile, note = engine.choose_profile(pod, view.profiles, view.default_profile)
        if note:
            self.notes.append(note)

    def result(self, **values: Any) -> dict[str, Any]:
        out = dict(values)
        notes = [*self.notes, *values.get("notes", ())]
        if notes:
            out["notes"] = notes
        if self.stale:
            out["stale"] = list(self.stale)
        return out


def _with_node_objects(state: ClusterState, objects: Sequence[wire.NodeObject]) -> ClusterState:
    """Nodes mode: labels, zone and allocatable come from kube-scheduler's objects, what is already
    requested on them from the cache."""
    nodes: dict[str, NodeResources] = dict(state.nodes)
    changed = []
    for obj in objects:
        merged = obj.resources
        cached = nodes.get(merged.name)
        if cached is not None:
            merged = replace(merged, requested_cpu_millicores=cached.requested_cpu_millicores,
                             requested_memory_bytes=cached.requested_memory_bytes, pod_count=cached.pod_count,
                             zone=merged.zone or cached.zone, region=merged.region or cached.region)
            if merged == cached:
                continue
        nodes[merged.name] = merged
        changed.append(merged.name)
    if not changed:
        return state
    return evolve(state, changed_nodes=changed, nodes=nodes)


def _workload_label(value: Any) -> str:
    if not value:
        return ""
    if isinstance(value, tuple | list):
        return "/".join(str(v) for v in value)
    return str(value)


def _placed_in_group(state: ClusterState, workload: Any) -> int:
    """Pods of the AppGroup placed in the state this answer was computed from (decision log: which
    binds a decision saw)."""
    if not workload:
        return 0
    group = workload[0]
    for spec in state.appgroups:  # a few AppGroups; the placements can hold thousands of workloads
        if f"{spec.namespace}/{spec.name}" == group:
            placements = state.placements
            return sum(len(placements.get((spec.namespace, spec.name, w.name), ())) for w in spec.workloads)
    return sum(len(nodes) for (ns, name, _), nodes in state.placements.items() if f"{ns}/{name}" == group)


def _memo() -> bool:
    return bool(conf("ENGINE_MEMO"))


# === the deadline of filter and prioritize =======================================================

DEADLINE_REASON = "netaware: deadline exceeded, not evaluated"
# Up to this many candidates are evaluated on the request thread (milliseconds); more go to the
# runtime's pool, where the answer stops waiting for them at the deadline.
GUARDED_CANDIDATES = 2000
PARSE_SHARE = 0.4  # of EXTENDER_DEADLINE_SECONDS, for parsing Node objects (the rest evaluates them)
ANSWER_SHARE = 0.35  # kept back to build the answer (while a given-up evaluation still runs)


def _parse_until(started: float) -> float:
    return started + PARSE_SHARE * float(conf("EXTENDER_DEADLINE_SECONDS"))


def _within(rt: ExtenderRuntime, started: float, count: int, work: Callable[[], _T]) -> _T | None:
    """``work()``, or None when it would end past the deadline: big requests run on the runtime's
    pool and are given up at the deadline (the pool thread finishes and its result is dropped)."""
    if count <= GUARDED_CANDIDATES:
        return work()
    budget = float(conf("EXTENDER_DEADLINE_SECONDS"))
    future = rt.overtime.submit(work)
    try:
        return future.result(timeout=max(0.0, started + (1 - ANSWER_SHARE) * budget - time.perf_counter()))
    except FutureTimeout:
        future.cancel()
        return None


def _late_error(*, evaluated: int, total: int) -> str:
    return (f"deadline of {float(conf('EXTENDER_DEADLINE_SECONDS')):g} s exceeded: {evaluated} of {total} nodes "
            "evaluated in time (send node names only, nodeCacheCapable: true, for large clusters)")


# === filter =====================================================================================


def handle_filter(body: bytes, started: float) -> bytes:
    """Nodes not evaluated within EXTENDER_DEADLINE_SECONDS (unparsed, or the whole request when
    evaluating would end past it) fail with DEADLINE_REASON: kube-scheduler places the pod only on
    nodes this extender checked, and a failed node (not unresolvable) stays open to preemption."""
    rt = process_runtime()
    args = wire.parse_extender_args(body, rt.wire, parse_until=_parse_until(started))
    candidates = args.candidates
    late = dict.fromkeys(args.unparsed, DEADLINE_REASON)
    total = len(candidates) + len(late)

    def evaluate() -> tuple[_Context, engine.FilterOutcome | None]:
        ctx = _Context(rt, args.pod, args.nodes)
        if ctx.unavailable:
            return ctx, None
        return ctx, engine.run_filters(ctx.state, args.pod, list(candidates), ctx.profile, memo=_memo())

    done = _within(rt, started, len(candidates), evaluate)
    if done is None:
        metrics.set_outcome("deadline")
        late.update(dict.fromkeys(candidates, DEADLINE_REASON))
        log_decision(verb=Verb.FILTER, pod=args.pod, started=started, candidates=total,
                     result={"passed": 0, "failed": total, "not_evaluated": total},
                     error=_late_error(evaluated=0, total=total))
        return wire.filter_result(args=args, passed=[], failed=late, unresolvable={})
    ctx, outcome = done
    if late:
        metrics.set_outcome("deadline")
    if outcome is None:
        metrics.set_outcome("degraded")
        log_decision(verb=Verb.FILTER, pod=args.pod, started=started, candidates=total,
                     result=ctx.result(passed=len(candidates),
                                       **({"failed": len(late), "not_evaluated": len(late)} if late else {})),
                     error=f"degraded, every node passes: {ctx.unavailable}")
        return wire.filter_result(args=args, passed=candidates, failed=late, unresolvable={})
    failed = {**outcome.failed, **late}
    unresolvable = dict(outcome.unresolvable)
    passed = list(outcome.passed)
    log_decision(
        verb=Verb.FILTER, pod=args.pod, started=started, profile=ctx.profile_name,
        workload=_workload_label(outcome.workload), candidates=total,
        result=ctx.result(passed=len(passed), failed=len(failed), unresolvable=len(unresolvable),
                          notes=outcome.notes, **({"plan": dict(outcome.plan)} if outcome.plan else {}),
                          **({"not_evaluated": len(late)} if late else {})),
        breakdown={"reasons": {**failed, **unresolvable}},
        error=_late_error(evaluated=len(candidates), total=total) if late else "",
    )
    return wire.filter_result(args=args, passed=passed, failed=failed, unresolvable=unresolvable)


# === prioritize =================================================================================


def handle_prioritize(body: bytes, started: float) -> bytes:
    """Nodes not evaluated within EXTENDER_DEADLINE_SECONDS get the neutral score (no opinion)."""
    rt = process_runtime()
    args = wire.parse_extender_args(body, rt.wire, parse_until=_parse_until(started))
    candidates = list(args.candidates)
    late = list(args.unparsed)
    total = len(candidates) + len(late)

    def evaluate() -> tuple[_Context, engine.ScoreOutcome | None]:
        ctx = _Context(rt, args.pod, args.nodes)
        if ctx.unavailable:
            return ctx, None
        return ctx, engine.run_scorers(ctx.state, args.pod, candidates, ctx.profile, memo=_memo())

    done = _within(rt, started, len(candidates), evaluate)
    if done is None:
        metrics.set_outcome("deadline")
        log_decision(verb=Verb.PRIORITIZE, pod=args.pod, started=started, candidates=total,
                     result={"neutral": True, "not_evaluated": total}, error=_late_error(evaluated=0, total=total))
        return wire.bulk_prioritize_result(candidates + late, [NEUTRAL_EXTENDER_SCORE] * total)
    ctx, outcome = done
    if late:
        metrics.set_outcome("deadline")
    if outcome is None:
        metrics.set_outcome("degraded")
        log_decision(verb=Verb.PRIORITIZE, pod=args.pod, started=started, candidates=total,
                     result=ctx.result(neutral=True), error=f"degraded, neutral scores: {ctx.unavailable}")
        return wire.prioritize_result(candidates + late, [NEUTRAL_EXTENDER_SCORE] * total, rt.wire)
    extender = np.asarray(outcome.extender, dtype=np.int64)
    np.clip(extender, 0, 10, out=extender)
    nodes = list(outcome.nodes)
    best = nodes[int(np.argmax(outcome.total))] if nodes else ""
    log_decision(
        verb=Verb.PRIORITIZE, pod=args.pod, started=started, profile=ctx.profile_name,
        workload=_workload_label(outcome.workload), node=best, candidates=total,
        result=ctx.result(best=best, notes=outcome.notes, placed=_placed_in_group(ctx.state, outcome.workload),
                          **({"not_evaluated": len(late)} if late else {})),
        breakdown={
            "nodes": nodes,
            "total": np.round(outcome.total, 2),
            "extender": extender,
            "scorers": {name: np.round(arr, 2) for name, arr in outcome.breakdown.items()},
        },
        error=_late_error(evaluated=len(candidates), total=total) if late else "",
    )
    scores = extender.tolist() + [NEUTRAL_EXTENDER_SCORE] * len(late)
    if total > GUARDED_CANDIDATES:
        return wire.bulk_prioritize_result(nodes + late, scores)
    return wire.prioritize_result(nodes + late, scores, rt.wire)


# === bind =======================================================================================


def handle_bind(body: bytes, started: float) -> bytes:
    """Bind a pod that is ours (spec.schedulerName, UID, not bound yet) to a known Ready node, within
    BIND_DEADLINE_SECONDS whatever the Kubernetes API does; the next filter already sees it."""
    binding = wire.parse_binding_args(body)
    pod = PodInfo(namespace=binding.pod_namespace, name=binding.pod_name, uid=binding.pod_uid)
    rt = process_runtime()
    serving, why = rt.serving()
    if not serving and rt.elector is not None and not rt.elector.leading:
        error, outcome = f"bind refused: {why}", "refused"
    else:
        deadline = time.monotonic() + float(conf("BIND_DEADLINE_SECONDS"))
        error, outcome = rt.bind(namespace=binding.pod_namespace, name=binding.pod_name, uid=binding.pod_uid,
                                 node=binding.node, deadline=deadline)
    metrics.count_bind(outcome)
    if error:
        metrics.set_outcome("error")
        log.warning("bind %s/%s to %s: %s", pod.namespace, pod.name, binding.node, error)
    # "unknown": the Binding went out unanswered; a later record (result.settles) says how it ended.
    log_decision(verb=Verb.BIND, pod=pod, started=started, node=binding.node, candidates=1,
                 result={"bound": None if outcome == "unknown" else not error, "outcome": outcome}, error=error)
    return wire.binding_result(error)


# === preempt ====================================================================================


def handle_preempt(body: bytes, started: float) -> bytes:
    args = wire.parse_preemption_args(body)
    ctx = _Context(process_runtime(), args.pod, None)
    nodes = list(args.victims)
    if ctx.unavailable:
        metrics.set_outcome("degraded")
        log_decision(verb=Verb.PREEMPT, pod=args.pod, started=started, candidates=len(nodes),
                     result=ctx.result(kept=nodes), error=f"degraded, victims passed through: {ctx.unavailable}")
        return wire.preemption_result(args.victims)
    outcome = engine.run_filters(ctx.state, args.pod, nodes, ctx.profile, memo=_memo())
    # Evicting pods frees resources; it cannot fix a network constraint. Keep only nodes where our
    # filters accept the preemptor, or reject it for a reason preemption can resolve.
    dropped = dict(outcome.unresolvable)
    kept = {n: v for n, v in args.victims.items() if n not in dropped}
    log_decision(
        verb=Verb.PREEMPT, pod=args.pod, started=started, profile=ctx.profile_name, candidates=len(nodes),
        workload=_workload_label(outcome.workload),
        result=ctx.result(kept=sorted(kept), dropped=dropped, failed=dict(outcome.failed)),
    )
    return wire.preemption_result(kept)


# === profiles ===================================================================================


@transaction.atomic
def save_profile(*, profile: SchedulerProfile) -> SchedulerProfile:
    """Validate and save; making a profile the default unsets the previous default."""
    if profile.is_default:
        SchedulerProfile.objects.filter(is_default=True).exclude(pk=profile.pk).update(is_default=False)
    profile.full_clean()
    profile.save()
    notify_change("profiles")
    return profile


def delete_profile(*, profile: SchedulerProfile) -> None:
    profile.delete()
    notify_change("profiles")


# === pod cache (cluster watcher) ================================================================


def upsert_observed_pod(*, obj: Mapping[str, Any]) -> tuple[ObservedPod | None, bool]:
    """Store one v1.Pod (JSON) in the pod cache. Returns (row, changed); row is None for a nameless
    object. Status churn that changes nothing the scheduler reads (conditions, container states,
    resourceVersion alone) is not written, so it does not invalidate every extender's state."""
    meta = wire.get_ci(obj, "metadata") or {}
    status = wire.get_ci(obj, "status") or {}
    name = wire.get_ci(meta, "name")
    if not name:
        return None, False
    info = wire.parse_pod(obj, "pod")
    phase = wire.get_ci(status, "phase") or ""
    terminal = phase in ("Succeeded", "Failed") or bool(wire.get_ci(meta, "deletionTimestamp"))
    fields = {
        "uid": info.uid,
        "node_name": wire.pod_node_name(obj),
        "phase": phase,
        "terminal": terminal,
        "labels": dict(info.labels),
        "annotations": dict(info.annotations),
        "cpu_request_millicores": info.cpu_request_millicores,
        "memory_request_bytes": info.memory_request_bytes,
    }
    row = ObservedPod.objects.filter(namespace=info.namespace, name=info.name).first()
    if row is not None and all(getattr(row, key) == value for key, value in fields.items()):
        return row, False
    if row is None:
        row = ObservedPod(namespace=info.namespace, name=info.name)
    for key, value in fields.items():
        setattr(row, key, value)
    row.resource_version = str(wire.get_ci(meta, "resourceVersion") or "")
    row.save()
    return row, True


def delete_observed_pod(*, namespace: str, name: str) -> int:
    deleted, _ = ObservedPod.objects.filter(namespace=namespace, name=name).delete()
    return deleted


def decision_breakdown_by_node(decision: Decision) -> dict[str, dict[str, Any]]:
    """The column-oriented breakdown turned node → {scorer: score, total, extender, reason}."""
    data = decision.breakdown_data
    nodes = data.get("nodes") or []
    out: dict[str, dict[str, Any]] = {}
    scorers = data.get("scorers") or {}
    total = data.get("total") or []
    extender = data.get("extender") or []
    for i, node in enumerate(nodes):
        entry: dict[str, Any] = {name: values[i] for name, values in scorers.items() if i < len(values)}
        if i < len(total):
            entry["total"] = total[i]
        if i < len(extender):
            entry["extender"] = extender[i]
        out[node] = entry
    for node, reason in (data.get("reasons") or {}).items():
        out.setdefault(node, {})["reason"] = reason
    return out




# === drift (issue 25) ==========================================================================


def record_drift(*, appgroup: AppGroup, report: DriftReport, computed_at: datetime,
                 topology_version: int | None, elapsed_ms: float = 0.0, inputs_hash: str = "") -> DriftAssessment:
    """Store ``report`` as the AppGroup's latest drift (one row per AppGroup, replaced)."""
    assessment, _ = DriftAssessment.objects.update_or_create(appgroup=appgroup, defaults={
        **DriftAssessment.fields_of(report), "computed_at": computed_at, "topology_version": topology_version,
        "elapsed_ms": elapsed_ms, "inputs_hash": inputs_hash})
    return assessment


def assess_all_drift(*, now: datetime | None = None) -> int:
    """The drift of every AppGroup with pods placed, on one state of the cluster (the current topology);
    AppGroups without pods lose a stored assessment. One whose inputs (topology version, spec, pods) are
    those of its stored assessment, younger than ``DriftAssessment.REFRESH_SECONDS``, is left as it is.
    Returns how many were assessed. An AppGroup whose assessment fails is logged and skipped: the others
    are still assessed."""
    now = now or timezone.now()
    state = selectors.build_cluster_state(now=now)
    snapshot = current_snapshot()
    version = snapshot.version if snapshot is not None else None
    placed = set(Placement.objects.values_list("appgroup_id", flat=True).distinct())
    DriftAssessment.objects.exclude(appgroup_id__in=placed).delete()
    stored = {row.appgroup_id: row for row in DriftAssessment.objects.only("appgroup_id", "inputs_hash", "computed_at")}
    fresh_after = now - timedelta(seconds=DriftAssessment.REFRESH_SECONDS)
    done = 0
    for appgroup in appgroups_with_graph().filter(pk__in=placed).order_by("namespace", "name"):
        started = time.perf_counter()
        pods = selectors.placed_pods(appgroup=appgroup)
        spec = appgroup_spec(appgroup=appgroup)
        inputs = hashlib.sha256(repr((version, spec, sorted((p.pod, p.workload, p.node) for p in pods))).encode()
                                ).hexdigest()
        known = stored.get(appgroup.pk)
        if known is not None and known.inputs_hash == inputs and known.computed_at > fresh_after:
            continue
        try:
            report = assess_drift(state=state, group=spec, pods=pods)
        except Exception:
            log.exception("drift of AppGroup %s/%s could not be assessed", appgroup.namespace, appgroup.name)
            continue
        record_drift(appgroup=appgroup, report=report, computed_at=now, topology_version=version,
                     elapsed_ms=(time.perf_counter() - started) * 1e3, inputs_hash=inputs)
        done += 1
    return done
