"""The extender process: its scheduling cache and the threads that keep it current.

One ``ExtenderRuntime`` per process (``process_runtime()``). It owns:

* the ``SchedulingCache`` (``cache.py``) that filter/prioritize score against — they never wait
  on Postgres, Redis or the Kubernetes API;
* informers (list + watch) of nodes and pods when a Kubernetes API is configured — the
  ``kubernetes`` source; without one, the cluster watcher's tables are the source (``database``);
* the loader thread: topology, AppGroups, scheduler profiles and node usage from Postgres,
  reloaded when a change notification arrives on Redis (``notify_change``) or a cheap fingerprint
  query (every STATE_DB_CHECK_SECONDS) shows a change, and swapped into the cache whole;
* the placement writer and the decision log: batched, asynchronous persistence;
* the wire interner (``wire.WireInterner``): pods, nodes and host names already parsed or encoded;
* optional leader election (a coordination.k8s.io Lease): with several replicas only the leader
  answers, so every filter sees every bind answered before it (see docs/scheduler.md).

There is one way to run: requests only read the cache's current view; loading and writing happen on
the runtime's own threads (the in-process tests start this same runtime and wait for its loads).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import orjson
import redis
from django.conf import settings
from django.db import DatabaseError, InterfaceError, close_old_connections, connection
from django.utils import timezone

from apps.appgroups.selectors import all_appgroup_specs, workload_ids
from apps.appgroups.services import record_placements
from apps.probes.selectors import node_usage
from apps.topology.selectors import current_topology
from netaware_core import deadletter, kube
from netaware_core.informer import ListWatch

from . import decisionlog, selectors, wire
from .cache import BindRefused, CacheView, PodRecord, SchedulingCache, WorkloadKey
from .choices import Verb
from .decisionlog import DecisionLog
from .selectors import conf

log = logging.getLogger(__name__)

CHANGES_CHANNEL = "netaware:scheduler:changes"


def notify_change(kind: str) -> None:
    """Tell every extender process that an input changed (``topology``, ``appgroups``, ``profiles``,
    ``nodes``, ``pods``). Best effort: the loaders also poll a fingerprint."""
    current = _runtime
    if current is not None:
        current.wake.set()
    try:
        selectors.redis_client().publish(CHANGES_CHANNEL, kind)
    except redis.RedisError as exc:
        log.debug("change notification not sent: %s", exc)


def _db_error(exc: BaseException) -> str:
    return f"database unavailable: {type(exc).__name__}: {str(exc).strip()}"


# === loading from Postgres ==========================================================================


class Loader:
    """Loads the database-held inputs into the cache when their fingerprint changes."""

    def __init__(self, runtime: ExtenderRuntime) -> None:
        self.runtime = runtime
        self.stamps: dict[str, Any] = {}
        self.usage_at = -1e18
        self.round_started = 0.0  # monotonic start of the check under way (0 = none)
        self.workload_ids: dict[WorkloadKey, tuple[int, int]] = {}

    @property
    def parts(self) -> tuple[str, ...]:
        base = ("topology", "appgroups", "profiles")
        return (*base, "nodes", "pods") if self.runtime.source == "database" else base

    def check(self, *, force: bool = False) -> None:
        """One round trip for the fingerprints, then a load of each changed part. A failure keeps
        the last good data and marks the parts it could not load."""
        self.round_started = time.monotonic()
        try:
            self._check(force=force)
        finally:
            self.round_started = 0.0

    def waiting_note(self, now: float) -> str:
        """A hung database (no error, no answer) blocks the check instead of failing it: once a round
        has waited longer than STATE_HANG_SECONDS the decision log says the state may be old."""
        started = self.round_started
        if started and now - started > float(conf("STATE_HANG_SECONDS")):
            return f"database: no answer for {now - started:.0f}s (answering from the last good state)"
        return ""

    def _check(self, *, force: bool) -> None:
        cache = self.runtime.cache
        try:
            stamps = selectors.state_stamps()
        except (DatabaseError, InterfaceError) as exc:
            self._failed(self.parts, exc)
            return
        changed = [p for p in self.parts if force or self.stamps.get(p) != stamps.get(p)]
        if "appgroups" in changed and "pods" in self.parts and "pods" not in changed:
            changed.append("pods")  # placements are resolved against AppGroups
        for part in self.parts:
            if part not in changed:
                cache.mark(part, ok=True)  # checked: what the cache holds is current
                continue
            try:
                self._load(part)
            except (DatabaseError, InterfaceError) as exc:
                self._failed((part,), exc)
                continue
            self.stamps[part] = stamps.get(part)
        if "topology" not in changed:
            self._reassess_topology()
        if changed:
            # Long-lived, large data (topology, specs, thousands of records) leaves the collector's
            # generations: full collections stop re-scanning it on request threads (tens of ms at
            # 5,000 nodes). Young generations only; a full collection here would itself be the stall.
            gc.collect(1)
            gc.freeze()
        now = time.monotonic()
        if force or now - self.usage_at >= float(conf("STATE_MAX_AGE_SECONDS")):
            try:
                cache.set_usage(node_usage(now=timezone.now()))
                self.usage_at = now
            except (DatabaseError, InterfaceError) as exc:
                self._failed(("usage",), exc)

    def _reassess_topology(self) -> None:
        """Staleness at read time: a stopped pipeline stores no new snapshot, so the stamp never
        changes while the one held here ages past STALE_AFTER_SECONDS. ``current_topology`` reuses
        its in-process arrays (one small query) and only the reason is swapped in."""
        cache = self.runtime.cache
        try:
            topology = current_topology()
        except (DatabaseError, InterfaceError) as exc:
            self._failed(("topology",), exc)
            return
        held = cache.view().state.topology
        if topology is not None and topology.version == held.version and topology.stale_reason != held.stale_reason:
            cache.set_topology(topology)

    def _failed(self, parts: Iterable[str], exc: BaseException) -> None:
        detail = _db_error(exc)
        log.warning("scheduling cache: %s", detail)
        for part in parts:
            self.runtime.cache.mark(part, ok=False, detail=detail)
        with contextlib.suppress(Exception):
            connection.close_if_unusable_or_obsolete()

    def _load(self, part: str) -> None:
        cache = self.runtime.cache
        if part == "topology":
            topology = current_topology()
            cache.set_topology(topology if topology is not None else selectors.empty_topology())
            if not connection.in_atomic_block:
                # libpq keeps its input buffer as large as the largest result it read (the topology
                # payload: hundreds of MB at 5,000 nodes); a fresh connection frees it.
                connection.close()
        elif part == "appgroups":
            specs = all_appgroup_specs()
            self.workload_ids = workload_ids()
            cache.set_appgroups(specs)
        elif part == "profiles":
            profiles, default = selectors.compiled_profiles()
            cache.set_profiles(profiles, default)
        elif part == "nodes":
            cache.replace_nodes(selectors.node_records())
        elif part == "pods":
            cache.replace_pods(selectors.pod_records())

    def run(self) -> None:
        """The loader thread: wait for a notification or the poll interval, then check."""
        runtime = self.runtime
        listener = _ChangeListener()
        interval = float(conf("STATE_DB_CHECK_SECONDS"))
        while not runtime.stop_event.is_set():
            listener.wait(min(interval, float(conf("STATE_MAX_AGE_SECONDS"))), runtime.wake)
            runtime.wake.clear()
            if runtime.stop_event.is_set():
                break
            try:
                close_old_connections()
                self.check()
            except Exception:
                log.exception("scheduling cache: load failed")
        listener.close()
        connection.close()


class _ChangeListener:
    """Redis pub/sub on CHANGES_CHANNEL; without Redis, plain sleeping (the poll still works)."""

    def __init__(self) -> None:
        self.pubsub: Any = None

    def wait(self, timeout: float, wake: threading.Event) -> None:
        deadline = time.monotonic() + timeout
        while not wake.is_set() and time.monotonic() < deadline:
            if self.pubsub is None:
                try:
                    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1.0,
                                                  socket_timeout=None, health_check_interval=30)
                    self.pubsub = client.pubsub(ignore_subscribe_messages=True)
                    self.pubsub.subscribe(CHANGES_CHANNEL)
                except redis.RedisError:
                    self.pubsub = None
                    wake.wait(min(1.0, max(0.0, deadline - time.monotonic())))
                    continue
            try:
                message = self.pubsub.get_message(timeout=min(0.5, max(0.01, deadline - time.monotonic())))
            except (redis.RedisError, OSError, ValueError):
                self.close()
                continue
            if message is not None:
                return

    def close(self) -> None:
        if self.pubsub is not None:
            with contextlib.suppress(Exception):
                self.pubsub.close()
        self.pubsub = None


# === informers (kubernetes source) ==================================================================


class _NodeInformer:
    def __init__(self, cache: SchedulingCache) -> None:
        self.cache = cache

    def on_list(self, items: list[dict[str, Any]], version: str) -> None:
        self.cache.replace_nodes(r for r in (_safe(wire.node_record, o) for o in items) if r is not None)
        gc.freeze()  # thousands of node records live long (see Loader.check)

    def on_event(self, etype: str, obj: dict[str, Any]) -> None:
        if etype == "DELETED":
            name = ((obj.get("metadata") or {}).get("name")) or ""
            self.cache.remove_node(name)
            return
        record = _safe(wire.node_record, obj)
        if record is not None:
            self.cache.upsert_node(record)
        self.cache.mark("nodes", ok=True)

    def on_error(self, message: str) -> None:
        self.cache.mark("nodes", ok=False, detail=message)


class _PodInformer:
    def __init__(self, cache: SchedulingCache) -> None:
        self.cache = cache

    def on_list(self, items: list[dict[str, Any]], version: str) -> None:
        self.cache.replace_pods(r for r in (_safe(wire.pod_record, o) for o in items) if r is not None)

    def on_event(self, etype: str, obj: dict[str, Any]) -> None:
        if etype == "DELETED":
            meta = obj.get("metadata") or {}
            self.cache.remove_pod(meta.get("namespace") or "default", meta.get("name") or "")
        else:
            record = _safe(wire.pod_record, obj)
            if record is not None:
                self.cache.upsert_pod(record)
        self.cache.mark("pods", ok=True)

    def on_error(self, message: str) -> None:
        self.cache.mark("pods", ok=False, detail=message)


def _safe(convert: Any, obj: dict[str, Any]) -> Any:
    try:
        return convert(obj)
    except wire.WireError as exc:
        log.warning("skipping a malformed object from the API: %s", exc)
        return None


# === placements (asynchronous, batched) =============================================================


@dataclass(frozen=True)
class _Placed:
    namespace: str
    name: str
    uid: str
    node: str
    workload: WorkloadKey


class PlacementWriter:
    """Binds answered by this process, upserted into the Placement table in batches (the cluster
    watcher records the same placements from pod events; both writes are idempotent)."""

    def __init__(self, runtime: ExtenderRuntime) -> None:
        self.runtime = runtime
        self.queue: queue.Queue[_Placed] = queue.Queue()
        self.failing = ""

    def add(self, placed: _Placed) -> None:
        self.queue.put(placed)

    def write_pending(self) -> int:
        batch: list[_Placed] = []
        with contextlib.suppress(queue.Empty):
            while len(batch) < 1000:
                batch.append(self.queue.get_nowait())
        if not batch:
            return 0
        ids = self.runtime.loader.workload_ids
        rows = [(p.namespace, p.name, p.uid, p.node, *ids[p.workload]) for p in batch if p.workload in ids]
        try:
            # A row Postgres refuses is set aside (dead letter); the others are stored.
            deadletter.store_batch(queue="placements", records=rows,
                                   store=lambda part: record_placements(rows=part, source="extender"))
        except (DatabaseError, InterfaceError) as exc:
            self.failing = _db_error(exc)
            for placed in batch:  # retried on the next round; placements are idempotent
                self.queue.put(placed)
            with contextlib.suppress(Exception):
                connection.close_if_unusable_or_obsolete()
            return 0
        self.failing = ""
        return len(rows)

    def run(self) -> None:
        stop = self.runtime.stop_event
        while not stop.is_set():
            stop.wait(0.2 if not self.failing else 1.0)
            try:
                close_old_connections()
                self.runtime.settle_binds()
                self.write_pending()
            except Exception:
                log.exception("placement writer failed")
        self.write_pending()
        connection.close()


# === leader election ================================================================================


class _Stoppable(Protocol):
    """What the elector needs of its owner (the extender's runtime, the rebalancer): when to stop."""

    stop_event: threading.Event


class LeaderElector:
    """A coordination.k8s.io/v1 Lease, as kube-scheduler and controllers use it: the holder renews
    every ``retry`` seconds; others take over once ``duration`` passes without a renewal. A leader
    that cannot renew for ``renew_deadline`` stops leading before anyone else can start."""

    def __init__(self, runtime: _Stoppable, *, namespace: str, name: str, identity: str,
                 duration: float = 15.0, renew_deadline: float = 10.0, retry: float = 2.0) -> None:
        self.runtime = runtime
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.namespace, self.name, self.identity = namespace, name, identity
        self.duration, self.renew_deadline, self.retry = duration, renew_deadline, retry
        self.renewed_at = -1e18
        self.error = ""

    @property
    def leading(self) -> bool:
        return time.monotonic() - self.renewed_at < self.renew_deadline

    def _now(self) -> str:
        return timezone.now().isoformat(timespec="microseconds").replace("+00:00", "Z")

    def try_acquire(self) -> bool:
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.duration),
                "renewTime": self._now()}
        try:
            current = kube.get_json(f"{self.path}/{self.name}", timeout=self.retry)
        except Exception as exc:
            if kube.status_of(exc) != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {**spec, "acquireTime": spec["renewTime"], "leaseTransitions": 0}}
            kube.post_json(self.path, orjson.dumps(body), timeout=self.retry)
            return True
        old = current.get("spec") or {}
        holder = old.get("holderIdentity") or ""
        if holder and holder != self.identity:
            renewed = old.get("renewTime") or old.get("acquireTime") or ""
            with contextlib.suppress(ValueError):
                age = (timezone.now() - datetime.fromisoformat(renewed.replace("Z", "+00:00"))).total_seconds()
                if age < float(old.get("leaseDurationSeconds") or self.duration):
                    return False
        new_spec = {**old, **spec}
        if holder != self.identity:
            new_spec["acquireTime"] = spec["renewTime"]
            new_spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        current["spec"] = new_spec  # metadata.resourceVersion guards against a concurrent taker
        kube.put_json(f"{self.path}/{self.name}", orjson.dumps(current), timeout=self.retry)
        return True

    def run(self) -> None:
        stop = self.runtime.stop_event
        while not stop.is_set():
            try:
                if self.try_acquire():
                    if not self.leading:
                        log.info("extender %s is now the leader", self.identity)
                    self.renewed_at = time.monotonic()
                self.error = ""
            except Exception as exc:
                self.error = kube.describe(exc)
                log.warning("leader election: %s", self.error)
            stop.wait(self.retry)


