"""Reads of the scheduler app: the database-held inputs of the extender's scheduling cache
(profiles, the cluster watcher's nodes and pods, change fingerprints), a ClusterState built straight
from the database (diagnose, pages), decisions and the pod cache.

The extender never calls these on its request path: its loader thread does (``runtime.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import redis
from django.conf import settings
from django.db import connection
from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from apps.appgroups.models import AppGroup, Dependency, Placement, Workload
from apps.appgroups.selectors import all_appgroup_specs, appgroup_spec, placements_by_workload
from apps.probes.selectors import node_usage
from apps.scheduler.scoring.state import ClusterState, NodeResources, NodeUsage
from apps.topology.models import Node, TopologySnapshot
from apps.topology.selectors import current_snapshot, current_topology
from apps.topology.topomath import Topology

from .cache import NodeRecord, PodRecord
from .choices import Verb
from .evaluation.drift import DriftReport, PlacedPod, assess_drift
from .models import Decision, DriftAssessment, ObservedPod, SchedulerProfile
from .profiles import builtin_default_name, builtin_profiles, compile_profile

log = logging.getLogger(__name__)


def conf(name: str) -> Any:
    """A NETAWARE setting. Defaults live only in settings.py (from the environment), never at the
    call site, so they cannot drift apart; a missing key is a KeyError, not a silent default."""
    return settings.NETAWARE[name]


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
    window = timedelta(seconds=conf("HOTSPOT_WINDOW_SECONDS"))
    rows = (
        Decision.objects.filter(verb=Verb.BIND, ts__gte=now - window, error="")
        .exclude(node="")
        .values("node")
        .annotate(n=Count("id"))
    )
    return {r["node"]: r["n"] for r in rows}


def node_resources() -> dict[str, NodeResources]:
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
    """One consistent picture of the cluster from the database (not cached; the extender reads
    ``cache.SchedulingCache.view()``)."""
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


def node_records() -> list[NodeRecord]:
    """The cluster watcher's nodes as scheduling-cache records (the ``database`` source)."""

    return [
        NodeRecord(
            NodeResources(name=row["name"], zone=row["zone"] or "", region=row["region"] or "",
                          allocatable_cpu_millicores=row["allocatable_cpu_millicores"] or 0,
                          allocatable_memory_bytes=row["allocatable_memory_bytes"] or 0, labels=row["labels"] or {}),
            ready=bool(row["ready"]),
        )
        for row in Node.objects.values("name", "zone", "region", "labels", "allocatable_cpu_millicores",
                                       "allocatable_memory_bytes", "ready")
    ]


def pod_records() -> list[PodRecord]:
    """The cluster watcher's pods and the recorded placements as scheduling-cache records (the
    ``database`` source). A placement without a pod-cache row still counts, with its workload."""

    placed = {
        (ns, name): (uid, node, (ag_ns, ag, wl))
        for ns, name, uid, node, ag_ns, ag, wl in Placement.objects.values_list(
            "pod_namespace", "pod_name", "pod_uid", "node_name", "appgroup__namespace", "appgroup__name",
            "workload__name")
    }
    records: list[PodRecord] = []
    for row in ObservedPod.objects.values("namespace", "name", "uid", "node_name", "terminal", "labels",
                                          "cpu_request_millicores", "memory_request_bytes"):
        key = (row["namespace"], row["name"])
        placement = placed.pop(key, None)
        records.append(PodRecord(
            namespace=row["namespace"], name=row["name"], uid=row["uid"],
            node=row["node_name"] or (placement[1] if placement else ""), labels=row["labels"] or {},
            cpu_request_millicores=row["cpu_request_millicores"] or 0,
            memory_request_bytes=row["memory_request_bytes"] or 0, terminal=row["terminal"],
            workload=placement[2] if placement else None,
        ))
    records.extend(PodRecord(namespace=ns, name=name, uid=uid, node=node, workload=workload)
                   for (ns, name), (uid, node, workload) in placed.items())
    return records


# Which tables each part of the scheduling cache is loaded from; a part is reloaded only when the
# fingerprint (count, max id, newest update) of its tables changes.
def _part_models() -> dict[str, tuple[Any, ...]]:
    return {
        "nodes": (Node,),
        "pods": (ObservedPod, Placement),
        "appgroups": (AppGroup, Workload, Dependency),
        "profiles": (SchedulerProfile,),
    }


_stamp_sql: str | None = None


def _stamps_sql() -> str:
    global _stamp_sql
    if _stamp_sql is None:

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
    """Per part, a cheap summary of its tables: one round trip."""
    with connection.cursor() as cursor:
        cursor.execute(_stamps_sql())
        row = list(cursor.fetchone())
    out: dict[str, tuple[Any, ...]] = {}
    for part, models in _part_models().items():
        out[part] = tuple(row[: len(models)])
        del row[: len(models)]
    out["topology"] = (row[0],)
    return out


# --- drift ------------------------------------------------------------------------------------


def placed_pods(*, appgroup: AppGroup) -> list[PlacedPod]:
    """The AppGroup's bound pods as the drift assessment names them (pod "namespace/name")."""
    rows = (Placement.objects.filter(appgroup=appgroup).exclude(node_name="")
            .order_by("pod_namespace", "pod_name").values_list("pod_namespace", "pod_name", "workload__name", "node_name"))
    return [PlacedPod(f"{ns}/{name}", workload, node) for ns, name, workload, node in rows]


def drift_for(*, appgroup: AppGroup, state: ClusterState | None = None) -> DriftReport:
    """The AppGroup's drift now: its recorded placements on the current topology snapshot and the
    cluster watcher's node requests (``build_cluster_state``), against the plan found now. Computed
    (a plan: up to ``evaluation.drift.DRIFT_PLAN_BUDGET_S`` of work), not read: the periodic task
    stores it for pages and ``/metrics`` (``latest_drift``). ``state``: one state for several AppGroups."""
    spec = appgroup_spec(appgroup=appgroup)
    return assess_drift(state=state or build_cluster_state(), group=spec, pods=placed_pods(appgroup=appgroup))


def latest_drift(*, appgroup: AppGroup) -> DriftAssessment | None:
    """The AppGroup's stored drift (the periodic task's latest), or None before its first round."""
    return DriftAssessment.objects.filter(appgroup=appgroup).first()


def fresh_drift(*, appgroup: AppGroup) -> DriftAssessment:
    """The AppGroup's drift computed now, as an unsaved assessment (the API's ``?fresh=true``)."""
    started = time.perf_counter()
    snapshot = current_snapshot()
    report = drift_for(appgroup=appgroup)
    return DriftAssessment(appgroup=appgroup, computed_at=timezone.now(), **DriftAssessment.fields_of(report),
                           topology_version=snapshot.version if snapshot is not None else None,
                           elapsed_ms=(time.perf_counter() - started) * 1e3)


def drift_assessments() -> QuerySet[DriftAssessment]:
    """Every stored drift with its AppGroup's namespace and name (``/metrics``)."""
    return DriftAssessment.objects.select_related("appgroup").order_by("appgroup__namespace", "appgroup__name")


# --- profiles --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileRow:
    name: str
    is_default: bool
    scorers: list[dict[str, Any]]
    filters: list[Any]
    params: dict[str, Any]


def profile_rows() -> list[ProfileRow]:
    return [
        ProfileRow(p.name, p.is_default, list(p.scorers or []), list(p.filters or []), dict(p.params or {}))
        for p in SchedulerProfile.objects.all()
    ]


def compiled_profiles() -> tuple[dict[str, Any], str]:
    """Engine profiles by name (rows that fail to compile are skipped and logged) and the default."""

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

