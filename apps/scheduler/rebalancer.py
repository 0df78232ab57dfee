"""The rebalancer: moves running pods of AppGroups in ``rebalanceMode: on`` toward the best plan.

One pass (``Rebalancer.run_pass``) per ``REBALANCER_INTERVAL_SECONDS``, in the leader only (a
coordination.k8s.io Lease, ``runtime.LeaderElector``). Level-triggered and idempotent, kopf-style: each
pass reads the AppGroup's drift (the drift computation's ``drift_for``), its pods and its CR's
``status.rebalance`` (where the state lives, so a new leader carries on), decides at most one step and
writes the state back. A step:

* drift at or below ``REBALANCER_DRIFT_THRESHOLD``: Idle (a move in flight is still followed).
* above it for less than ``REBALANCER_SUSTAIN_SECONDS``: Drifting.
* a move in flight (one per AppGroup, so one per workload): wait until its workload is settled (every
  pod bound and Ready, as many as before) and the cluster watcher recorded it — then compare the measured score with the one before the
  move: not better -> Stopped for ``REBALANCER_STOP_SECONDS`` (reported). Not settled within
  ``REBALANCER_READY_TIMEOUT_SECONDS`` -> the workload is Blocked: no more moves for it.
* otherwise the first move of the drift report whose workload is settled and not blocked, within the
  per-AppGroup and cluster-wide rate limits (evictions in the last minute): ``dry-run`` records it,
  ``on`` POSTs an Eviction (policy/v1) — the API server refuses (429) what a PodDisruptionBudget does
  not allow; that is reported and retried after a backoff. The replacement is created by the pod's
  controller and scheduled by netaware, whose plan plugin places it where the plan says.

Every move (dry-run too) is a decision in the decision log (verb ``move``: reason, expected gain,
outcome), an Event on the pod and one on the AppGroup, and an entry of ``status.rebalance.moves``.
Errors are classified (``netaware_core.kube``): retryable ones (409, 429, 5xx, transport) are retried on
a later pass, permanent ones reported in the status.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import orjson
from django.db import close_old_connections

from apps.appgroups.graph import AppGroupSpec, WorkloadSpec
from apps.appgroups.models import AppGroup
from apps.appgroups.selectors import appgroup_spec
from netaware_core import kube, metrics

from . import selectors
from .choices import Verb
from .decisionlog import DecisionLog
from .evaluation.drift import Move

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "netaware.io", "v1alpha1", "appgroups"
EVENT_SOURCE = "netaware-rebalancer"
MAX_MOVES_KEPT = 20
MINUTE = 60.0
MIN_BACKOFF_SECONDS = 10.0
MAX_BACKOFF_SECONDS = 300.0


@dataclass(frozen=True)
class Assessment:
    """What a pass needs of the drift computation: the measured score now, the best plan's, and the
    moves (ordered, single pods) that close the gap; a move's ``pod`` is the bare name (the AppGroup's
    namespace is the pod's)."""

    score: float
    best: float
    moves: tuple[Move, ...]

    @property
    def drift(self) -> float:
        """1 - score / best: 0 when the placement is as good as the best plan."""
        if self.best <= 0:
            return 0.0
        return max(0.0, 1.0 - self.score / self.best)


@dataclass(frozen=True)
class Limits:
    interval: float
    threshold: float
    sustain: float
    appgroup_per_minute: int
    cluster_per_minute: int
    ready_timeout: float
    stop_seconds: float

    @classmethod
    def from_settings(cls) -> Limits:
        conf = selectors.conf
        return cls(interval=float(conf("REBALANCER_INTERVAL_SECONDS")),
                   threshold=float(conf("REBALANCER_DRIFT_THRESHOLD")),
                   sustain=float(conf("REBALANCER_SUSTAIN_SECONDS")),
                   appgroup_per_minute=int(conf("REBALANCER_APPGROUP_MOVES_PER_MINUTE")),
                   cluster_per_minute=int(conf("REBALANCER_CLUSTER_MOVES_PER_MINUTE")),
                   ready_timeout=float(conf("REBALANCER_READY_TIMEOUT_SECONDS")),
                   stop_seconds=float(conf("REBALANCER_STOP_SECONDS")))


