"""Writes of the observed-traffic pipeline (docs/traffic.md): discover the sources, pull aligned windows
of per-edge rates from Prometheus, store them, learn, and keep the observed AppGroups current.

The invariants, as in the probe pipeline (docs/pipeline.md):

* one window is stored in one transaction together with the learned edge states it moved and the
  watermark, so a crash or an unreachable Prometheus never leaves half a window learned;
* storing is an upsert keyed by (ts, source, edge), so pulling a window again changes nothing;
* a bad series (NaN, negative, a label value that is no name, too many edges) is refused with a logged
  reason (``edges.py``) and the rest of the window is used: it never fails the pull.

Observed AppGroups never overwrite a hand-written AppGroup: adopting writes ``origin observed`` only where
no AppGroup of that name exists or the one there was itself adopted.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg.errors
from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from apps.appgroups import documents
from apps.appgroups import selectors as appgroup_selectors
from apps.appgroups import services as appgroup_services
from apps.appgroups.choices import Origin
from apps.appgroups.graph import AppGroupSpec
from apps.appgroups.models import AppGroup
from apps.probes import services as probe_services
from apps.probes.prometheus import PrometheusClient, align_down, windows_between
from netaware_core import kube

from . import learning
from .adapters import ADAPTERS, MEASURES, Adapter
from .choices import Mode
from .edges import Edge, Rates, Rejections, merge_sources, parse_window_matrices
from .learning import ClusterObject, EdgeState, LearningParams
from .models import (
    EdgeRollup,
    EdgeSample,
    LearnedEdge,
    LearningMode,
    ObservedAppGroup,
    TrafficSource,
    TrafficWatermark,
)

logger = logging.getLogger(__name__)

EDGE_TABLE = EdgeSample._meta.db_table
WATERMARK_KEY = "window"
FETCH_CHUNK_WINDOWS = 10
_PULL_LOCK_KEY = 0x6E61_7472  # one traffic pull at a time ("natr")
_RETENTION_LOCK_KEY = 0x6E61_7472 + 1


class ConfigurationError(ValueError):
    """A traffic setting names something unknown (the field is in the message)."""


class AdoptRefused(Exception):
    """An observed AppGroup cannot be adopted (a hand-written AppGroup of that name exists, or it is gone)."""


# --- configuration ----------------------------------------------------------------------------------

def configured_adapters() -> list[Adapter]:
    """The adapters NETAWARE_TRAFFIC_SOURCES allows: auto (all), off (none) or a comma list."""
    raw = str(settings.NETAWARE["TRAFFIC_SOURCES"]).strip().lower()
    if raw in ("", "off", "none"):
        return []
    if raw == "auto":
        return sorted(ADAPTERS.values(), key=lambda a: a.priority)
    names = [name.strip() for name in raw.split(",") if name.strip()]
    unknown = [name for name in names if name not in ADAPTERS]
    if unknown:
        raise ConfigurationError(f"NETAWARE_TRAFFIC_SOURCES: unknown source {', '.join(unknown)} "
                                 f"(allowed: auto, off, {', '.join(ADAPTERS)})")
    return sorted((ADAPTERS[name] for name in dict.fromkeys(names)), key=lambda a: a.priority)


def learning_params() -> LearningParams:
    conf = settings.NETAWARE
    return LearningParams(alpha=float(conf["TRAFFIC_ALPHA"]), idle_seconds=float(conf["TRAFFIC_IDLE_SECONDS"]),
                          min_requests=float(conf["TRAFFIC_MIN_REQUESTS"]), min_bytes=float(conf["TRAFFIC_MIN_BYTES"]),
                          hot_requests=float(conf["TRAFFIC_HOT_EDGE_REQUESTS"]))


def default_mode() -> str:
    mode = str(settings.NETAWARE["TRAFFIC_DEFAULT_MODE"]).strip().lower()
    if mode not in Mode.values:
        raise ConfigurationError(f"NETAWARE_TRAFFIC_DEFAULT_MODE: {mode!r} is not one of {', '.join(Mode.values)}")
    return mode


def _client(prometheus_url: str | None, timeout: float | None) -> PrometheusClient:
    return PrometheusClient(prometheus_url or settings.PROMETHEUS_URL,
                            timeout=float(timeout if timeout is not None else settings.PROMETHEUS_TIMEOUT_SECONDS))


# --- discovery --------------------------------------------------------------------------------------

def discover_sources(*, client: PrometheusClient, at: int) -> dict[str, int]:
    """Which configured sources have their metric in Prometheus (series counts); stored for the API."""
    enabled = {a.name for a in configured_adapters()}
    found: dict[str, int] = {}
    now = timezone.now()
    for adapter in ADAPTERS.values():
        count = 0
        if adapter.name in enabled:
            result = client.instant(adapter.presence_query(), at=at)
            count = int(float(result[0]["value"][1])) if result else 0
            found[adapter.name] = count
        TrafficSource.objects.update_or_create(
            name=adapter.name,
            defaults={"enabled": adapter.name in enabled, "present": count > 0, "series": count, "checked_at": now})
    return found


def _present_adapters(*, client: PrometheusClient, at: int, now: datetime) -> list[Adapter]:
    configured = configured_adapters()
    rows = {row.name: row for row in TrafficSource.objects.filter(name__in=[a.name for a in configured])}
    max_age = timedelta(seconds=float(settings.NETAWARE["TRAFFIC_DISCOVERY_SECONDS"]))
    # Found nothing yet (a mesh still starting, Prometheus not scraped it yet): look again on every run,
    # it costs one instant query per source; once something is there, re-check every max_age.
    stale = not any(row.present for row in rows.values()) or any(
        row is None or row.checked_at is None or now - row.checked_at > max_age or not row.enabled
        for row in (rows.get(a.name) for a in configured))
    if stale:
        found = discover_sources(client=client, at=at)
        return [a for a in configured if found.get(a.name, 0) > 0]
    return [a for a in configured if rows[a.name].present]


# --- storing ----------------------------------------------------------------------------------------

_EDGE_UPSERT = f"""
INSERT INTO {EDGE_TABLE} AS t (ts, source, source_namespace, source_workload, target_namespace, target_workload,
                               requests, error_ratio, request_bytes, response_bytes, p50, p99)
