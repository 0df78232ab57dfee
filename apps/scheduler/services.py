"""Writes and the extender's verbs: filter, prioritize, bind, preempt, the decision log, profiles.

Every handler takes the raw request body and returns the response bytes; parsing errors raise
``wire.WireError`` and everything else is caught at the view edge, so kube-scheduler always gets a
200 with a reason. Scoring itself is the framework-free engine (``apps.scheduler.scoring``).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import orjson
from django.db import DatabaseError, InterfaceError, connection, transaction
from django.utils import timezone

from apps.scheduler.scoring.state import ClusterState, NodeResources, PodInfo

from . import selectors, wire
from .choices import Verb
from .models import Decision, ObservedPod, SchedulerProfile

log = logging.getLogger(__name__)

NEUTRAL_EXTENDER_SCORE = 5  # NEUTRAL_SCORE 50 on 0..100 → 5 on kube-scheduler's 0..10


def _conf(name: str, default: Any) -> Any:
    return selectors.conf(name, default)


# === decision log ==============================================================================
# kube-scheduler calls filter and prioritize serially, so anything a worker does after answering
# delays the next pod: with a serial client the next request is already waiting while the worker
# finishes the previous one. On the request path a decision is therefore only a dict appended to a
# list (O(1)); a small background thread per process encodes it (orjson + zlib; zlib runs without
# the GIL) while the worker waits for its next request, and the encoded blobs ride to a Redis list
# with the next state-version read (one pipelined round trip, at most every
# STATE_VERSION_CHECK_SECONDS) or are pushed by that thread once DECISION_OUTBOX_MAX_AGE passes.
# The Postgres INSERTs (batched) and the retention prune happen in ``drain_decisions``, run by a
# Celery beat task every few seconds and by the decisions API before it reads. Without Redis the
# records go straight to Postgres; without Postgres they wait (bounded) in Redis or in-process.
# With DECISION_QUEUE off each decision is written to Postgres right after its response.

DECISION_QUEUE_KEY = selectors.DECISION_QUEUE_KEY
_HEADER = struct.Struct("!I")
_DECISION_FIELDS = ("verb", "pod_namespace", "pod_name", "pod_uid", "profile", "workload", "node", "candidates",
                    "result", "error", "duration_ms")
_JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def _encode_breakdown(breakdown: Mapping[str, Any]) -> bytes:
    # zlib level 1 before Postgres sees it: far cheaper than jsonb parsing or TOAST's pglz.
    return zlib.compress(orjson.dumps(breakdown, option=_JSON_OPTIONS), 1)


def _encode_record(record: Mapping[str, Any]) -> bytes:
    header = orjson.dumps({k: v for k, v in record.items() if k != "breakdown"}, option=_JSON_OPTIONS)
    breakdown = record.get("breakdown")
    return _HEADER.pack(len(header)) + header + (_encode_breakdown(breakdown) if breakdown else b"")


def _decode_record(blob: bytes) -> Decision:
    (size,) = _HEADER.unpack_from(blob)
    header = orjson.loads(blob[_HEADER.size : _HEADER.size + size])
    return Decision(
        ts=datetime.fromisoformat(header["ts"]),
        breakdown=blob[_HEADER.size + size :],
        **{k: header[k] for k in _DECISION_FIELDS if k in header},
    )


class _DecisionLog:
    """``current``: records of the request being answered (its duration is stamped at the end);
    ``pending``: records of answered requests, not yet encoded; ``outbox``: encoded records
    waiting for Redis.

    The outbox rides along with the next state-version read (``selectors.snapshot_and_ship``);
    the background thread polls
    every POLL_SECONDS, encodes pending records one at a time and pushes an outbox older than
    DECISION_OUTBOX_MAX_AGE seconds (an idle process)."""

    POLL_SECONDS = 0.05  # how often the background thread looks for records to encode

    @property
    def max_age(self) -> float:
        return float(_conf("DECISION_OUTBOX_MAX_AGE", 1.0))

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # Held while records move from ``pending`` to ``outbox``, so the outbox keeps their order
        # whichever thread encodes them.
        self.encode_lock = threading.Lock()
        self.local = threading.local()  # .current: records of the request this thread is answering
        self.pending: list[dict[str, Any]] = []
        self.outbox: list[bytes] = []
        self.outbox_since = 0.0
        self.since_prune = 0
        self.dropped = 0
        self.thread: threading.Thread | None = None
        self.thread_pid = 0

    def add(self, record: dict[str, Any], *, flush_now: bool = False) -> None:
        if not flush_now:
            self.current.append(record)
            return
        with self.lock:
            self.pending.append(record)
        if flush_now:
            self.ship(direct=True)

    @property
    def current(self) -> list[dict[str, Any]]:
        records = getattr(self.local, "current", None)
        if records is None:
            records = self.local.current = []
        return records

    def finish_request(self, duration_ms: float | None = None) -> None:
        """The request's records are complete: stamp the last one's duration, queue them."""
        records = self.current
        if not records:
            return
        if duration_ms is not None:
            records[-1]["duration_ms"] = duration_ms
        with self.lock:
            self.pending += records
        self.local.current = []

    def encode_pending(self) -> None:
        with self.encode_lock:
            with self.lock:
                batch, self.pending = self.pending, []
            if not batch:
                return
            blobs = [_encode_record(r) for r in batch]
            if not _conf("DECISION_QUEUE", True):
                if not self.write(blobs):
                    self.keep(blobs)
                return
            self.keep(blobs)

    def encode_one(self) -> bool:
        """Encode the oldest pending record (background thread); False when none is left."""
        with self.encode_lock:
            with self.lock:
                if not self.pending:
                    return False
                record = self.pending.pop(0)
            blob = _encode_record(record)
            self.keep([blob])
        return True

    def keep(self, blobs: list[bytes], *, front: bool = False) -> None:
        with self.lock:
            if not self.outbox:
                self.outbox_since = time.monotonic()
            self.outbox = blobs + self.outbox if front else self.outbox + blobs
            limit = int(_conf("DECISION_BUFFER_MAX", 5000))
            if len(self.outbox) > limit:  # Redis and Postgres both away for long: keep the newest
                drop = len(self.outbox) - limit
                del self.outbox[:drop]
                self.dropped += drop

    def take_outbox(self) -> list[bytes]:
        with self.lock:
            blobs, self.outbox = self.outbox, []
        return blobs

    def ship(self, *, direct: bool = False) -> int:
        """Encode pending records and hand the outbox to Redis (or, with ``direct``/no Redis, to
        Postgres); returns how many records left the process."""
        self.encode_pending()
        blobs = self.take_outbox()
        if not blobs:
            return 0
        if not direct and _conf("DECISION_QUEUE", True):
            try:
                self.push(blobs)
                return len(blobs)
            except Exception as exc:
                log.warning("decision log: Redis unavailable (%s), writing to the database", exc)
        if self.write(blobs):
            return len(blobs)
        self.keep(blobs, front=True)
        return 0

    @staticmethod
    def push(blobs: list[bytes]) -> None:
        pipe = selectors.redis_client().pipeline(transaction=False)
        pipe.rpush(DECISION_QUEUE_KEY, *blobs)
        pipe.ltrim(DECISION_QUEUE_KEY, -int(_conf("DECISION_QUEUE_MAX", 20000)), -1)
        pipe.execute()

    def write(self, blobs: Sequence[bytes]) -> bool:
        try:
            Decision.objects.bulk_create([_decode_record(b) for b in blobs])
        except (DatabaseError, InterfaceError) as exc:
            log.warning("decision log: %d decisions wait, database unavailable: %s", len(blobs), exc)
            _close_broken_connection()
            return False
        self.since_prune += len(blobs)
        keep = int(_conf("DECISION_RETENTION", 10000))
        if self.since_prune >= max(1, keep // 20):
            self.since_prune = 0
            try:
                prune_decisions(keep=keep)
            except (DatabaseError, InterfaceError) as exc:
                log.warning("decision log prune failed: %s", exc)
                _close_broken_connection()
        return True

    def ensure_thread(self) -> None:
        # gunicorn forks workers after the app may have started a thread in the master: check the pid.
        if self.thread is not None and self.thread_pid == os.getpid() and self.thread.is_alive():
            return
        with self.lock:
            if self.thread is None or self.thread_pid != os.getpid() or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._background, name="decision-log", daemon=True)
                self.thread_pid = os.getpid()
                self.thread.start()

    def _background(self) -> None:
        while True:
            time.sleep(self.POLL_SECONDS)
            try:
                # One record at a time: the GIL is held only for one orjson call (~30 µs), so a
                # request arriving meanwhile hardly waits; zlib runs without the GIL.
                while self.encode_one():
                    pass
            except Exception:
                log.exception("decision log: encoding failed")
            with self.lock:
                stale = bool(self.outbox) and time.monotonic() - self.outbox_since >= self.max_age
            if not stale:
                continue
            blobs = self.take_outbox()
            try:
                self.push(blobs)
            except Exception:  # Redis away: the next request (or its fallback) takes them
                self.keep(blobs, front=True)


_decisions = _DecisionLog()
atexit.register(
    lambda: (_decisions.finish_request(), _decisions.ship())
    if _decisions.current or _decisions.pending or _decisions.outbox else None
)


def _close_broken_connection() -> None:
    with contextlib.suppress(Exception):
        connection.close_if_unusable_or_obsolete()


def stamp_duration(started: float) -> None:
    """Set the request's last decision's duration to the whole server-side handling time (parse,
    score, serialize), measured by the view just before the response leaves."""
    _decisions.finish_request((time.perf_counter() - started) * 1000.0)


def after_response() -> None:
    """Called once a response has been written (never raises). With the Redis queue: wake the
    background encoder (O(1)); without it: write the decision to Postgres now."""
    try:
        _decisions.finish_request()
        if not _conf("DECISION_QUEUE", True):
            if _decisions.pending:
                _decisions.encode_pending()
        elif _decisions.pending:
            _decisions.ensure_thread()  # it polls: waking it per request would cost a GIL handoff
        if _decisions.outbox and time.monotonic() - _decisions.outbox_since >= 2 * _decisions.max_age:
            _decisions.ship()  # nothing carried them for a while (Redis was down): send or write now
    except Exception:
        log.exception("decision log: shipping failed")


def current_snapshot() -> selectors.Snapshot:
    """The state for this request. When the state version is read from Redis (at most every
    STATE_VERSION_CHECK_SECONDS), earlier requests' decisions ride along in the same round trip."""
    if not _conf("DECISION_QUEUE", True) or not selectors.version_check_due():
        return selectors.snapshot()
    blobs = _decisions.take_outbox()  # only what the background thread has encoded: no work here
    if not blobs:
        return selectors.snapshot()
    snap, shipped = selectors.snapshot_and_ship(blobs)
    if not shipped:
        _decisions.keep(blobs, front=True)
    return snap