@dataclass
class PassReport:
    """What one pass did, per AppGroup ``namespace/name``: its phase and the moves it recorded."""

    phases: dict[str, str] = field(default_factory=dict)
    moves: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _live(pod: dict[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    return not meta.get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


@dataclass(frozen=True)
class WorkloadPods:
    """A workload's live pods: how many, how many bound and Ready (settled = all of them)."""

    total: int
    ready: int

    @property
    def settled(self) -> bool:
        return self.total > 0 and self.ready == self.total


def workload_pods(spec: WorkloadSpec, pods: Sequence[dict[str, Any]]) -> WorkloadPods:
    mine = [p for p in pods if _live(p) and spec.selector.matches((p.get("metadata") or {}).get("labels") or {})]
    ready = sum(1 for p in mine if (p.get("spec") or {}).get("nodeName") and pod_ready(p))
    return WorkloadPods(total=len(mine), ready=ready)


class Rebalancer:
    """One rebalancer process's loop; ``assess`` is the drift computation (``drift.drift_for``)."""

    def __init__(self, *, assess: Callable[[AppGroup], Assessment], decisions: DecisionLog | None = None,
                 limits: Limits | None = None, clock: Callable[[], datetime] = _now) -> None:
        self.assess = assess
        self.decisions = decisions
        self.limits = limits or Limits.from_settings()
        self.clock = clock
        self.stop_event = threading.Event()
        # Backoff after a refusal (429) or a retryable error: AppGroup key -> (retry time, refusals in a row).
        self.backoff: dict[str, tuple[datetime, int]] = {}
        # The state of AppGroups without a CR (none synced yet): kept here instead of in status.rebalance.
        self.local_state: dict[str, dict[str, Any]] = {}

    # --- the loop ------------------------------------------------------------------------------

    def run(self, *, leading: Callable[[], bool] = lambda: True) -> None:
        while not self.stop_event.is_set():
            started = time.monotonic()
            if leading():
                try:
                    self.run_pass()
                except Exception:
                    log.exception("rebalancer pass failed")
                finally:
                    close_old_connections()
            self.stop_event.wait(max(0.0, self.limits.interval - (time.monotonic() - started)))

    def run_pass(self) -> PassReport:
        report = PassReport()
        groups = list(AppGroup.objects.exclude(rebalance_mode="off").prefetch_related(
            "workloads", "dependencies__source", "dependencies__target"))
        states = {f"{g.namespace}/{g.name}": self._state(g) for g in groups}
        metrics.increment("netaware_rebalancer_passes_total")
        for group in groups:
            key = f"{group.namespace}/{group.name}"
            try:
                self._step(group, states, report)
            except Exception as exc:
                report.errors[key] = kube.describe(exc)
                retryable = kube.is_retryable(exc)
                metrics.increment("netaware_rebalancer_errors_total",
                                  {"kind": "retryable" if retryable else "permanent"})
                if retryable:
                    log.info("rebalancer %s: %s (retried next pass)", key, kube.describe(exc))
                else:
                    log.warning("rebalancer %s: %s", key, kube.describe(exc))
        return report

    # --- one AppGroup ------------------------------------------------------------------------------

    def _state(self, group: AppGroup) -> dict[str, Any]:
        key = f"{group.namespace}/{group.name}"
        try:
            cr = kube.get_json(f"/apis/{GROUP}/{VERSION}/namespaces/{quote(group.namespace)}/{PLURAL}/"
                               f"{quote(group.name)}")
        except Exception as exc:
            if kube.status_of(exc) != 404:
                raise
            return dict(self.local_state.get(key) or {}, _cr=None)
        return dict((cr.get("status") or {}).get("rebalance") or {}, _cr=cr)

    def _step(self, group: AppGroup, states: dict[str, dict[str, Any]], report: PassReport) -> None:
        key = f"{group.namespace}/{group.name}"
        state = states[key]
        before = {k: v for k, v in state.items() if k != "_cr"}
        now = self.clock()
        spec = appgroup_spec(appgroup=group)
        assessment = self.assess(group)
        pods = kube.get_json(f"/api/v1/namespaces/{quote(group.namespace)}/pods").get("items") or []
        state["mode"] = group.rebalance_mode
        state["drift"] = round(assessment.drift, 6)
        state["score"] = round(assessment.score, 6)
        state["best"] = round(assessment.best, 6)
        phase, message = self._decide(group, spec, state, assessment, pods, states, now, report)
        state["phase"], state["message"] = phase, message
        report.phases[key] = phase
        after = {k: v for k, v in state.items() if k != "_cr"}
        if after != before or not state.get("updatedAt"):
            state["updatedAt"] = _stamp(now)
            self._write_state(group, state)

    def _decide(self, group: AppGroup, spec: AppGroupSpec, state: dict[str, Any], assessment: Assessment,
                pods: list[dict[str, Any]], states: dict[str, dict[str, Any]], now: datetime,
                report: PassReport) -> tuple[str, str]:
        limits = self.limits
        key = f"{group.namespace}/{group.name}"
        blocked: list[str] = list(state.get("blocked") or [])
        in_flight = state.get("inFlight")
        if in_flight:
            workload = next((w for w in spec.workloads if w.name == in_flight.get("workload")), None)
            counts = workload_pods(workload, pods) if workload is not None else WorkloadPods(0, 0)
            since = _parse(in_flight.get("at")) or now
            if workload is None:
                state.pop("inFlight", None)
            elif not (counts.settled and counts.total >= int(in_flight.get("pods") or 0)):
                if (now - since).total_seconds() <= limits.ready_timeout:
                    return "Moving", (f"waiting for the replacement of {in_flight.get('pod')} ({workload.name}) to be "
                                      f"Ready: {counts.ready}/{max(counts.total, int(in_flight.get('pods') or 0))}")
                blocked = sorted({*blocked, workload.name})
                state["blocked"] = blocked
                state.pop("inFlight", None)
                metrics.increment("netaware_rebalancer_halts_total", {"reason": "not_ready"})
                self._event_on_appgroup(state, reason="RebalanceBlocked", type_="Warning",
                                        message=f"the replacement of {in_flight.get('pod')} ({workload.name}) was not "
                                                f"Ready within {limits.ready_timeout:g} s: no more moves for this "
                                                "workload")
            elif not _recorded(group, workload.name, in_flight):
                return "Moving", (f"the replacement of {in_flight.get('pod')} ({workload.name}) is Ready; waiting for "
                                  "the cluster watcher to record where it runs")
            else:
                state.pop("inFlight", None)
                score_before = float(in_flight.get("scoreBefore") or 0.0)
                if assessment.score <= score_before + 1e-9:
                    state["stoppedAt"] = _stamp(now)
                    message = (f"moving {in_flight.get('pod')} ({workload.name}) did not improve the score "
                               f"({score_before:.4f} -> {assessment.score:.4f}): stopped for "
                               f"{limits.stop_seconds:g} s")
                    metrics.increment("netaware_rebalancer_halts_total", {"reason": "no_improvement"})
                    self._event_on_appgroup(state, reason="RebalanceStopped", type_="Warning", message=message)
                    return "Stopped", message
        # a blocked workload is free again once it settled (its replacement became Ready after all)
        for name in list(blocked):
            workload = next((w for w in spec.workloads if w.name == name), None)
            if workload is None or workload_pods(workload, pods).settled:
                blocked.remove(name)
        if blocked:
            state["blocked"] = blocked
        else:
            state.pop("blocked", None)
        stopped = _parse(state.get("stoppedAt"))
        if stopped is not None:
            if (now - stopped).total_seconds() < limits.stop_seconds:
                return "Stopped", str(state.get("message") or "stopped: a move did not improve the score")
            state.pop("stoppedAt", None)
        if assessment.drift <= limits.threshold or not assessment.moves:
            state.pop("driftSince", None)
            note = f"drift {assessment.drift:.2%} (threshold {limits.threshold:.2%})"
            return ("Blocked", f"{note}; blocked: {', '.join(blocked)}") if blocked else ("Idle", note)
        drifting_since = _parse(state.get("driftSince"))
        if drifting_since is None:
            drifting_since = now
            state["driftSince"] = _stamp(now)
        if (now - drifting_since).total_seconds() < limits.sustain:
            return "Drifting", (f"drift {assessment.drift:.2%} above {limits.threshold:.2%} since "
                                f"{_stamp(drifting_since)}; "
                                f"moves start after {limits.sustain:g} s")
        if group.rebalance_mode == "dry-run":
            return self._dry_run(group, state, assessment, now, report)
        retry_at, refusals = self.backoff.get(key, (now, 0))
        if now < retry_at:
            return "Waiting", str(state.get("message") or "backing off")
        move, why_not = self._next_move(spec, assessment, pods, blocked)
        if move is None:
            return ("Blocked" if blocked else "Waiting"), why_not
        if _recent(state, now) >= limits.appgroup_per_minute:
            return "Waiting", (f"rate limit: {limits.appgroup_per_minute} move(s) a minute for this AppGroup; "
                               f"next: {move.pod} -> {move.to_node}")
        cluster = sum(_recent(s, now) for s in states.values())
        if cluster >= limits.cluster_per_minute:
            return "Waiting", (f"rate limit: {limits.cluster_per_minute} move(s) a minute in the cluster; "
                               f"next: {move.pod} -> {move.to_node}")
        return self._evict(group, spec, state, assessment, move, pods, now, report, refusals)

    def _next_move(self, spec: AppGroupSpec, assessment: Assessment, pods: list[dict[str, Any]],
                   blocked: list[str]) -> tuple[Move | None, str]:
        names = {(p.get("metadata") or {}).get("name") for p in pods if _live(p)}
        why = "no move left"
        for move in assessment.moves:
            workload = next((w for w in spec.workloads if w.name == move.workload), None)
            if workload is None or move.workload in blocked:
                why = f"workload {move.workload} is blocked"
                continue
            if move.pod not in names:
                why = f"pod {move.pod} is gone"
                continue
            counts = workload_pods(workload, pods)
            if not counts.settled:
                why = f"workload {move.workload} has {counts.ready}/{counts.total} pods Ready: waiting"
                continue
            return move, ""
        return None, why

    def _dry_run(self, group: AppGroup, state: dict[str, Any], assessment: Assessment, now: datetime,
                 report: PassReport) -> tuple[str, str]:
        proposed = [_move_entry(m, outcome="dry-run", at=now) for m in assessment.moves]
        known = {(m.get("pod"), m.get("toNode")) for m in state.get("moves") or [] if m.get("outcome") == "dry-run"}
        for move, entry in zip(assessment.moves, proposed, strict=True):
            if (move.pod, move.to_node) in known:
                continue  # already reported for this drift: level-triggered, not once per pass
            self._record(group, move, outcome="dry-run", mode="dry-run", report=report, entry=entry, state=state)
        listing = "; ".join(f"{m.pod} {m.from_node} -> {m.to_node} (+{m.expected_gain:.4f})"
                            for m in assessment.moves[:5])
        return "DryRun", f"drift {assessment.drift:.2%}: would move {len(assessment.moves)} pod(s): {listing}"

    def _evict(self, group: AppGroup, spec: AppGroupSpec, state: dict[str, Any], assessment: Assessment,
               move: Move, pods: list[dict[str, Any]], now: datetime, report: PassReport,
               refusals: int) -> tuple[str, str]:
        key = f"{group.namespace}/{group.name}"
        body = orjson.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                             "metadata": {"name": move.pod, "namespace": group.namespace}})
        path = f"/api/v1/namespaces/{quote(group.namespace)}/pods/{quote(move.pod)}/eviction"
        try:
            kube.post_json(path, body)
        except Exception as exc:
            status = kube.status_of(exc)
            if status == 429:
                delay = min(MAX_BACKOFF_SECONDS, max(MIN_BACKOFF_SECONDS, self.limits.interval) * 2 ** refusals)
                self.backoff[key] = (now + timedelta(seconds=delay), refusals + 1)
                detail = kube.describe(exc)
                causes = (kube.status_body(exc).get("details") or {}).get("causes") or []
                if causes:
                    detail += " (" + "; ".join(str(c.get("message")) for c in causes) + ")"
                self._record(group, move, outcome="refused", mode="on", report=report,
                             entry=_move_entry(move, outcome="refused", at=now), state=state, error=detail,
                             pod_event=("EvictionRefused", "Warning"))
                return "Waiting", f"eviction of {move.pod} refused: {detail}; retry in {delay:g} s"
            if status == 404:
                return "Waiting", f"pod {move.pod} is gone; re-assessing next pass"
            if kube.is_retryable(exc):
                self.backoff[key] = (now + timedelta(seconds=self.limits.interval), refusals)
                return "Waiting", f"evicting {move.pod}: {kube.describe(exc)}; retried next pass"
            raise
        self.backoff.pop(key, None)
        workload = next(w for w in spec.workloads if w.name == move.workload)
        state["inFlight"] = {"pod": move.pod, "workload": move.workload, "toNode": move.to_node, "at": _stamp(now),
                             "scoreBefore": assessment.score, "pods": workload_pods(workload, pods).total}
        self._record(group, move, outcome="evicted", mode="on", report=report,
                     entry=_move_entry(move, outcome="evicted", at=now), state=state,
                     pod_event=("Rebalanced", "Normal"))
        return "Moving", f"evicted {move.pod} ({move.workload}) from {move.from_node} toward {move.to_node}: {move.reason}"

    # --- reporting ------------------------------------------------------------------------------

    def _record(self, group: AppGroup, move: Move, *, outcome: str, mode: str, report: PassReport,
                entry: dict[str, Any], state: dict[str, Any], error: str = "",
                pod_event: tuple[str, str] | None = None) -> None:
        state["moves"] = [entry, *(state.get("moves") or [])][:MAX_MOVES_KEPT]
        metrics.increment("netaware_rebalancer_moves_total", {"outcome": outcome})
        report.moves.append({**entry, "appgroup": f"{group.namespace}/{group.name}"})
        if self.decisions is not None:
            self.decisions.add({
                "verb": Verb.MOVE, "pod_namespace": group.namespace, "pod_name": move.pod,
                "workload": f"{group.namespace}/{group.name}/{move.workload}", "node": move.to_node,
                "candidates": 0, "profile": "", "error": error, "duration_ms": 0.0,
                "result": {"mode": mode, "outcome": outcome, "from_node": move.from_node, "to_node": move.to_node,
                           "expected_gain": move.expected_gain, "reason": move.reason},
            })
        what = (f"{'would move' if outcome == 'dry-run' else 'moving'} {move.pod} ({move.workload}) from "
                f"{move.from_node} to {move.to_node}: {move.reason}; expected gain {move.expected_gain:.4f}")
        if outcome == "refused":
            what = f"eviction of {move.pod} refused: {error}"
        if pod_event is not None:
            _post_event({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": move.pod,
                                                                         "namespace": group.namespace}},
                        reason=pod_event[0], message=what, type_=pod_event[1])
        self._event_on_appgroup(state, reason={"dry-run": "RebalanceProposed", "refused": "EvictionRefused"}.get(
            outcome, "Rebalanced"), message=what, type_="Warning" if outcome == "refused" else "Normal")

    def _event_on_appgroup(self, state: dict[str, Any], *, reason: str, message: str, type_: str) -> None:
        cr = state.get("_cr")
        if cr:
            _post_event(cr, reason=reason, message=message, type_=type_)

    def _write_state(self, group: AppGroup, state: dict[str, Any]) -> None:
        key = f"{group.namespace}/{group.name}"
        rebalance = {k: v for k, v in state.items() if k != "_cr"}
        if state.get("_cr") is None:
            self.local_state[key] = rebalance
            return
        # merge patch of status.rebalance only: the AppGroup sync owns (and keeps) the rest of the status
        patch = {"status": {"rebalance": {**{k: None for k in ("inFlight", "driftSince", "stoppedAt", "blocked")},
                                          **rebalance}}}
        kube.retry(lambda: kube.custom_objects().patch_namespaced_custom_object_status(
            GROUP, VERSION, group.namespace, PLURAL, group.name, patch), attempts=3)