SELECT %(ts)s, %(source)s, sn, sw, tn, tw, r, e, qb, rb, p5, p9
FROM unnest(%(sn)s::text[], %(sw)s::text[], %(tn)s::text[], %(tw)s::text[], %(r)s::float8[], %(e)s::float8[],
            %(qb)s::float8[], %(rb)s::float8[], %(p5)s::float8[], %(p9)s::float8[])
     AS u(sn, sw, tn, tw, r, e, qb, rb, p5, p9)
ON CONFLICT (ts, source, source_namespace, source_workload, target_namespace, target_workload) DO UPDATE SET
    requests = EXCLUDED.requests, error_ratio = EXCLUDED.error_ratio, request_bytes = EXCLUDED.request_bytes,
    response_bytes = EXCLUDED.response_bytes, p50 = EXCLUDED.p50, p99 = EXCLUDED.p99
WHERE (t.requests, t.error_ratio, t.request_bytes, t.response_bytes, t.p50, t.p99)
      IS DISTINCT FROM (EXCLUDED.requests, EXCLUDED.error_ratio, EXCLUDED.request_bytes, EXCLUDED.response_bytes,
                        EXCLUDED.p50, EXCLUDED.p99)
"""


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def store_edges(*, ts: datetime, source: str, edges: Mapping[Edge, Rates]) -> int:
    """Upsert one source's edges of one window (inside the caller's transaction); rows written."""
    if not edges:
        return 0
    items = sorted(edges.items())
    params: dict[str, Any] = {
        "ts": ts, "source": source,
        "sn": [e.source_namespace for e, _ in items], "sw": [e.source for e, _ in items],
        "tn": [e.target_namespace for e, _ in items], "tw": [e.target for e, _ in items],
        "r": [_num(r.requests) for _, r in items], "e": [_num(r.error_ratio) for _, r in items],
        "qb": [_num(r.request_bytes) for _, r in items], "rb": [_num(r.response_bytes) for _, r in items],
        "p5": [_num(r.p50) for _, r in items], "p9": [_num(r.p99) for _, r in items],
    }
    with connection.cursor() as cursor:
        cursor.execute(_EDGE_UPSERT, params)
        return max(cursor.rowcount, 0)


def _epoch(ts: datetime) -> float:
    return ts.timestamp()


def load_states() -> dict[Edge, EdgeState]:
    out = {}
    for row in LearnedEdge.objects.all().iterator(chunk_size=5000):
        edge = Edge(row.source_namespace, row.source_workload, row.target_namespace, row.target_workload)
        out[edge] = EdgeState(edge, row.source, row.requests, math.nan if row.error_ratio is None else row.error_ratio,
                              row.request_bytes, row.response_bytes, math.nan if row.p50 is None else row.p50,
                              math.nan if row.p99 is None else row.p99, _epoch(row.first_seen), _epoch(row.last_seen))
    return out


_STATE_TABLE = LearnedEdge._meta.db_table
_STATE_REPLACE = f"""
INSERT INTO {_STATE_TABLE} (source_namespace, source_workload, target_namespace, target_workload, source, requests,
                            error_ratio, request_bytes, response_bytes, p50, p99, first_seen, last_seen)