def drain_decisions(*, limit: int = 5000) -> int:
    """Move queued decisions from Redis into Postgres (batched) and prune; returns how many."""
    moved = 0
    client = selectors.redis_client()
    while True:
        pipe = client.pipeline(transaction=True)
        pipe.lrange(DECISION_QUEUE_KEY, 0, limit - 1)
        pipe.ltrim(DECISION_QUEUE_KEY, limit, -1)
        blobs, _ = pipe.execute()
        if not blobs:
            return moved
        if not _decisions.write(blobs):  # Postgres away: put them back in front, in order
            client.lpush(DECISION_QUEUE_KEY, *reversed(blobs))
            return moved
        moved += len(blobs)
        if len(blobs) < limit:
            return moved


def flush_decisions() -> int:
    """Write every pending and queued decision to Postgres now (tests, the API, shutdown)."""
    shipped = _decisions.ship()
    try:
        return drain_decisions()
    except Exception as exc:  # Redis down: ship() already fell back to the database
        log.warning("decision log: drain failed: %s", exc)
        return shipped


def prune_decisions(*, keep: int) -> int:
    """Delete all but the newest ``keep`` decisions (one indexed DELETE)."""
    cutoff = Decision.objects.order_by("-id").values_list("id", flat=True)[keep : keep + 1].first()
    if cutoff is None:
        return 0
    deleted, _ = Decision.objects.filter(id__lte=cutoff).delete()
    return deleted


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
    flush_now: bool = False,
) -> None:
    """Record one decision; it is encoded and queued after the response (``after_response``)."""
    if not _conf("DECISION_LOG", True):
        return
    record = {
        "ts": timezone.now().isoformat(),
        "verb": str(verb),
        "pod_namespace": pod.namespace if pod else "",
        "pod_name": pod.name if pod else "",
        "pod_uid": pod.uid if pod else "",
        "profile": profile,
        "workload": workload,
        "node": node,
        "candidates": candidates,
        "result": dict(result or {}),
        "breakdown": breakdown,
        "error": error,
        "duration_ms": (time.perf_counter() - started) * 1000.0,
    }
    _decisions.add(record, flush_now=flush_now)


