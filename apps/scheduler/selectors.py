"""Reads of the scheduler app: the cached ClusterState the extender scores against, profiles,
decisions and the pod cache.

The extender's hot path must cost about the scoring time, not ORM time, so the ClusterState is
built once and kept in-process until its version changes. Freshness is checked cheaply on every
request: one Redis GET of a counter that every write bumps (bind, watcher, signals on the models
we read), plus a database fingerprint (counts and newest update times) at most every
``STATE_DB_CHECK_SECONDS`` for writes that bypass signals, plus a maximum age for the time-based
inputs (node usage windows, hot-spot bindings).

If Redis or the database cannot be reached the snapshot comes back *degraded* (with the reason):
the services then let every node pass and answer neutral scores, as kube-scheduler should not
fail a pod because netaware cannot see.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import redis
from django.conf import settings
from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from apps.scheduler.scoring.state import ClusterState, NodeResources, NodeUsage
from apps.topology.topomath import Topology

from .choices import Verb
from .models import Decision, ObservedPod, SchedulerProfile

log = logging.getLogger(__name__)

STATE_VERSION_KEY = "netaware:scheduler:state-version"


def conf(name: str, default: Any) -> Any:
    return settings.NETAWARE.get(name, default)


# --- Redis -----------------------------------------------------------------------------------

_redis_clients: dict[str, redis.Redis] = {}
_redis_lock = threading.Lock()


def redis_client() -> redis.Redis:
    url = settings.REDIS_URL
    with _redis_lock:
        client = _redis_clients.get(url)
        if client is None:
            client = _redis_clients[url] = redis.Redis.from_url(
                url, socket_connect_timeout=0.25, socket_timeout=0.25, health_check_interval=0
            )
        return client


def empty_topology() -> Topology:
    z = np.zeros((0, 0))
    b = np.zeros((0, 0), dtype=bool)
    return Topology(nodes=(), zones=(), regions=(), latency_ms=z, bandwidth_mbps=z.copy(),
                    loss_pct=z.copy(), inferred=b, stale=b.copy())


# --- building the state ----------------------------------------------------------------------


def requested_by_node() -> dict[str, tuple[int, int, int]]:
    """(cpu millicores, memory bytes, pod count) requested by non-terminal pods on each node."""
    rows = (
        ObservedPod.objects.exclude(node_name="")
        .filter(terminal=False)
        .values("node_name")
        .annotate(cpu=Sum("cpu_request_millicores"), mem=Sum("memory_request_bytes"), pods=Count("id"))
    )
    return {r["node_name"]: (r["cpu"] or 0, r["mem"] or 0, r["pods"]) for r in rows}


def recent_bindings(*, now: datetime) -> dict[str, int]:
    window = timedelta(seconds=conf("HOTSPOT_WINDOW_SECONDS", 300))
    rows = (
        Decision.objects.filter(verb=Verb.BIND, ts__gte=now - window, error="")
        .exclude(node="")
        .values("node")
        .annotate(n=Count("id"))
    )
    return {r["node"]: r["n"] for r in rows}


def node_resources() -> dict[str, NodeResources]:
    from apps.topology.models import Node

    requested = requested_by_node()
    out: dict[str, NodeResources] = {}
    for row in Node.objects.values(
        "name", "zone", "region", "labels", "allocatable_cpu_millicores", "allocatable_memory_bytes"
    ):
        cpu, mem, pods = requested.get(row["name"], (0, 0, 0))
        out[row["name"]] = NodeResources(
            name=row["name"],
            zone=row["zone"] or "",
            region=row["region"] or "",
            allocatable_cpu_millicores=row["allocatable_cpu_millicores"] or 0,
            allocatable_memory_bytes=row["allocatable_memory_bytes"] or 0,
            requested_cpu_millicores=cpu,
            requested_memory_bytes=mem,
            pod_count=pods,
            labels=row["labels"] or {},
        )
    return out


def build_cluster_state(*, now: datetime | None = None) -> ClusterState:
    """One consistent picture of the cluster from the database (not cached; see ``snapshot``)."""
    from apps.appgroups.selectors import all_appgroup_specs, placements_by_workload
    from apps.probes.selectors import node_usage
    from apps.topology.selectors import current_topology

    now = now or timezone.now()
    topology = current_topology() or empty_topology()
    usage: dict[str, NodeUsage] = node_usage(now=now)
    return ClusterState(
        topology=topology,
        appgroups=tuple(all_appgroup_specs()),
        placements={k: tuple(v) for k, v in placements_by_workload().items()},
        nodes=node_resources(),
        usage=usage,
        recent_bindings=recent_bindings(now=now),
    )


# Which tables each part of the state is built from. A part is rebuilt only when the stamps of
# its tables change, so a bind (a Placement row) does not re-read 5,000 Node rows.
def _part_models() -> dict[str, tuple[Any, ...]]:
    from apps.appgroups.models import AppGroup, Dependency, Placement, Workload
    from apps.topology.models import Node

    return {
        "nodes": (Node, ObservedPod),
        "graph": (AppGroup, Workload, Dependency, Placement),
        "profiles": (SchedulerProfile,),
    }


_stamp_sql: str | None = None


def _stamps_sql() -> str:
    global _stamp_sql
    if _stamp_sql is None:
        from apps.topology.models import TopologySnapshot

        selects = []
        for models in _part_models().values():
            for model in models:
                table = connection.ops.quote_name(model._meta.db_table)
                pk = connection.ops.quote_name(model._meta.pk.column)
                stamp = next((f.column for f in model._meta.concrete_fields if getattr(f, "auto_now", False)), None)
                ts = f"max({connection.ops.quote_name(stamp)})::text" if stamp else "NULL"
                selects.append(f"(SELECT count(*)::text || '/' || coalesce(max({pk}), 0)::text || '/' || "
                               f"coalesce({ts}, '') FROM {table})")
        snap = connection.ops.quote_name(TopologySnapshot._meta.db_table)
        selects.append(f"(SELECT id::text || '/' || version::text || '/' || stale::text || '/' || stale_reason FROM {snap} "
                       "ORDER BY version DESC LIMIT 1)")
        _stamp_sql = "SELECT " + ", ".join(selects)
    return _stamp_sql


def state_stamps() -> dict[str, tuple[Any, ...]]:
    """Per part, a cheap summary (count, max id, newest update) of its tables: one round trip."""
    with connection.cursor() as cursor:
        cursor.execute(_stamps_sql())
        row = list(cursor.fetchone())
    out: dict[str, tuple[Any, ...]] = {}
    for part, models in _part_models().items():
        out[part] = tuple(row[: len(models)])
        del row[: len(models)]
    out["topology"] = (row[0],)
    return out


@dataclass(frozen=True)
class ProfileRow:
    name: str
    is_default: bool
    scorers: list[dict[str, Any]]
    filters: list[Any]
    params: dict[str, Any]


@dataclass
class Snapshot:
    state: ClusterState | None
    profiles: dict[str, Any] = field(default_factory=dict)  # name -> engine Profile
    default_profile: str = ""
    degraded: str = ""  # why the state could not be read ("" = healthy)
    built_at: float = 0.0
    version: Any = None
    # (node, resourceVersion) -> NodeResources merged with this state's requests (Nodes mode).
    merged: dict[tuple[str, str], NodeResources] = field(default_factory=dict)


DECISION_QUEUE_KEY = "netaware:scheduler:decisions"


class _StateCache:
    """Per-process cache of the ClusterState and the compiled profiles, rebuilt part by part."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None
        self.redis_version: Any = None
        self.stamps: dict[str, tuple[Any, ...]] = {}
        self.stamps_checked = 0.0
        self.version_checked = 0.0  # when the Redis state version was last read
        self.timed_at = 0.0  # when usage and recent bindings were last read
        self.failed_until = 0.0
        self.failure = ""
        self.shipped = False

    def invalidate(self) -> None:
        """Re-check every part on the next request (rebuilding only what changed)."""
        with self.lock:
            self.stamps_checked = 0.0
            self.version_checked = 0.0
            self.timed_at = 0.0
            self.failed_until = 0.0

    def reset(self) -> None:
        with self.lock:
            self.snapshot = None
            self.stamps = {}
            self.stamps_checked = 0.0
            self.version_checked = 0.0
            self.timed_at = 0.0
            self.failed_until = 0.0

    def get(self, outbox: list[bytes] | None = None) -> tuple[Snapshot, bool]:
        """(snapshot, whether ``outbox`` was pushed to the decision queue in the same round trip)."""
        now = time.monotonic()
        with self.lock:
            self.shipped = False
            if now < self.failed_until:
                return Snapshot(state=None, degraded=self.failure), False
            try:
                return self._get(now, outbox), self.shipped
            except Exception as exc:  # database or Redis unreachable, or a broken row
                self.failure = _describe_failure(exc)
                self.failed_until = now + float(conf("STATE_RETRY_AFTER_SECONDS", 1.0))
                self.snapshot = None
                self.stamps = {}
                log.warning("scheduler state unavailable: %s", self.failure)
                if self.failure.startswith("database"):
                    with contextlib.suppress(Exception):
                        connection.close_if_unusable_or_obsolete()
                return Snapshot(state=None, degraded=self.failure), self.shipped

    def fresh(self, now: float) -> bool:
        """Whether the cached snapshot can be used without any round trip: the Redis version was
        read less than STATE_VERSION_CHECK_SECONDS ago and no periodic check is due. A write
        answered by another process is thus seen at most that late; a local write calls
        ``invalidate()`` and is seen by the very next request."""
        snap = self.snapshot
        return (
            snap is not None
            and snap.state is not None
            and now >= self.failed_until
            and now - self.version_checked < float(conf("STATE_VERSION_CHECK_SECONDS", 0.02))
            and now - self.stamps_checked < float(conf("STATE_DB_CHECK_SECONDS", 1.0))
            and now - self.timed_at < float(conf("STATE_MAX_AGE_SECONDS", 15.0))
        )

    def _get(self, now: float, outbox: list[bytes] | None) -> Snapshot:
        snap = self.snapshot
        if self.fresh(now):
            assert snap is not None
            return snap
        timed_due = now - self.timed_at >= float(conf("STATE_MAX_AGE_SECONDS", 15.0))
        check_due = now - self.stamps_checked >= float(conf("STATE_DB_CHECK_SECONDS", 1.0))
        try:
            # One round trip per request: the version check, plus any decisions of earlier
            # requests waiting to be queued (services._DecisionLog.outbox).
            pipe = redis_client().pipeline(transaction=False)
            if outbox:
                pipe.rpush(DECISION_QUEUE_KEY, *outbox)
                pipe.ltrim(DECISION_QUEUE_KEY, -int(conf("DECISION_QUEUE_MAX", 20000)), -1)
            pipe.get(STATE_VERSION_KEY)
            version = pipe.execute()[-1]
            self.shipped = bool(outbox)
        except redis.RedisError as exc:
            raise StateUnavailable(f"redis unavailable: {type(exc).__name__}: {exc}") from exc
        self.version_checked = now
        bumped = version != self.redis_version
        if snap is not None and snap.state is not None and not (bumped or timed_due or check_due):
            return snap
        stamps = _db(state_stamps)
        self.stamps_checked = now
        changed = {part for part, stamp in stamps.items() if self.stamps.get(part) != stamp}
        if snap is None or snap.state is None:
            changed = set(stamps)
        if not changed and not bumped and not timed_due and snap is not None:
            return snap
        self.snapshot = _db(lambda: self._rebuild(snap, changed, refresh_timed=bool(changed) or bumped or timed_due))
        if changed or bumped or timed_due:
            self.timed_at = now
        self.snapshot.built_at = now
        self.snapshot.version = version
        # The state is long-lived and large (5,000 NodeResources, dicts, specs): move it out of
        # the collector's generations so full collections stop re-scanning it on request paths.
        # (Young generations only: a full collection here would cost ~100 ms after every bind.)
        gc.collect(1)
        gc.freeze()
        self.redis_version = version
        self.stamps = stamps
        return self.snapshot

    def _rebuild(self, snap: Snapshot | None, changed: set[str], *, refresh_timed: bool) -> Snapshot:
        from apps.appgroups.selectors import all_appgroup_specs, placements_by_workload
        from apps.probes.selectors import node_usage
        from apps.topology.selectors import current_topology

        old = snap.state if snap is not None else None
        wall = timezone.now()
        topology = old.topology if old is not None and "topology" not in changed else None
        if topology is None:
            topology = current_topology() or empty_topology()
            if (old is None or topology is not old.topology) and not connection.in_atomic_block:
                # libpq keeps its input buffer as large as the biggest result it has read (the
                # topology payload: hundreds of MB at 5,000 nodes); a fresh connection frees it.
                connection.close()
        if old is not None and "graph" not in changed:
            appgroups, placements = old.appgroups, old.placements
        else:
            appgroups = tuple(all_appgroup_specs())
            placements = {k: tuple(v) for k, v in placements_by_workload().items()}
        nodes = old.nodes if old is not None and "nodes" not in changed else node_resources()
        if old is not None and not refresh_timed:
            usage, bindings = old.usage, old.recent_bindings
        else:
            usage, bindings = node_usage(now=wall), recent_bindings(now=wall)
        if snap is not None and snap.state is not None and "profiles" not in changed:
            profiles, default = snap.profiles, snap.default_profile
        else:
            profiles, default = compiled_profiles()
        state = ClusterState(topology=topology, appgroups=appgroups, placements=placements, nodes=nodes,
                             usage=usage, recent_bindings=bindings)
        return Snapshot(state=state, profiles=profiles, default_profile=default)