SELECT sn, sw, tn, tw, s, r, e, qb, rb, p5, p9, to_timestamp(f), to_timestamp(l)
FROM unnest(%(sn)s::text[], %(sw)s::text[], %(tn)s::text[], %(tw)s::text[], %(s)s::text[], %(r)s::float8[],
            %(e)s::float8[], %(qb)s::float8[], %(rb)s::float8[], %(p5)s::float8[], %(p9)s::float8[],
            %(f)s::float8[], %(l)s::float8[]) AS u(sn, sw, tn, tw, s, r, e, qb, rb, p5, p9, f, l)
"""


def save_states(states: Mapping[Edge, EdgeState]) -> None:
    """Replace the learned edge states (inside the caller's transaction)."""
    items = sorted(states.values(), key=lambda st: st.edge)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {_STATE_TABLE}")
        if not items:
            return
        cursor.execute(_STATE_REPLACE, {
            "sn": [s.edge.source_namespace for s in items], "sw": [s.edge.source for s in items],
            "tn": [s.edge.target_namespace for s in items], "tw": [s.edge.target for s in items],
            "s": [s.source for s in items], "r": [s.requests for s in items],
            "e": [_num(s.error_ratio) for s in items], "qb": [s.request_bytes for s in items],
            "rb": [s.response_bytes for s in items], "p5": [_num(s.p50) for s in items],
            "p9": [_num(s.p99) for s in items], "f": [s.first_seen for s in items], "l": [s.last_seen for s in items],
        })


# --- pulling ----------------------------------------------------------------------------------------

@dataclass
class TrafficPullResult:
    windows: int = 0
    rows_written: int = 0
    sources: list[str] = field(default_factory=list)
    edges_learned: int = 0
    rejected: dict[str, int] = field(default_factory=dict)  # source -> series/points refused
    capped: list[str] = field(default_factory=list)  # sources whose queries were capped to the busiest edges
    last_end: datetime | None = None
    skipped_locked: bool = False
    applications: int = 0


def pending_ends(*, now: datetime) -> list[int]:
    """The aligned window ends still to pull, oldest first, bounded per run (as in the probe pipeline)."""
    conf = settings.NETAWARE
    width = int(conf["PULL_WINDOW_SECONDS"])
    newest = align_down(now.timestamp() - width, width)
    cutoff = align_down(probe_services.raw_cutoff(now).timestamp(), width)
    mark = TrafficWatermark.objects.filter(key=WATERMARK_KEY).values_list("last_end", flat=True).first()
    limit = int(conf["PULL_MAX_WINDOWS_PER_RUN"])
    if mark is None:
        floor = max(cutoff, newest - width * int(conf["PULL_INITIAL_WINDOWS"]))
        return [w.end for w in windows_between(floor, newest, width)][-limit:]
    return [w.end for w in windows_between(max(int(mark.timestamp()), cutoff), newest, width)][:limit]


def _capped(adapter: Adapter, measure: str, *, rate: str, cap: int | None) -> str | None:
    text = adapter.query(measure, rate=rate)
    if text is None or cap is None:
        return text
    busiest = f"topk({cap}, {adapter.query('requests', rate=rate)})"
    return f"({text}) and on ({adapter.labels.by}) {busiest}"


def fetch_source(*, client: PrometheusClient, adapter: Adapter, ends: Sequence[int], step: int, rate: str,
                 max_edges: int, default_namespace: str) -> tuple[dict[int, dict[Edge, Rates]], Rejections, bool]:
    """One adapter's edges at every window end of ``ends``; refuses bad series (edges.py).

    The requests query is counted first: above ``max_edges`` series every measure is restricted to the
    busiest ``max_edges`` edges in PromQL (``and on (...) topk(...)``), so a million-edge explosion costs
    Prometheus one aggregation and the worker ``max_edges`` series, not a million."""
    requests = adapter.query("requests", rate=rate)
    counted = client.instant(f"count({requests})", at=ends[-1])
    total = int(float(counted[0]["value"][1])) if counted else 0
    cap = max_edges if total > max_edges else None
    matrices: dict[str, list[dict]] = {}
    for measure in MEASURES:
        text = _capped(adapter, measure, rate=rate, cap=cap)
        if text is not None:
            matrices[measure] = client.range_points(text, first_end=ends[0], last_end=ends[-1], step=step)
    windows, rejections = parse_window_matrices(matrices, adapter.labels, default_namespace=default_namespace,
                                                max_edges=max_edges, ends=ends)
    if cap is not None:
        rejections.add("edge cap", f"{total} edges in Prometheus, pulled the busiest {max_edges}", total - max_edges)
    return windows, rejections, cap is not None


def pull_traffic(*, now: datetime | None = None, prometheus_url: str | None = None, timeout: float | None = None,
                 refresh: bool = True) -> TrafficPullResult:
    """Pull, store and learn every pending window of every present source; then refresh the observed
    AppGroups (``refresh``). Raises PrometheusUnavailable when Prometheus is down (the task retries)."""
    now = now or timezone.now()
    conf = settings.NETAWARE
    width = int(conf["PULL_WINDOW_SECONDS"])
    result = TrafficPullResult()
    params = learning_params()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_PULL_LOCK_KEY])
        if not cursor.fetchone()[0]:
            result.skipped_locked = True
            return result
    try:
        with _client(prometheus_url, timeout) as client:
            ends = pending_ends(now=now)
            adapters = _present_adapters(client=client, at=ends[-1] if ends else align_down(now.timestamp(), width),
                                         now=now)
            result.sources = [a.name for a in adapters]
            states = load_states()
            priority = {a.name: a.priority for a in adapters}
            for i in range(0, len(ends), FETCH_CHUNK_WINDOWS):
                chunk = ends[i:i + FETCH_CHUNK_WINDOWS]
                fetched: dict[str, dict[int, dict[Edge, Rates]]] = {}
                for adapter in adapters:  # every source of the chunk is fetched before the first write
                    windows, rejected, capped = fetch_source(
                        client=client, adapter=adapter, ends=chunk, step=width, rate=str(conf["RATE_WINDOW"]),
                        max_edges=int(conf["TRAFFIC_MAX_EDGES"]),
                        default_namespace=str(conf["TRAFFIC_DEFAULT_NAMESPACE"]))
                    fetched[adapter.name] = windows
                    _note_rejections(adapter.name, rejected, result)
                    if capped:
                        result.capped.append(adapter.name)
                for end in chunk:
                    states = _store_window(end=end, fetched=fetched, states=states, priority=priority,
                                           params=params, result=result)
            if ends:
                for name in {a.name for a in adapters}:
                    TrafficSource.objects.filter(name=name).update(
                        rejected_last_run=result.rejected.get(name, 0))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_PULL_LOCK_KEY])
    result.edges_learned = len(states) if result.windows else LearnedEdge.objects.count()
    if refresh and result.windows:
        result.applications = len(refresh_observed(states=states, at=result.last_end or now))
    return result