def log_bad_request(*, verb: str, error: str, started: float) -> None:
    try:
        log_decision(verb=verb, pod=None, started=started, error=error)
    except Exception:
        log.exception("could not log a bad %s request", verb)


# === request context ============================================================================


class _Context:
    __slots__ = ("args", "degraded", "profile", "profile_name", "snap", "state", "unknown")

    def __init__(self, args: wire.ExtenderArgs, snap: selectors.Snapshot) -> None:
        self.args = args
        self.snap = snap
        self.degraded = snap.degraded
        self.state: ClusterState | None = snap.state
        self.profile_name = ""
        self.profile: Any = None
        self.unknown: list[str] = []
        if self.state is None:
            return
        if args.nodes is not None:
            self.state = _with_node_objects(snap, args.nodes)
        self.profile_name, self.profile, note = _pick_profile(snap, args.pod)
        if note:
            self.unknown.append(note)
        # Candidates unknown to netaware are noted by the engine itself (and scored neutral).


def _with_node_objects(snap: selectors.Snapshot, objects: Sequence[wire.NodeObject]) -> ClusterState:
    """Nodes mode: labels, zone and allocatable come from kube-scheduler's objects, what is already
    requested on them from our pod cache. Merged entries are memoized per snapshot by the node's
    resourceVersion (kube-scheduler resends the same objects every cycle)."""
    state = snap.state
    assert state is not None
    nodes: dict[str, NodeResources] = dict(state.nodes)
    memo = snap.merged
    for obj in objects:
        key = (obj.name, obj.version) if obj.version else None
        merged = memo.get(key) if key is not None else None
        if merged is None:
            merged = obj.resources
            cached = nodes.get(merged.name)
            if cached is not None:
                merged = replace(
                    merged,
                    requested_cpu_millicores=cached.requested_cpu_millicores,
                    requested_memory_bytes=cached.requested_memory_bytes,
                    pod_count=cached.pod_count,
                    zone=merged.zone or cached.zone,
                    region=merged.region or cached.region,
                )
            if key is not None:
                if len(memo) > 20000:
                    memo.clear()
                memo[key] = merged
        nodes[merged.name] = merged
    return replace(state, nodes=nodes)