def _recorded(group: AppGroup, workload: str, in_flight: dict[str, Any]) -> bool:
    """The placements the drift computation reads show the move done: the evicted pod gone, as many of
    the workload's pods placed as before (else a score read too early would look like no improvement)."""
    placed = selectors.placed_pods(appgroup=group)
    if any(p.pod == f"{group.namespace}/{in_flight.get('pod')}" for p in placed):
        return False
    return sum(1 for p in placed if p.workload == workload) >= int(in_flight.get("pods") or 0)


def _recent(state: dict[str, Any], now: datetime) -> int:
    """Evictions of this AppGroup in the last minute (from its status: a new leader keeps the limits)."""
    count = 0
    for move in state.get("moves") or []:
        at = _parse(move.get("at"))
        if move.get("outcome") == "evicted" and at is not None and (now - at).total_seconds() < MINUTE:
            count += 1
    return count


def _move_entry(move: Move, *, outcome: str, at: datetime) -> dict[str, Any]:
    return {"pod": move.pod, "workload": move.workload, "fromNode": move.from_node, "toNode": move.to_node,
            "expectedGain": round(float(move.expected_gain), 6), "reason": move.reason[:512], "outcome": outcome,
            "at": _stamp(at)}


def _post_event(obj: dict[str, Any], *, reason: str, message: str, type_: str) -> None:
    """A core/v1 Event on ``obj``; never fatal (the status and the decision log carry the same)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    now = _stamp(_now())
    digest = hashlib.sha256(f"{meta.get('name')}|{reason}|{message}|{now}".encode()).hexdigest()[:12]
    body = {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{str(meta.get('name'))[:200]}.{digest}", "namespace": namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta.get("name"),
                               "namespace": namespace, "uid": meta.get("uid")},
            "reason": reason, "message": message[:1024], "type": type_,
            "source": {"component": EVENT_SOURCE}, "reportingComponent": EVENT_SOURCE,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1}
    try:
        kube.post_json(f"/api/v1/namespaces/{quote(namespace)}/events", orjson.dumps(body))
    except Exception as exc:
        log.warning("could not post event %s on %s/%s: %s", reason, namespace, meta.get("name"), kube.describe(exc))


def assess_appgroup(group: AppGroup) -> Assessment:
    """The drift computation's report on ``group`` now (``selectors.drift_for``), as a pass reads it."""
    report = selectors.drift_for(appgroup=group)
    score = float(report.current_score)
    best = float(report.best_score)
    if score != score or best != best:  # NaN: nothing placed to score
        return Assessment(score=0.0, best=0.0, moves=())
    moves = tuple(replace(m, pod=m.pod.rpartition("/")[2], expected_gain=float(m.expected_gain))
                  for m in report.moves)
    return Assessment(score=score, best=best, moves=moves)