def _note_rejections(source: str, rejected: Rejections, result: TrafficPullResult) -> None:
    if not rejected.total:
        return
    result.rejected[source] = result.rejected.get(source, 0) + rejected.total
    logger.warning("traffic source %s: refused %d series or points: %s", source, rejected.total, rejected.summary())
    TrafficSource.objects.filter(name=source).update(rejection_reasons=rejected.summary()[:2000])


def _store_window(*, end: int, fetched: Mapping[str, Mapping[int, Mapping[Edge, Rates]]],
                  states: dict[Edge, EdgeState], priority: Mapping[str, int], params: LearningParams,
                  result: TrafficPullResult) -> dict[Edge, EdgeState]:
    ts = datetime.fromtimestamp(end, tz=UTC)
    per_source = {name: windows.get(end, {}) for name, windows in fetched.items()}
    probe_services.ensure_partitions(start=ts, tables=(EDGE_TABLE,))
    new_states = learning.update_states(states, merge_sources(per_source, priority), at=float(end), params=params)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = off")
        for name, edges in per_source.items():
            result.rows_written += store_edges(ts=ts, source=name, edges=edges)
        save_states(new_states)
        cursor.execute(
            f"INSERT INTO {TrafficWatermark._meta.db_table} (key, last_end, updated_at) VALUES (%s, %s, now()) "
            f"ON CONFLICT (key) DO UPDATE SET last_end = GREATEST({TrafficWatermark._meta.db_table}.last_end, "
            f"EXCLUDED.last_end), updated_at = now()", [WATERMARK_KEY, ts])
    result.windows += 1
    result.last_end = ts
    return new_states