def _pick_profile(snap: selectors.Snapshot, pod: PodInfo) -> tuple[str, Any, str]:
    wanted = pod.annotations.get(wire.PROFILE_ANNOTATION, "")
    if wanted and wanted in snap.profiles:
        return wanted, snap.profiles[wanted], ""
    note = ""
    if wanted:
        note = f"profile {wanted!r} from annotation {wire.PROFILE_ANNOTATION} does not exist; using {snap.default_profile!r}"
    return snap.default_profile, snap.profiles.get(snap.default_profile), note


def _workload_label(value: Any) -> str:
    if not value:
        return ""
    if isinstance(value, tuple | list):
        return "/".join(str(v) for v in value)
    return str(value)


# === filter =====================================================================================


def handle_filter(body: bytes, started: float) -> bytes:
    from .scoring import engine

    args = wire.parse_extender_args(body)
    ctx = _Context(args, current_snapshot())
    candidates = args.candidates
    if ctx.state is None:
        log_decision(
            verb=Verb.FILTER, pod=args.pod, started=started, candidates=len(candidates),
            result={"passed": len(candidates), "failed": {}, "unresolvable": {}},
            error=f"degraded, every node passes: {ctx.degraded}",
        )
        return wire.filter_result(args=args, passed=candidates, failed={}, unresolvable={})
    outcome = engine.run_filters(ctx.state, args.pod, list(candidates), ctx.profile)
    failed = dict(outcome.failed)
    unresolvable = dict(outcome.unresolvable)
    passed = list(outcome.passed)
    notes = list(ctx.unknown) + list(getattr(outcome, "notes", ()) or ())
    log_decision(
        verb=Verb.FILTER, pod=args.pod, started=started, profile=ctx.profile_name,
        workload=_workload_label(getattr(outcome, "workload", None)), candidates=len(candidates),
        result={"passed": len(passed), "failed": failed, "unresolvable": unresolvable, "notes": notes},
        breakdown={"reasons": {**failed, **unresolvable}},
    )
    return wire.filter_result(args=args, passed=passed, failed=failed, unresolvable=unresolvable)