class StateUnavailable(RuntimeError):
    pass


def _db(fn: Any) -> Any:
    from django.db import DatabaseError, InterfaceError

    try:
        return fn()
    except (DatabaseError, InterfaceError) as exc:
        raise StateUnavailable(f"database unavailable: {type(exc).__name__}: {str(exc).strip()}") from exc


def _describe_failure(exc: BaseException) -> str:
    if isinstance(exc, StateUnavailable):
        return str(exc)
    return f"state build failed: {type(exc).__name__}: {exc}"


_cache = _StateCache()


def snapshot() -> Snapshot:
    """The current ClusterState (cached; degraded with a reason when the stores are down)."""
    return _cache.get()[0]


def snapshot_and_ship(outbox: list[bytes]) -> tuple[Snapshot, bool]:
    """``snapshot()`` that also pushes ``outbox`` to the decision queue in the same Redis round
    trip; the bool says whether it was pushed."""
    return _cache.get(outbox)


def version_check_due() -> bool:
    """Whether the next ``snapshot()`` reads the state version from Redis (so decisions waiting
    for Redis can ride along in the same round trip)."""
    return not _cache.fresh(time.monotonic())


def invalidate_state() -> None:
    """After a local write: the next request re-checks the stamps and rebuilds what changed."""
    _cache.invalidate()