# --- the cluster's objects --------------------------------------------------------------------------

_KINDS = (("/api/v1", "pods", "Pod"), ("/apis/apps/v1", "replicasets", "ReplicaSet"),
          ("/apis/apps/v1", "deployments", "Deployment"), ("/apis/apps/v1", "statefulsets", "StatefulSet"),
          ("/apis/apps/v1", "daemonsets", "DaemonSet"), ("/apis/batch/v1", "jobs", "Job"))


def _object(kind: str, item: Mapping[str, Any]) -> ClusterObject | None:
    meta = item.get("metadata") or {}
    if not meta.get("name") or not meta.get("namespace"):
        return None
    owner = next(((ref.get("kind", ""), ref.get("name", "")) for ref in meta.get("ownerReferences") or ()
                  if ref.get("controller")), None)
    spec = item.get("spec") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    template = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    replicas = spec.get("replicas") if isinstance(spec.get("replicas"), int) else None
    return ClusterObject(kind, meta["namespace"], meta["name"], dict(meta.get("labels") or {}), owner,
                         dict(selector) if kind != "Pod" else {}, dict(template), replicas)


def cluster_objects(*, namespaces: Iterable[str]) -> list[ClusterObject]:
    """Pods and their controllers in ``namespaces`` from the Kubernetes API (none without one). A kind
    the API does not serve or refuses is skipped (logged): the rule then guesses ``app=<name>``."""
    if not kube.configured():
        return []
    out: list[ClusterObject] = []
    for namespace in sorted(set(namespaces)):
        for prefix, plural, kind in _KINDS:
            try:
                answer = kube.get_json(f"{prefix}/namespaces/{namespace}/{plural}")
            except Exception as exc:
                logger.info("traffic: cannot list %s in %s (%s); selectors guessed from names", plural, namespace,
                            kube.describe(exc))
                continue
            out += [obj for obj in (_object(kind, item) for item in answer.get("items") or ()) if obj is not None]
    return out


# --- observed AppGroups -----------------------------------------------------------------------------

def mode_for(*, namespace: str, application: str, modes: Mapping[tuple[str, str], str] | None = None) -> str:
    if modes is None:
        modes = {(m.namespace, m.application): m.mode for m in LearningMode.objects.filter(namespace=namespace)}
    return modes.get((namespace, application)) or modes.get((namespace, "")) or default_mode()


def set_mode(*, namespace: str, application: str = "", mode: str) -> LearningMode:
    if mode not in Mode.values:
        raise ConfigurationError(f"mode: {mode!r} is not one of {', '.join(Mode.values)}")
    row, _ = LearningMode.objects.update_or_create(namespace=namespace, application=application,
                                                   defaults={"mode": mode})
    # the observed rows show their mode at once; adopting waits for the next pull (or the adopt action)
    modes = {(m.namespace, m.application): m.mode for m in LearningMode.objects.filter(namespace=namespace)}
    for observed in ObservedAppGroup.objects.filter(namespace=namespace):
        ObservedAppGroup.objects.filter(pk=observed.pk).update(
            mode=mode_for(namespace=namespace, application=observed.name, modes=modes))
    return row