# === the runtime ====================================================================================


class ExtenderRuntime:
    def __init__(self, *, source: str | None = None) -> None:
        chosen = source or conf("EXTENDER_SOURCE")
        if chosen == "auto":
            chosen = "kubernetes" if kube.configured() else "database"
        if chosen not in ("kubernetes", "database"):
            raise ValueError(f"NETAWARE_EXTENDER_SOURCE must be auto, kubernetes or database, got {chosen!r}")
        self.source = chosen
        self.cache = SchedulingCache(scheduler_names=conf("SCHEDULER_NAMES"),
                                     hotspot_window=float(conf("HOTSPOT_WINDOW_SECONDS")),
                                     plan_budget=float(conf("PLAN_BUDGET_MS")) / 1000.0)
        self.decisions = DecisionLog(
            redis_client=selectors.redis_client, queue_max=int(conf("DECISION_QUEUE_MAX")),
            buffer_max=int(conf("DECISION_BUFFER_MAX")), retention=int(conf("DECISION_RETENTION")),
        )
        # Parses and encodings reused across requests (wire.WireInterner): this process's, not a module's.
        self.wire = wire.WireInterner()
        self.loader = Loader(self)
        self.placements = PlacementWriter(self)
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.threads: list[threading.Thread] = []
        self.informers: list[ListWatch] = []
        self.elector: LeaderElector | None = None
        self.started = False
        self.started_at = time.monotonic()
        self.binds_settled = {"bound": 0, "failed": 0}  # binds answered "unknown", settled by the watch
        # Big filter/prioritize evaluations, so the request thread can answer at the deadline (two:
        # evaluations given up still finish here, and must not pile up).
        self.overtime = ThreadPoolExecutor(max_workers=2, thread_name_prefix="extender-overtime")

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> ExtenderRuntime:
        """Start the background threads. Idempotent."""
        if self.started:
            return self
        self.started = True
        if self.source == "kubernetes":
            nodes, pods = _NodeInformer(self.cache), _PodInformer(self.cache)
            for path, informer in (("/api/v1/nodes", nodes), ("/api/v1/pods", pods)):
                watch = ListWatch(path, on_list=informer.on_list, on_event=informer.on_event,
                                  on_error=informer.on_error, stop=self.stop_event,
                                  watch_timeout=int(conf("WATCH_TIMEOUT_SECONDS")),
                                  resync_seconds=float(conf("RESYNC_SECONDS")))
                self.informers.append(watch)
                self.threads.append(watch.start(f"informer{path.replace('/', '-')}"))
        self.threads.append(_thread(self.loader.run, "loader"))
        self.threads.append(_thread(self.placements.run, "placements"))
        self.decisions.start()
        if conf("EXTENDER_LEADER_ELECTION"):
            self.elector = LeaderElector(
                self, namespace=conf("KUBE_NAMESPACE"),
                name=conf("EXTENDER_LEASE_NAME"),
                identity=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
                duration=float(conf("EXTENDER_LEASE_SECONDS")),
                renew_deadline=float(conf("EXTENDER_LEASE_SECONDS")) * 2 / 3,
                retry=float(conf("EXTENDER_LEASE_SECONDS")) * 2 / 15,
            )
            self.threads.append(_thread(self.elector.run, "leader-election"))
        self.wake.set()
        atexit.register(self.stop)
        return self

    def stop(self, *, ship: bool = True) -> None:
        """Stop the threads; ship what is still pending unless ``ship`` is False (tests)."""
        self.stop_event.set()
        self.wake.set()
        for thread in self.threads:
            thread.join(timeout=5)
        self.overtime.shutdown(wait=False, cancel_futures=True)
        self.decisions.stop(ship=ship)

    # --- what requests use ------------------------------------------------------------------------

    def view(self) -> CacheView:
        return self.cache.view()

    def serving(self) -> tuple[bool, str]:
        """(whether this process should answer, why not): synced, and the leader when elected."""
        if self.elector is not None and not self.elector.leading:
            return False, f"not the leader of lease {self.elector.name}" + (
                f" ({self.elector.error})" if self.elector.error else "")
        view = self.cache.view()
        if not view.synced:
            return False, "scheduling cache not synced yet: " + "; ".join(view.stale_notes(time.monotonic()))
        return True, ""

    # --- bind ---------------------------------------------------------------------------------------

    def bind(self, *, namespace: str, name: str, uid: str, node: str, deadline: float) -> tuple[str, str]:
        """Bind the pod if it is ours, within ``deadline`` (monotonic). Returns (error, outcome):
        ("", "ok"), (why, "refused") when it is not ours to bind, (why, "failed") when the API
        refused, (why, "unknown") when the Binding was sent but not answered in time (it may still
        land). The placement is assumed in the cache before the API call, forgotten if the call
        fails and kept while unknown, until the pod watch settles it (``settle_binds``)."""
        cache = self.cache
        try:
            needed = cache.assume(namespace=namespace, name=name, uid=uid, node=node)
        except BindRefused as refused:
            if cache.pod(namespace, name) is not None:
                return str(refused), "refused"
            # Not seen by the watch yet (or no watch): read it once, within the deadline.
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                return f"{refused} (no time left to read it from the API)", "failed"
            record: PodRecord | None
            try:
                record = wire.pod_record(kube.get_pod(namespace=namespace, name=name, timeout=remaining))
            except Exception as exc:
                if kube.status_of(exc) == 404:
                    return f"pod {namespace}/{name} does not exist", "refused"
                return f"pod {namespace}/{name} could not be read: {kube.describe(exc)}", "failed"
            cache.upsert_pod(record)
            try:
                needed = cache.assume(namespace=namespace, name=name, uid=uid, node=node)
            except BindRefused as again:
                return str(again), "refused"
        if not needed:
            return "", "ok"
        error, doubtful = self._create_binding(namespace=namespace, name=name, uid=uid, node=node, deadline=deadline)
        if error and doubtful:
            cache.in_doubt(namespace=namespace, name=name, uid=uid, node=node)
            return error, "unknown"
        if error:
            cache.forget(namespace=namespace, name=name, uid=uid)
            return error, "failed"
        cache.bound(namespace=namespace, name=name)
        record = cache.pod(namespace, name)
        workload = self._workload_of(record)
        if workload is not None:
            self.placements.add(_Placed(namespace, name, uid or (record.uid if record else ""), node, workload))
        return "", "ok"

    def settle_binds(self) -> int:
        """Record what the pod watch showed about binds answered "unknown": a decision saying bound
        or failed (``result.settles`` = "unknown") and, when bound, the placement."""
        settled = self.cache.take_settled()
        for outcome in settled:
            bind = outcome.bind
            self.binds_settled["bound" if outcome.bound else "failed"] += 1
            if outcome.bound:
                record = self.cache.pod(bind.namespace, bind.name)
                workload = self._workload_of(record)
                if workload is not None:
                    self.placements.add(_Placed(bind.namespace, bind.name, bind.uid or (record.uid if record else ""),
                                                bind.node, workload))
            else:
                log.warning("bind %s/%s to %s (answered unknown): %s", bind.namespace, bind.name, bind.node,
                            outcome.reason)
            if conf("DECISION_LOG"):
                self.decisions.add(decisionlog.new_record(
                    verb=Verb.BIND, pod_namespace=bind.namespace, pod_name=bind.name, pod_uid=bind.uid,
                    node=outcome.node or bind.node, candidates=1, error=outcome.reason,
                    result={"bound": outcome.bound, "outcome": "bound" if outcome.bound else "failed",
                            "settles": "unknown", "node": bind.node,
                            "after_s": round(time.monotonic() - bind.at, 3)}))
        return len(settled)

    def _workload_of(self, record: PodRecord | None) -> WorkloadKey | None:
        if record is None:
            return None
        # The cache's memoised resolution against the AppGroups it holds, not view().state's: a view
        # here would rebuild the ClusterState after every bind, on the bind's thread, only for the
        # next filter to rebuild it again once the watch event lands.
        return self.cache.workload_of(record)

    def _create_binding(self, *, namespace: str, name: str, uid: str, node: str, deadline: float) -> tuple[str, bool]:
        """(error, in doubt): in doubt when a Binding may have reached the API server without an
        answer (a timeout, a connection lost after sending) and nothing later settled it."""
        attempt = 0
        doubtful = False
        what = f"binding {namespace}/{name} to {node}"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.01:
                if doubtful:
                    return (f"{what}: outcome unknown, the Kubernetes API did not answer within the deadline; "
                            "the binding may still land (the pod watch will tell)"), True
                return f"{what}: no answer from the Kubernetes API within the deadline", False
            try:
                kube.create_binding(namespace=namespace, pod=name, node=node, uid=uid, timeout=remaining)
                return "", False
            except Exception as exc:
                status = kube.status_of(exc)
                if status == 409 and self._already_on(namespace, name, node, uid, deadline):
                    return "", False  # a retried bind whose first attempt went through
                if status == 409 or not kube.is_retryable(exc):
                    return f"{what} failed: {kube.describe(exc)}", False
                # Refused connections never carried the request; anything else after sending may have.
                doubtful = doubtful or (status is None and not isinstance(exc, ConnectionRefusedError))
                delay = kube.backoff_delay(attempt, base_delay=0.05, max_delay=0.5)
                attempt += 1
                if time.monotonic() + delay >= deadline:
                    if doubtful:
                        return (f"{what}: outcome unknown ({kube.describe(exc)}); the binding may still land "
                                "(the pod watch will tell)"), True
                    return f"{what} failed: {kube.describe(exc)}", False
                time.sleep(delay)

    def _already_on(self, namespace: str, name: str, node: str, uid: str, deadline: float) -> bool:
        try:
            obj = kube.get_pod(namespace=namespace, name=name, timeout=max(0.05, deadline - time.monotonic()))
        except Exception:
            return False
        record = wire.pod_record(obj)
        return record.node == node and (not uid or record.uid == uid)


def _thread(target: Any, name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


_runtime: ExtenderRuntime | None = None
_runtime_lock = threading.Lock()


def process_runtime() -> ExtenderRuntime:
    """This process's runtime, created and started on first use."""
    global _runtime
    current = _runtime
    if current is not None:
        return current
    with _runtime_lock:
        if _runtime is None:
            _runtime = ExtenderRuntime().start()
        return _runtime


def current_runtime() -> ExtenderRuntime | None:
    """This process's runtime if one was started (metrics, health), without starting one."""
    return _runtime


def reset_runtime(*, ship: bool = False) -> None:
    """Stop and forget this process's runtime (tests switching settings or databases); what it
    had not written yet is dropped unless ``ship``."""
    global _runtime
    with _runtime_lock:
        current, _runtime = _runtime, None
    if current is not None:
        current.stop(ship=ship)