def reset_state() -> None:
    """Forget this process's snapshot entirely (tests switching databases or fixtures)."""
    _cache.reset()


# --- profiles --------------------------------------------------------------------------------


def profile_rows() -> list[ProfileRow]:
    return [
        ProfileRow(p.name, p.is_default, list(p.scorers or []), list(p.filters or []), dict(p.params or {}))
        for p in SchedulerProfile.objects.all()
    ]


def compiled_profiles() -> tuple[dict[str, Any], str]:
    """Engine profiles by name (rows that fail to compile are skipped and logged) and the default."""
    from .profiles import builtin_default_name, compile_profile

    compiled: dict[str, Any] = {}
    default = ""
    for row in profile_rows():
        try:
            compiled[row.name] = compile_profile(row)
        except ValueError as exc:
            log.error("scheduler profile %r is invalid and ignored: %s", row.name, exc)
            continue
        if row.is_default:
            default = row.name
    if not compiled:
        from .profiles import builtin_profiles

        compiled = dict(builtin_profiles())
    if default not in compiled:
        default = builtin_default_name() if builtin_default_name() in compiled else next(iter(compiled))
    return compiled, default


# --- decisions and pods ----------------------------------------------------------------------


def decisions(*, pod: str = "", verb: str = "", since: datetime | None = None) -> QuerySet[Decision]:
    qs = Decision.objects.all()
    if pod:
        namespace, _, name = pod.rpartition("/")
        qs = qs.filter(pod_name=name) if not namespace else qs.filter(pod_namespace=namespace, pod_name=name)
    if verb:
        qs = qs.filter(verb=verb)
    if since is not None:
        qs = qs.filter(ts__gte=since)
    return qs


def observed_pod(*, namespace: str, name: str) -> ObservedPod | None:
    return ObservedPod.objects.filter(namespace=namespace, name=name).first()


def pods_on_node(*, node: str) -> QuerySet[ObservedPod]:
    return ObservedPod.objects.filter(node_name=node, terminal=False)


def terminal_q() -> Q:
    return Q(terminal=True)