_OBSERVED_UPSERT = f"""
INSERT INTO {ObservedAppGroup._meta.db_table} AS o (namespace, name, document, edges, declared, diff, hot_missing, mode,
    learned_at, adopted_hash, adopt_error, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, '', '', now())
ON CONFLICT (namespace, name) DO UPDATE SET document = EXCLUDED.document, edges = EXCLUDED.edges,
    declared = EXCLUDED.declared, diff = EXCLUDED.diff, hot_missing = EXCLUDED.hot_missing, mode = EXCLUDED.mode,
    learned_at = EXCLUDED.learned_at, updated_at = now()
"""


def _declared_for(app: learning.ObservedApp, rows: Sequence[AppGroup]) -> AppGroup | None:
    """The AppGroup to compare with: the one of the same name, else the hand-written one selecting most
    of the observed workloads."""
    same = next((r for r in rows if r.name == app.name), None)
    if same is not None:
        return same
    best, best_count = None, 0
    for row in rows:
        if row.origin == Origin.OBSERVED:
            continue
        spec = appgroup_selectors.appgroup_spec(appgroup=row)
        count = sum(1 for w in app.workloads if spec.workload_for_labels({**w.labels, **w.selector}) is not None)
        if count > best_count:
            best, best_count = row, count
    return best


def _iso(epoch: float, cache: dict[float, str]) -> str:
    """ISO time of a window end; edges share a few window ends, so each is formatted once."""
    text = cache.get(epoch)
    if text is None:
        text = cache[epoch] = datetime.fromtimestamp(epoch, tz=UTC).isoformat()
    return text


def _edge_rows(app: learning.ObservedApp, times: dict[float, str]) -> list[dict[str, Any]]:
    return [{"source": st.edge.source, "target": st.edge.target, "requests": st.requests,
             "request_bytes": st.request_bytes, "response_bytes": st.response_bytes, "p50": _num(st.p50),
             "p99": _num(st.p99), "error_ratio": _num(st.error_ratio), "via": st.source,
             "first_seen": _iso(st.first_seen, times), "last_seen": _iso(st.last_seen, times)} for st in app.edges]


def refresh_observed(*, states: Mapping[Edge, EdgeState] | None = None,
                     at: datetime | None = None) -> list[ObservedAppGroup]:
    """Recompute the observed applications, their diffs and drift; adopt where the mode says so (from the
    stored learned edges and the newest learned window unless given)."""
    if states is None:
        states = load_states()
    if at is None:
        at = TrafficWatermark.objects.filter(key=WATERMARK_KEY).values_list("last_end", flat=True).first() \
            or timezone.now()
    namespaces = {st.edge.source_namespace for st in states.values()}
    modes = {(m.namespace, m.application): m.mode for m in LearningMode.objects.all()}
    off = {ns for ns in namespaces if mode_for(namespace=ns, application="", modes=modes) == Mode.OFF
           and not any(k[0] == ns and v != Mode.OFF for k, v in modes.items() if k[1])}
    known = learning.workload_identities(cluster_objects(namespaces=namespaces - off))
    apps = [a for a in learning.applications(
        (st for st in states.values() if st.edge.source_namespace not in off), known)
        if mode_for(namespace=a.namespace, application=a.name, modes=modes) != Mode.OFF]
    declared_rows: dict[str, list[AppGroup]] = {}
    row: AppGroup | ObservedAppGroup  # declared AppGroups first, then the observed ones
    for row in appgroup_selectors.appgroups_with_graph().filter(namespace__in={a.namespace for a in apps}):
        declared_rows.setdefault(row.namespace, []).append(row)
    params = learning_params()
    hot = params.hot_requests
    rows: list[ObservedAppGroup] = []
    specs: dict[tuple[str, str], AppGroupSpec] = {}
    times: dict[float, str] = {}
    for app in apps:
        declared = _declared_for(app, declared_rows.get(app.namespace, []))
        declared_spec = appgroup_selectors.appgroup_spec(appgroup=declared) if declared is not None else None
        diff = learning.diff(app, declared_spec, weight_drift_ratio=params.weight_drift_ratio)
        drifts = declared is not None and declared.origin != Origin.OBSERVED
        document = documents.document_from_spec(app.spec, annotations={
            appgroup_services.DESCRIPTION_ANNOTATION: "Learned from observed traffic (netaware traffic)"})
        specs[(app.namespace, app.name)] = app.spec
        rows.append(ObservedAppGroup(
            namespace=app.namespace, name=app.name, document=document, edges=_edge_rows(app, times),
            declared=declared.name if declared else "",
            diff={"missing": [list(m) for m in diff.missing], "extra": [list(e) for e in diff.extra],
                  "common": [list(c) for c in diff.common], "unmatched_workloads": list(diff.unmatched_workloads),
                  "reweighted": [list(r) for r in diff.reweighted],
                  "hot_reweighted": diff.hot_reweighted(hot) if drifts else 0},
            hot_missing=diff.hot_missing(hot) if drifts else 0,
            mode=mode_for(namespace=app.namespace, application=app.name, modes=modes), learned_at=at))
    with transaction.atomic(), connection.cursor() as cursor:
        # One pipelined upsert per application (Django's bulk_create sends JSON as text[] arrays, whose
        # escaping costs seconds for 50 documents of 100 edges), then the ones gone are dropped.
        cursor.executemany(_OBSERVED_UPSERT, [
            (r.namespace, r.name, Jsonb(r.document), Jsonb(r.edges), r.declared, Jsonb(r.diff), r.hot_missing, r.mode,  # type: ignore[misc]  # psycopg adapts Jsonb
             r.learned_at) for r in rows])
        keys = {(r.namespace, r.name) for r in rows}
        stale = [pk for pk, ns, name in ObservedAppGroup.objects.values_list("pk", "namespace", "name")
                 if (ns, name) not in keys]
        ObservedAppGroup.objects.filter(pk__in=stale).delete()
    kept = list(ObservedAppGroup.objects.order_by("namespace", "name"))
    for row in kept:
        if row.mode != Mode.ADOPT:
            continue
        try:
            adopt(observed=row, spec=specs[(row.namespace, row.name)])
        except (AdoptRefused, documents.DocumentError) as exc:
            logger.warning("traffic: observed AppGroup %s/%s not adopted: %s", row.namespace, row.name, exc)
            ObservedAppGroup.objects.filter(pk=row.pk).update(adopt_error=str(exc)[:2000])
    return kept


