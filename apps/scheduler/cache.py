"""The extender's scheduling cache: cluster state in memory, updated by deltas, never re-read on the
request path (the way kube-scheduler's own cache works).

Framework-free (no Django, no I/O). Whoever owns it feeds it:

* nodes and pods — from a list + watch of the Kubernetes API (``runtime.py``'s informers) or, with
  no API, from the cluster watcher's tables; a list *replaces*, a watch event *upserts/removes*;
* the topology, AppGroups, scheduler profiles and node usage — loaded off the request path and
  swapped in whole;
* binds — ``assume`` applies a placement before the Kubernetes Binding call returns, ``forget``
  undoes it if the call fails, ``bound`` keeps it until the watch confirms it.

``view()`` returns an immutable snapshot (a ClusterState plus profiles and source health) in O(1)
when nothing changed; after a change it steps the previous ClusterState with ``evolve``, so a
bind costs a patch of two numbers in the usage arrays, not a rebuild. One lock guards the
mutable parts; a view, once taken, never changes.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from apps.appgroups.graph import AppGroupSpec
from apps.topology.topomath import Topology

from .scoring.common import resolve_in
from .scoring.default_plugins import NO_CONSTRAINTS, NodeConstraints, Taint, node_constraints_reason
from .scoring.plans import DEFAULT_BUDGET_S, PlanBook
from .scoring.state import ClusterState, NodeResources, NodeUsage, evolve

PodKey = tuple[str, str]  # (namespace, name)
WorkloadKey = tuple[str, str, str]  # (AppGroup namespace, AppGroup name, workload)

# Sources whose health the cache reports (``view().sources``).
SOURCES = ("nodes", "pods", "topology", "appgroups", "profiles", "usage")


@dataclass(frozen=True)
class NodeRecord:
    """A node as the cluster describes it (``requested_*`` of ``resources`` is ignored: the cache
    sums its own pods)."""

    resources: NodeResources
    ready: bool = True
    taints: tuple[Taint, ...] = ()  # spec.taints (bind checks NoSchedule/NoExecute against tolerations)

    @property
    def name(self) -> str:
        return self.resources.name


@dataclass(frozen=True)
class PodRecord:
    namespace: str
    name: str
    uid: str = ""
    node: str = ""  # spec.nodeName; "" = not bound
    labels: Mapping[str, str] = field(default_factory=dict)
    cpu_request_millicores: int = 0
    memory_request_bytes: int = 0
    scheduler_name: str = ""
    terminal: bool = False  # Succeeded/Failed or being deleted: holds no resources
    # The workload when the source knows it without labels (the database's Placement rows); None =
    # resolve from labels against the AppGroups.
    workload: WorkloadKey | None = None
    # nodeSelector, required node affinity, tolerations (the database source knows none of them)
    constraints: NodeConstraints = NO_CONSTRAINTS

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.name)


@dataclass(frozen=True)
class SourceHealth:
    synced: bool = False  # received a first complete list/load
    ok: bool = True  # the last attempt worked
    since: float = 0.0  # monotonic time of the last change of ``ok``
    detail: str = ""  # what failed


@dataclass(frozen=True)
class CacheView:
    """What one extender request scores against."""

    state: ClusterState
    profiles: Mapping[str, Any]  # name -> engine Profile
    default_profile: str
    sources: Mapping[str, SourceHealth]
    generation: int  # bumps with every change (tests, diagnostics)

    @property
    def synced(self) -> bool:
        return all(h.synced for h in self.sources.values())

    def stale_notes(self, now: float) -> tuple[str, ...]:
        """Why the scores may be out of date: each failing or not yet synced source."""
        notes = []
        for name, health in self.sources.items():
            if not health.synced:
                notes.append(f"{name}: not loaded yet" + (f" ({health.detail})" if health.detail else ""))
            elif not health.ok:
                notes.append(f"{name}: last good state from {now - health.since:.0f}s ago ({health.detail})")
        return tuple(notes)


@dataclass
class _Assumed:
    uid: str
    node: str
    at: float
    bound: bool = False  # the Binding call succeeded; kept until the watch shows the pod on ``node``
    in_doubt: bool = False  # the Binding call got no answer: it may land or not (the watch tells)


@dataclass(frozen=True)
class BindInDoubt:
    """A Binding that got no answer in time (outcome unknown), until the watch settles it."""

    namespace: str
    name: str
    uid: str
    node: str
    at: float  # monotonic time the bind was answered "unknown"


@dataclass(frozen=True)
class BindSettled:
    """What the watch showed about a bind in doubt: ``node`` where the pod is bound ("" = nowhere),
    ``bound`` whether that is the node the bind asked for, ``reason`` why not."""

    bind: BindInDoubt
    bound: bool
    node: str = ""
    reason: str = ""


class BindRefused(Exception):
    """bind must not bind this pod: the message says why (kube-scheduler shows it as the error)."""


class SchedulingCache:
    ASSUME_TTL = 30.0  # seconds; far above any bind deadline

    def __init__(self, *, scheduler_names: Collection[str], hotspot_window: float = 300.0,
                 clock: Callable[[], float] = time.monotonic, plan_budget: float = DEFAULT_BUDGET_S) -> None:
        self.scheduler_names = frozenset(scheduler_names)
        # Placement plans per AppGroup, shared by every state this cache hands out: kept while valid
        # (plans.PlanBook checks AppGroup, topology, placements and capacity on each use).
        self.plans = PlanBook(budget_s=plan_budget)
        self.hotspot_window = hotspot_window
        self.clock = clock
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeRecord] = {}
        self._pods: dict[PodKey, PodRecord] = {}
        self._assumed: dict[PodKey, _Assumed] = {}
        self._in_doubt: dict[PodKey, BindInDoubt] = {}  # binds answered "unknown", not settled yet
        self._settled: list[BindSettled] = []  # settled by the watch, not yet taken (``take_settled``)
        # What each pod contributes now: (node, cpu, memory, workload) or None.
        self._contrib: dict[PodKey, tuple[str, int, int, WorkloadKey | None] | None] = {}
        self._requested: dict[str, list[int]] = {}  # node -> [cpu, memory, pod count]
        self._member_keys: dict[WorkloadKey, list[PodKey]] = {}  # each workload's placed pods, sorted
        self._member_nodes: dict[WorkloadKey, list[str]] = {}  # and their nodes, in the same order
        self._workload_memo: dict[PodKey, tuple[PodRecord, WorkloadKey | None]] = {}  # per record object
        self._placements: dict[WorkloadKey, tuple[str, ...]] = {}
        self._bindings: deque[tuple[float, str]] = deque()  # (when, node) of recent bindings
        self._binding_counts: dict[str, int] = {}
        self._topology = Topology(nodes=(), zones=(), regions=(), latency_ms=_empty(), bandwidth_mbps=_empty(),
                                  loss_pct=_empty(), inferred=_empty(bool), stale=_empty(bool))
        self._appgroups: tuple[AppGroupSpec, ...] = ()
        self._usage: Mapping[str, NodeUsage] = {}
        self._profiles: Mapping[str, Any] = {}
        self._default_profile = ""
        self._sources: dict[str, SourceHealth] = {name: SourceHealth() for name in SOURCES}
        self._good_at: dict[str, float] = {}  # when each source last delivered good data (metrics)
        self._generation = 0
        # Dirty tracking between views.
        self._changed_nodes: set[str] = set()
        self._nodes_rebuilt = True
        self._placements_dirty = True
        self._bindings_dirty = True
        self._other_dirty = True
        self._view: CacheView | None = None
        self._next_expiry = 0.0

    # --- sources -----------------------------------------------------------------------------------

    def set_topology(self, topology: Topology) -> None:
        with self._lock:
            self._topology = topology
            self._other_dirty = True
            self._mark("topology", ok=True)

    def set_appgroups(self, appgroups: Iterable[AppGroupSpec]) -> None:
        with self._lock:
            self._appgroups = tuple(appgroups)
            self._other_dirty = True  # the next view carries them (not only the recounted placements)
            self._workload_memo.clear()
            for key in list(self._pods):
                self._recount(key)
            self._mark("appgroups", ok=True)

    def set_usage(self, usage: Mapping[str, NodeUsage]) -> None:
        with self._lock:
            self._usage = dict(usage)
            self._other_dirty = True
            self._mark("usage", ok=True)

    def set_profiles(self, profiles: Mapping[str, Any], default: str) -> None:
        with self._lock:
            self._profiles = dict(profiles)
            self._default_profile = default
            self._other_dirty = True
            self._mark("profiles", ok=True)

    def replace_nodes(self, records: Iterable[NodeRecord]) -> None:
        """A full list: nodes not in it are gone."""
        with self._lock:
            self._nodes = {r.name: r for r in records}
            self._nodes_rebuilt = True
            self._mark("nodes", ok=True)

    def upsert_node(self, record: NodeRecord) -> None:
        with self._lock:
            old = self._nodes.get(record.name)
            if old == record:
                return
            if old is None or (old.resources.zone, old.resources.region) != (
                    record.resources.zone, record.resources.region):
                self._nodes_rebuilt = True  # a new node or a new place: indexes are rebuilt
            self._nodes[record.name] = record
            self._changed_nodes.add(record.name)

    def remove_node(self, name: str) -> None:
        with self._lock:
            if self._nodes.pop(name, None) is not None:
                self._nodes_rebuilt = True

    def replace_pods(self, records: Iterable[PodRecord]) -> None:
        """A full list (a relist): pods not in it are gone; binds in flight stay assumed."""
        with self._lock:
            fresh = {r.key: r for r in records}
            for key in [k for k in self._pods if k not in fresh]:
                self._drop_pod(key)
            for record in fresh.values():
                self._put_pod(record)
            self._mark("pods", ok=True)

    def upsert_pod(self, record: PodRecord) -> None:
        with self._lock:
            self._put_pod(record)

    def remove_pod(self, namespace: str, name: str) -> None:
        with self._lock:
            self._drop_pod((namespace, name))

    def mark(self, source: str, *, ok: bool, detail: str = "") -> None:
        """Record a source's health (a failed list/load keeps the last good data)."""
        with self._lock:
            self._mark(source, ok=ok, detail=detail)

    # --- binds -------------------------------------------------------------------------------------

    def pod(self, namespace: str, name: str) -> PodRecord | None:
        with self._lock:
            return self._pods.get((namespace, name))

    def workload_of(self, record: PodRecord) -> WorkloadKey | None:
        """The pod's AppGroup workload against the AppGroups this cache holds (memoised per record)."""
        with self._lock:
            return self._workload_of(record)

    def assume(self, *, namespace: str, name: str, uid: str, node: str) -> bool:
        """Check that the pod is ours to bind and place it on ``node`` now; raises BindRefused.
        False when it is already bound there (a re-sent bind: nothing to do)."""
        key = (namespace, name)
        with self._lock:
            pod = self._pods.get(key)
            if pod is None:
                raise BindRefused(f"pod {namespace}/{name} is unknown to the scheduling cache")
            if pod.scheduler_name not in self.scheduler_names:
                raise BindRefused(f"pod {namespace}/{name} has spec.schedulerName {pod.scheduler_name!r}, not one of "
                                  f"this extender's ({', '.join(sorted(self.scheduler_names))})")
            # kube-scheduler always sends the UID: a bind without one cannot prove it means this pod.
            if not uid:
                raise BindRefused(f"pod {namespace}/{name}: PodUID is missing, which does not match the pod's UID "
                                  f"{pod.uid or '(unknown)'}")
            if pod.uid and uid != pod.uid:
                raise BindRefused(f"pod {namespace}/{name}: UID {uid} does not match the pod's UID {pod.uid}")
            if pod.terminal:
                raise BindRefused(f"pod {namespace}/{name} is terminating or finished")
            assumed = self._assumed.get(key)
            # A Binding in doubt may have landed or not: the API server, which binds a pod once,
            # decides a new bind (409 if the first landed), not a guess here.
            current = assumed.node if assumed is not None and not assumed.in_doubt else pod.node
            if current and current != node:
                raise BindRefused(f"pod {namespace}/{name} is already bound to {current}")
            target = self._nodes.get(node)
            if target is None:
                raise BindRefused(f"node {node} is unknown to the scheduling cache")
            if not target.ready:
                raise BindRefused(f"node {node} is not Ready")
            unfit = node_constraints_reason(pod.constraints, node_name=node, labels=target.resources.labels,
                                            taints=target.taints)
            if unfit is not None:
                raise BindRefused(f"pod {namespace}/{name} may not run there: {unfit}")
            if current == node and (pod.node == node or (assumed is not None and assumed.bound)):
                return False  # a re-sent bind for a placement already made
            if current != node:
                self._assumed[key] = _Assumed(uid or pod.uid, node, self.clock())
                self._recount(key)
                if assumed is None or assumed.node != node:
                    self._note_binding(node)
            return True

    def forget(self, *, namespace: str, name: str, uid: str = "") -> None:
        """The Binding failed: undo ``assume``."""
        key = (namespace, name)
        with self._lock:
            assumed = self._assumed.get(key)
            if assumed is None or (uid and assumed.uid and uid != assumed.uid) or assumed.bound:
                return
            del self._assumed[key]
            self._recount(key)

    def bound(self, *, namespace: str, name: str) -> None:
        """The Binding succeeded: keep the placement until the watch shows it."""
        with self._lock:
            assumed = self._assumed.get((namespace, name))
            if assumed is not None:
                assumed.bound = True

    def in_doubt(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        """The Binding got no answer in time: keep the placement assumed (it may well land) and
        settle it from the watch (``take_settled``), or as failed after ``ASSUME_TTL`` unseen."""
        key = (namespace, name)
        with self._lock:
            assumed = self._assumed.get(key)
            if assumed is not None and assumed.node == node and (not uid or assumed.uid in ("", uid)):
                assumed.in_doubt = True
            self._in_doubt[key] = BindInDoubt(namespace, name, uid, node, self.clock())
            pod = self._pods.get(key)
            if pod is not None:
                self._settle(key, pod)  # the watch may have been quicker than the answer

    def take_settled(self) -> list[BindSettled]:
        """Binds in doubt that the watch settled since the last call (and those unseen for longer
        than ``ASSUME_TTL``, as failed)."""
        with self._lock:
            horizon = self.clock() - self.ASSUME_TTL
            for key, doubt in [(k, d) for k, d in self._in_doubt.items() if d.at < horizon]:
                del self._in_doubt[key]
                self._settled.append(BindSettled(doubt, False, "", f"no binding seen within {self.ASSUME_TTL:g} s"))
            settled, self._settled = self._settled, []
            return settled

    def good_at(self, source: str) -> float | None:
        """Monotonic time the source last delivered good data (None: never)."""
        with self._lock:
            return self._good_at.get(source)

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)

    # --- reads -------------------------------------------------------------------------------------

    def view(self) -> CacheView:
        with self._lock:
            self._expire_bindings()
            if self._assumed and self.clock() >= self._next_expiry:
                self._next_expiry = self.clock() + 1.0
                self._expire_assumed()
            view = self._view
            if view is not None and not (self._changed_nodes or self._nodes_rebuilt or self._placements_dirty
                                         or self._bindings_dirty or self._other_dirty):
                return view
            self._generation += 1
            view = self._view = CacheView(self._build_state(view), dict(self._profiles), self._default_profile,
                                          dict(self._sources), self._generation)
            return view

    # --- internals (lock held) ---------------------------------------------------------------------

    def _mark(self, source: str, *, ok: bool, detail: str = "") -> None:
        if ok:
            self._good_at[source] = self.clock()
        old = self._sources.get(source, SourceHealth())
        synced = old.synced or ok
        since = old.since if old.ok == ok and old.synced == synced else self.clock()
        new = SourceHealth(synced, ok, since, "" if ok else detail)
        if new != old:
            self._sources[source] = new
            self._other_dirty = True

    def _settle(self, key: PodKey, pod: PodRecord | None) -> None:
        """Settle a bind in doubt from what the watch shows of its pod (None: deleted)."""
        doubt = self._in_doubt.get(key)
        if doubt is None:
            return
        if pod is None:
            outcome = BindSettled(doubt, False, "", "the pod was deleted before a binding was seen")
        elif pod.uid and doubt.uid and pod.uid != doubt.uid:
            outcome = BindSettled(doubt, False, "", f"the pod was replaced (UID {pod.uid}) before a binding was seen")
        elif pod.node:
            outcome = BindSettled(doubt, pod.node == doubt.node, pod.node,
                                  "" if pod.node == doubt.node else f"the pod was bound to {pod.node} instead")
        elif pod.terminal:
            outcome = BindSettled(doubt, False, "", "the pod finished or is terminating, never bound")
        else:
            return
        del self._in_doubt[doubt.namespace, doubt.name]
        self._settled.append(outcome)

    def _put_pod(self, record: PodRecord) -> None:
        key = record.key
        if self._in_doubt:
            self._settle(key, record)
        assumed = self._assumed.get(key)
        if assumed is not None:
            if record.uid and assumed.uid and record.uid != assumed.uid:
                del self._assumed[key]  # a new pod under the same name
            elif record.node:
                del self._assumed[key]  # the watch confirms (or overrides) the placement
            elif record.terminal:
                del self._assumed[key]
        if self._pods.get(key) == record:
            return
        self._pods[key] = record
        self._recount(key)

    def _drop_pod(self, key: PodKey) -> None:
        if self._in_doubt:
            self._settle(key, None)
        if self._pods.pop(key, None) is None:
            return
        self._assumed.pop(key, None)
        self._recount(key)
        self._contrib.pop(key, None)
        self._workload_memo.pop(key, None)

    def _workload_of(self, pod: PodRecord) -> WorkloadKey | None:
        """The pod's workload, resolved once per record (a new record or new AppGroups resolve again)."""
        if pod.workload is not None:
            return pod.workload
        hit = self._workload_memo.get(pod.key)
        if hit is not None and hit[0] is pod:
            return hit[1]
        ref, _ = resolve_in(self._appgroups, namespace=pod.namespace, labels=pod.labels)
        workload = ref.key if ref is not None else None
        self._workload_memo[pod.key] = (pod, workload)
        return workload

    def _recount(self, key: PodKey) -> None:
        """Re-derive what the pod contributes (resources on a node, a placement) and apply the delta."""
        pod = self._pods.get(key)
        new: tuple[str, int, int, WorkloadKey | None] | None = None
        if pod is not None and not pod.terminal:
            assumed = self._assumed.get(key)
            node = assumed.node if assumed is not None else pod.node
            if node:
                new = (node, pod.cpu_request_millicores, pod.memory_request_bytes, self._workload_of(pod))
        old = self._contrib.get(key)
        if old == new:
            return
        self._contrib[key] = new
        for sign, part in ((-1, old), (1, new)):
            if part is None:
                continue
            node, cpu, mem, workload = part
            totals = self._requested.setdefault(node, [0, 0, 0])
            totals[0] += sign * cpu
            totals[1] += sign * mem
            totals[2] += sign
            self._changed_nodes.add(node)
            if workload is not None:
                # Pod keys kept sorted with their nodes alongside: the placements tuple (in pod-key
                # order) is a copy of a list, not a sort and a lookup per member on every bind.
                keys = self._member_keys.setdefault(workload, [])
                nodes = self._member_nodes.setdefault(workload, [])
                at = bisect.bisect_left(keys, key)
                present = at < len(keys) and keys[at] == key
                if sign < 0:
                    if present:
                        del keys[at], nodes[at]
                elif present:
                    nodes[at] = node
                else:
                    keys.insert(at, key)
                    nodes.insert(at, node)
                if keys:
                    self._placements[workload] = tuple(nodes)
                else:
                    del self._member_keys[workload], self._member_nodes[workload]
                    self._placements.pop(workload, None)
                self._placements_dirty = True

    def _note_binding(self, node: str) -> None:
        self._bindings.append((self.clock(), node))
        self._binding_counts[node] = self._binding_counts.get(node, 0) + 1
        self._bindings_dirty = True

    def _expire_bindings(self) -> None:
        horizon = self.clock() - self.hotspot_window
        while self._bindings and self._bindings[0][0] < horizon:
            _, node = self._bindings.popleft()
            left = self._binding_counts[node] - 1
            if left:
                self._binding_counts[node] = left
            else:
                del self._binding_counts[node]
            self._bindings_dirty = True

    def _expire_assumed(self) -> None:
        """A placement assumed but neither bound nor forgotten within ``ASSUME_TTL`` (its bind never
        finished: a crashed thread) is dropped, as kube-scheduler expires assumed pods."""
        horizon = self.clock() - self.ASSUME_TTL
        for key in [k for k, a in self._assumed.items() if not a.bound and a.at < horizon]:
            del self._assumed[key]
            self._recount(key)

    def _resources(self, name: str) -> NodeResources:
        record = self._nodes[name]
        cpu, mem, count = self._requested.get(name, (0, 0, 0))
        res = record.resources
        if (res.requested_cpu_millicores, res.requested_memory_bytes, res.pod_count) == (cpu, mem, count):
            return res
        return replace(res, requested_cpu_millicores=cpu, requested_memory_bytes=mem, pod_count=count)

    def _build_state(self, previous: CacheView | None) -> ClusterState:
        changes: dict[str, Any] = {}
        old = previous.state if previous is not None else None
        changed: Collection[str] | None = ()
        if old is None or self._nodes_rebuilt:
            changes["nodes"] = {name: self._resources(name) for name in self._nodes}
            changed = None
        else:
            touched = [n for n in self._changed_nodes if n in self._nodes]
            if touched:
                nodes = dict(old.nodes)
                for name in touched:
                    nodes[name] = self._resources(name)
                changes["nodes"] = nodes
                changed = touched
        if old is None or self._placements_dirty:
            changes["placements"] = dict(self._placements)
        if old is None or self._bindings_dirty:
            changes["recent_bindings"] = dict(self._binding_counts)
        if old is None or self._other_dirty:
            changes["topology"] = self._topology
            changes["appgroups"] = self._appgroups
            changes["usage"] = self._usage
        self._changed_nodes.clear()
        self._nodes_rebuilt = self._placements_dirty = self._bindings_dirty = self._other_dirty = False
        if old is None:
            return ClusterState(**changes, plan_book=self.plans)
        return evolve(old, changed_nodes=changed, **changes)


def _empty(dtype: Any = float) -> np.ndarray:
    return np.zeros((0, 0), dtype=dtype)