# === prioritize =================================================================================


def handle_prioritize(body: bytes, started: float) -> bytes:
    from .scoring import engine

    args = wire.parse_extender_args(body)
    ctx = _Context(args, current_snapshot())
    candidates = list(args.candidates)
    if ctx.state is None:
        scores = [NEUTRAL_EXTENDER_SCORE] * len(candidates)
        log_decision(
            verb=Verb.PRIORITIZE, pod=args.pod, started=started, candidates=len(candidates),
            result={"neutral": True}, error=f"degraded, neutral scores: {ctx.degraded}",
        )
        return wire.prioritize_result(candidates, scores)
    outcome = engine.run_scorers(ctx.state, args.pod, candidates, ctx.profile)
    extender = np.asarray(outcome.extender, dtype=np.int64)
    np.clip(extender, 0, 10, out=extender)
    nodes = list(outcome.nodes)
    best = ""
    if len(nodes):
        best = nodes[int(np.argmax(outcome.total))]
    notes = list(ctx.unknown) + list(getattr(outcome, "notes", ()) or ())
    log_decision(
        verb=Verb.PRIORITIZE, pod=args.pod, started=started, profile=ctx.profile_name,
        workload=_workload_label(outcome.workload), node=best, candidates=len(candidates),
        result={"best": best, "notes": notes},
        breakdown={
            "nodes": nodes,
            "total": np.round(outcome.total, 2),
            "extender": extender,
            "scorers": {name: np.round(arr, 2) for name, arr in outcome.breakdown.items()},
        },
    )
    return wire.prioritize_result(nodes, extender.tolist())


# === bind =======================================================================================


def _pod_labels_for_bind(binding: wire.BindingArgs) -> tuple[dict[str, str], ObservedPod | None]:
    """Labels of the pod being bound: the watcher's cache first, else one read from the API."""
    try:
        cached = selectors.observed_pod(namespace=binding.pod_namespace, name=binding.pod_name)
    except (DatabaseError, InterfaceError):
        cached = None
        _close_broken_connection()
    if cached is not None and (not binding.pod_uid or cached.uid in ("", binding.pod_uid)):
        return dict(cached.labels or {}), cached
    from netaware_site import kube

    pod = kube.retry(
        lambda: kube.core_v1().read_namespaced_pod(binding.pod_name, binding.pod_namespace), attempts=3
    )
    labels = dict(pod.metadata.labels or {}) if pod.metadata else {}
    return labels, None


def _bind_once(binding: wire.BindingArgs) -> None:
    """POST the Binding; a 409 because the pod is already on *this* node is success (kube-scheduler
    re-sends bind after a timeout), any other 409 (UID mismatch, bound elsewhere) is permanent."""
    from netaware_site import kube

    try:
        kube.bind_pod(
            namespace=binding.pod_namespace, pod=binding.pod_name, node=binding.node, uid=binding.pod_uid or None
        )
    except Exception as exc:
        if kube.status_of(exc) != 409:
            raise
        current = kube.core_v1().read_namespaced_pod(binding.pod_name, binding.pod_namespace)
        if current.spec is not None and current.spec.node_name == binding.node and (
            not binding.pod_uid or current.metadata.uid == binding.pod_uid
        ):
            return
        raise