def adopt(*, observed: ObservedAppGroup, spec: AppGroupSpec | None = None) -> AppGroup:
    """Create or update the AppGroup from an observed one (``origin observed``; the sync mirrors it to
    the CRD). Refuses to replace an AppGroup that was not itself adopted: a hand-written one wins."""
    if spec is None:
        spec = documents.spec_from_document(observed.document)
    existing = AppGroup.objects.filter(namespace=spec.namespace, name=spec.name).first()
    if existing is not None and existing.origin != Origin.OBSERVED:
        raise AdoptRefused(f"AppGroup {spec.namespace}/{spec.name} exists and was written by {existing.origin}: "
                           "an observed AppGroup never overwrites it (copy the observed one into the editor instead)")
    if existing is not None:  # traffic says what the graph is, not whether the rebalancer may move its pods
        spec = replace(spec, rebalance_mode=existing.rebalance_mode)
    digest = documents.spec_hash(spec)
    if existing is not None and existing.spec_hash == digest:
        return existing
    try:
        row = appgroup_services.save_appgroup(spec=spec, origin=Origin.OBSERVED,
                                              description="Learned from observed traffic (netaware traffic)")
    except appgroup_services.AppGroupValidationError as exc:
        raise AdoptRefused(f"AppGroup {spec.namespace}/{spec.name} cannot be saved: {exc}") from exc
    ObservedAppGroup.objects.filter(pk=observed.pk).update(adopted_hash=digest, adopt_error="")
    return row


# --- retention --------------------------------------------------------------------------------------

_ROLLUP = f"""
INSERT INTO {EdgeRollup._meta.db_table} AS r (bucket, source, source_namespace, source_workload, target_namespace,
    target_workload, count, requests_mean, requests_max, request_bytes_mean, response_bytes_mean, p50_mean, p99_max,
    error_ratio_mean)
SELECT date_trunc('hour', ts, 'UTC'), source, source_namespace, source_workload, target_namespace, target_workload,
       count(*), avg(requests), max(requests), avg(request_bytes), avg(response_bytes), avg(p50), max(p99),
       avg(error_ratio)
FROM "{{table}}" WHERE {{where}} GROUP BY 1, 2, 3, 4, 5, 6
ON CONFLICT (bucket, source, source_namespace, source_workload, target_namespace, target_workload) DO UPDATE SET
    count = r.count + EXCLUDED.count,
    requests_mean = COALESCE((r.requests_mean * r.count + EXCLUDED.requests_mean * EXCLUDED.count)
                             / (r.count + EXCLUDED.count), r.requests_mean, EXCLUDED.requests_mean),
    requests_max = GREATEST(r.requests_max, EXCLUDED.requests_max),
    request_bytes_mean = COALESCE((r.request_bytes_mean * r.count + EXCLUDED.request_bytes_mean * EXCLUDED.count)
                                  / (r.count + EXCLUDED.count), r.request_bytes_mean, EXCLUDED.request_bytes_mean),
    response_bytes_mean = COALESCE((r.response_bytes_mean * r.count + EXCLUDED.response_bytes_mean * EXCLUDED.count)
                                   / (r.count + EXCLUDED.count), r.response_bytes_mean, EXCLUDED.response_bytes_mean),
    p50_mean = COALESCE((r.p50_mean * r.count + EXCLUDED.p50_mean * EXCLUDED.count) / (r.count + EXCLUDED.count),
                        r.p50_mean, EXCLUDED.p50_mean),
    p99_max = GREATEST(r.p99_max, EXCLUDED.p99_max),
    error_ratio_mean = COALESCE((r.error_ratio_mean * r.count + EXCLUDED.error_ratio_mean * EXCLUDED.count)
                                / (r.count + EXCLUDED.count), r.error_ratio_mean, EXCLUDED.error_ratio_mean)
"""


@dataclass
class TrafficRetentionResult:
    rollups: int = 0
    raw_deleted: int = 0
    partitions_dropped: int = 0
    rollups_deleted: int = 0


def apply_retention(*, now: datetime | None = None) -> TrafficRetentionResult:
    """Roll hours of raw edge samples older than RAW_RETENTION_HOURS into ``EdgeRollup`` (merged, so a
    late sample counts once) and drop them, a whole partition per transaction; expire old roll-ups."""
    now = now or timezone.now()
    cutoff = probe_services.raw_cutoff(now)
    result = TrafficRetentionResult()
    probe_services.ensure_partitions(start=now, end=now + timedelta(hours=2), tables=(EDGE_TABLE,))
    lock_timeout = float(settings.NETAWARE["RETENTION_LOCK_TIMEOUT_SECONDS"])
    for name, hour in probe_services.hourly_partitions(EDGE_TABLE):
        if hour + timedelta(hours=1) > cutoff:
            break
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_RETENTION_LOCK_KEY])
                cursor.execute(f"SET LOCAL lock_timeout = '{int(lock_timeout * 1000)}ms'")
                cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
                if not cursor.fetchone()[0]:
                    continue
                cursor.execute(f'SELECT count(*) FROM "{name}"')
                rows = cursor.fetchone()[0]
                cursor.execute(_ROLLUP.format(table=name, where="true"))
                result.rollups += cursor.rowcount
                cursor.execute(f'ALTER TABLE {EDGE_TABLE} DETACH PARTITION "{name}"')
                cursor.execute(f'DROP TABLE "{name}"')
        except OperationalError as exc:
            if not isinstance(exc.__cause__, psycopg.errors.LockNotAvailable):
                raise
            logger.warning("traffic retention: %s is in use (%s); retried next run", name, exc)
            continue
        result.raw_deleted += rows
        result.partitions_dropped += 1
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_RETENTION_LOCK_KEY])
        cursor.execute(_ROLLUP.format(table=f"{EDGE_TABLE}_default", where="ts < %s"), [cutoff])
        result.rollups += cursor.rowcount
        cursor.execute(f"DELETE FROM {EDGE_TABLE}_default WHERE ts < %s", [cutoff])
        result.raw_deleted += cursor.rowcount
        cursor.execute(f"DELETE FROM {EdgeRollup._meta.db_table} WHERE bucket < %s",
                       [now - timedelta(days=settings.NETAWARE["ROLLUP_RETENTION_DAYS"])])
        result.rollups_deleted = cursor.rowcount
    return result