def bump_state_version() -> None:
    """Tell every extender process its ClusterState is out of date (best effort)."""
    try:
        selectors.redis_client().incr(selectors.STATE_VERSION_KEY)
    except Exception as exc:
        log.warning("could not bump the scheduler state version: %s", exc)
    selectors.invalidate_state()


def handle_bind(body: bytes, started: float) -> bytes:
    from netaware_site import kube

    binding = wire.parse_binding_args(body)
    pod = PodInfo(namespace=binding.pod_namespace, name=binding.pod_name, uid=binding.pod_uid)
    try:
        labels, cached = _pod_labels_for_bind(binding)
    except Exception as exc:
        labels, cached = {}, None
        log.warning("bind %s/%s: pod labels unavailable (%s)", pod.namespace, pod.name, kube.describe(exc))
    try:
        kube.retry(
            lambda: _bind_once(binding),
            attempts=int(_conf("BIND_ATTEMPTS", 4)),
            base_delay=0.1,
            max_delay=1.0,
            retry_on=lambda exc: kube.is_retryable(exc) and kube.status_of(exc) != 409,
        )
    except Exception as exc:
        message = f"binding {pod.namespace}/{pod.name} to {binding.node} failed: {kube.describe(exc)}"
        log.warning(message)
        log_decision(verb=Verb.BIND, pod=pod, started=started, node=binding.node, error=message, flush_now=True)
        return wire.binding_result(message)

    notes: list[str] = []
    try:
        record_bound_pod(binding=binding, labels=labels, cached=cached)
    except Exception as exc:  # the pod IS bound: report success, the watcher will catch up
        notes.append(f"placement not recorded yet: {type(exc).__name__}: {exc}")
        log.warning("bind %s/%s: %s", pod.namespace, pod.name, notes[-1])
        _close_broken_connection()
    log_decision(
        verb=Verb.BIND, pod=pod, started=started, node=binding.node, candidates=1,
        result={"bound": True, "notes": notes}, flush_now=True,
    )
    bump_state_version()
    return wire.binding_result("")


def record_bound_pod(*, binding: wire.BindingArgs, labels: Mapping[str, str], cached: ObservedPod | None) -> None:
    from apps.appgroups.services import record_placement

    with transaction.atomic():
        record_placement(
            pod_namespace=binding.pod_namespace,
            pod_name=binding.pod_name,
            pod_uid=binding.pod_uid,
            node_name=binding.node,
            labels=dict(labels),
            source="extender",
        )
        if cached is not None:
            ObservedPod.objects.filter(pk=cached.pk).update(node_name=binding.node, updated_at=timezone.now())


# === preempt ====================================================================================


def handle_preempt(body: bytes, started: float) -> bytes:
    from .scoring import engine

    args = wire.parse_preemption_args(body)
    snap = current_snapshot()
    nodes = list(args.victims)
    if snap.state is None:
        log_decision(
            verb=Verb.PREEMPT, pod=args.pod, started=started, candidates=len(nodes),
            result={"kept": nodes}, error=f"degraded, victims passed through: {snap.degraded}",
        )
        return wire.preemption_result(args.victims)
    name, profile, _ = _pick_profile(snap, args.pod)
    outcome = engine.run_filters(snap.state, args.pod, nodes, profile)
    # Evicting pods frees resources; it cannot fix a network constraint. Keep only nodes where our
    # filters accept the preemptor, or reject it for a reason preemption can resolve.
    dropped = dict(outcome.unresolvable)
    kept = {n: v for n, v in args.victims.items() if n not in dropped}
    log_decision(
        verb=Verb.PREEMPT, pod=args.pod, started=started, profile=name, candidates=len(nodes),
        workload=_workload_label(getattr(outcome, "workload", None)),
        result={"kept": sorted(kept), "dropped": dropped, "failed": dict(outcome.failed)},
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
    bump_state_version()
    return profile


def delete_profile(*, profile: SchedulerProfile) -> None:
    profile.delete()
    bump_state_version()


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


