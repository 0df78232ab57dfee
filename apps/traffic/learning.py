"""The learning rule: from observed edge rates to observed AppGroups (framework-free, docs/traffic.md).

1. **Smoothing with hysteresis** (:func:`update_states`). Each edge keeps an exponentially weighted
   moving average (``alpha``) of its rates, started at the first observed value. An edge is *active* in a
   window when it carries at least ``min_requests`` requests/s or ``min_bytes`` bytes/s; a window without
   the edge folds a zero into the averages, but the edge is only forgotten after ``idle_seconds`` without
   an active window: a quiet minute never deletes it.
2. **Workloads** (:func:`workload_identities`). A mesh names the top controller of a pod (Istio's
   ``*_workload``, Linkerd's ``deployment``) or its service (OpenTelemetry). The cluster's own objects map
   that name back to a label selector: pod -> ReplicaSet -> Deployment (or StatefulSet, DaemonSet, Job)
   owner chain; the selector is ``app.kubernetes.io/name`` when every pod of the workload carries it,
   else ``app``, else the controller's ``spec.selector.matchLabels``; pods without a controller are one
   workload per ``app.kubernetes.io/name`` / ``app`` value. The values of ``app.kubernetes.io/name``
   and ``app`` are aliases (a service graph's service names). A name the cluster does not know becomes
   ``app=<name>``, marked unresolved.
3. **Applications** (:func:`applications`). Within one namespace (cross-namespace edges are left out: an AppGroup
   is namespaced), edges between workloads of different ``app.kubernetes.io/part-of`` values are
   cut and the rest split into connected components. A component whose workloads carry one part-of value
   is that application; unlabelled workloads of a component join the part-of of their busiest neighbour;
   a component without any part-of is named after its busiest root (a workload nobody calls: the
   entry point).
4. **Sensitivities** (:func:`sensitivity`). Mean bytes per call ``m = (request + response bytes/s) /
   requests/s``: ``m <= 4 KiB`` (chatty small calls) is latency-bound, ``m >= 1 MiB`` or traffic without
   requests (a TCP stream) bandwidth-bound, log-linear in between: ``b``, then latency ``0.9 (1 - b)``,
   bandwidth ``0.9 b``, lossrate ``0.1`` (loss hurts every call a little), each rounded to 0.05 so a few
   percent of noise does not rewrite the AppGroup. A workload's weight is its share of the busiest
   workload's requests (in + out), rounded to 0.1, at least 0.1.
5. **Edge weights** (:func:`edge_weights`). An edge's traffic is ``requests/s + bytes/s / 4 KiB`` (both
   directions; a TCP stream without requests counts one call per 4 KiB, the chatty-call size of rule 4),
   divided by the median traffic of the application's edges, so the median edge weighs 1 and the
   scorers' unweighted score is the learned one's scale; rounded to two significant digits (a few percent
   of noise does not rewrite the AppGroup, whatever the edge's size), at least 0.01.
6. **Weight drift** (:func:`diff`). On the edges both graphs have, each side's weights are divided by
   that side's median over those edges (only the shape counts: a declared AppGroup without weights is all
   1, the learned one's median edge is 1); an edge whose two shares differ by ``weight_drift_ratio`` (2)
   or more either way is *reweighted*, and a hot reweighted edge is drift like a hot missing one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec

from .edges import Edge, Rates, name_error

NAME_LABEL = "app.kubernetes.io/name"
APP_LABEL = "app"
PART_OF_LABEL = "app.kubernetes.io/part-of"
# Labels a controller stamps per pod or per revision: never part of a workload's selector.
VOLATILE_LABELS = frozenset({"pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name",
                             "pod-template-generation", "batch.kubernetes.io/controller-uid", "controller-uid",
                             "batch.kubernetes.io/job-name", "job-name", "apps.kubernetes.io/pod-index",
                             "security.istio.io/tlsMode", "service.istio.io/canonical-revision"})
TOP_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
SMALL_CALL_BYTES = 4 * 1024
LARGE_CALL_BYTES = 1024 * 1024


@dataclass(frozen=True)
class LearningParams:
    alpha: float = 0.5  # weight of the newest window in the moving averages
    idle_seconds: float = 900.0  # an edge without traffic this long is forgotten
    min_requests: float = 0.01  # requests/s that make an edge active in a window
    min_bytes: float = 64.0  # bytes/s that make an edge active (TCP streams)
    hot_requests: float = 1.0  # requests/s from which a missing declared edge is drift
    weight_drift_ratio: float = 2.0  # a common edge's weight share off by this factor is reweighted (rule 6)

    def __post_init__(self) -> None:
        if not 0 < self.alpha <= 1:
            raise ValueError("alpha: must be in (0, 1]")
        if self.idle_seconds < 0 or self.min_requests < 0 or self.min_bytes < 0 or self.hot_requests < 0:
            raise ValueError("idle_seconds, min_requests, min_bytes, hot_requests: must be >= 0")
        if not self.weight_drift_ratio > 1:
            raise ValueError("weight_drift_ratio: must be > 1")


@dataclass(frozen=True)
class EdgeState:
    edge: Edge
    source: str  # the traffic source (adapter) that reported it last
    requests: float
    error_ratio: float
    request_bytes: float
    response_bytes: float
    p50: float  # seconds; NaN when unknown
    p99: float
    first_seen: float  # epoch seconds of the first active window
    last_seen: float  # epoch seconds of the newest active window

    @property
    def bytes_per_call(self) -> float:
        total = _z(self.request_bytes) + _z(self.response_bytes)
        return total / self.requests if self.requests > 0 else math.inf if total > 0 else 0.0


def _z(x: float) -> float:
    return 0.0 if math.isnan(x) else x


def _ewma(old: float, new: float, alpha: float) -> float:
    if math.isnan(new):
        return old
    if math.isnan(old):
        return new
    return alpha * new + (1 - alpha) * old


def is_active(rates: Rates, params: LearningParams) -> bool:
    requests, volume = rates.traffic()
    return requests >= params.min_requests or volume >= params.min_bytes


def update_states(states: Mapping[Edge, EdgeState], window: Mapping[Edge, tuple[str, Rates]], *, at: float,
                  params: LearningParams) -> dict[Edge, EdgeState]:
    """The edge states after one window ending at ``at`` (epoch seconds): averages moved, hysteresis kept."""
    out: dict[Edge, EdgeState] = {}
    a = params.alpha
    for edge, (source, rates) in window.items():
        active = is_active(rates, params)
        old = states.get(edge)
        if old is None:
            if not active:
                continue
            out[edge] = EdgeState(edge, source, _z(rates.requests), rates.error_ratio, _z(rates.request_bytes),
                                  _z(rates.response_bytes), rates.p50, rates.p99, at, at)
            continue
        if not active and at - old.last_seen > params.idle_seconds:
            continue  # reported, but below the thresholds for too long: forgotten
        out[edge] = EdgeState(
            edge, source, _ewma(old.requests, _z(rates.requests), a), _ewma(old.error_ratio, rates.error_ratio, a),
            _ewma(old.request_bytes, _z(rates.request_bytes), a), _ewma(old.response_bytes, _z(rates.response_bytes), a),
            _ewma(old.p50, rates.p50, a), _ewma(old.p99, rates.p99, a), old.first_seen,
            max(old.last_seen, at) if active else old.last_seen)
    for edge, old in states.items():
        if edge in out:
            continue
        if at - old.last_seen > params.idle_seconds:
            continue  # idle long enough: forgotten
        # quiet this window: decay towards zero, keep the edge
        out[edge] = replace(old, requests=(1 - a) * old.requests, request_bytes=(1 - a) * old.request_bytes,
                            response_bytes=(1 - a) * old.response_bytes)
    return out


# --- workloads from the cluster's own objects ---------------------------------------------------------

@dataclass(frozen=True)
class ClusterObject:
    """The parts of a Pod, ReplicaSet or top controller the rule reads."""

    kind: str
    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    owner: tuple[str, str] | None = None  # (kind, name) of the controlling owner reference
    match_labels: Mapping[str, str] = field(default_factory=dict)  # controllers: spec.selector.matchLabels
    template_labels: Mapping[str, str] = field(default_factory=dict)  # controllers: spec.template labels
    replicas: int | None = None


@dataclass(frozen=True)
class WorkloadIdentity:
    namespace: str
    name: str
    selector: Mapping[str, str]
    controller_kind: str = ""
    controller_name: str = ""
    part_of: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)  # labels every pod of it carries
    replicas: int = 1
    resolved: bool = True  # False: not found in the cluster, selector guessed as app=<name>


def _selector_from(labels: Mapping[str, str], fallback: Mapping[str, str]) -> dict[str, str]:
    for key in (NAME_LABEL, APP_LABEL):
        if labels.get(key):
            return {key: labels[key]}
    return dict(fallback) or {k: v for k, v in labels.items() if k not in VOLATILE_LABELS}


def workload_identities(objects: Iterable[ClusterObject]) -> dict[tuple[str, str], WorkloadIdentity]:
    """Workloads by (namespace, mesh name): controller names first, then their name/app label values."""
    objects = list(objects)
    by_key = {(o.kind, o.namespace, o.name): o for o in objects}
    pods_of: dict[tuple[str, str, str], list[ClusterObject]] = defaultdict(list)
    for obj in objects:
        if obj.kind != "Pod":
            continue
        # A pod without a controller is grouped with its siblings by its name/app label (bare demo pods).
        top = ("Pod", obj.namespace, obj.labels.get(NAME_LABEL) or obj.labels.get(APP_LABEL) or obj.name)
        owner = obj.owner
        seen = 0
        while owner is not None and seen < 5:
            top = (owner[0], obj.namespace, owner[1])
            parent = by_key.get(top)
            owner = parent.owner if parent is not None else None
            seen += 1
        pods_of[top].append(obj)
    tops = {(o.kind, o.namespace, o.name) for o in objects if o.kind in TOP_KINDS} | set(pods_of)
    out: dict[tuple[str, str], WorkloadIdentity] = {}
    aliases: dict[tuple[str, str], WorkloadIdentity] = {}
    for key in sorted(tops):
        kind, namespace, name = key
        controller = by_key.get(key)
        pods = pods_of.get(key, [])
        if pods:
            common = dict(pods[0].labels)
            for pod in pods[1:]:
                common = {k: v for k, v in common.items() if pod.labels.get(k) == v}
        else:
            common = dict(controller.template_labels) if controller is not None else {}
        common = {k: v for k, v in common.items() if k not in VOLATILE_LABELS}
        fallback = controller.match_labels if controller is not None else {}
        replicas = controller.replicas if controller is not None and controller.replicas else max(1, len(pods))
        identity = WorkloadIdentity(namespace, name, _selector_from(common, fallback),
                                    controller_kind=kind if kind != "Pod" else "", controller_name=name if kind != "Pod" else "",
                                    part_of=common.get(PART_OF_LABEL, ""), labels=common, replicas=replicas)
        out[(namespace, name)] = identity
        for label in (NAME_LABEL, APP_LABEL):
            alias = common.get(label)
            if alias and alias != name:
                aliases.setdefault((namespace, alias), identity)
    for alias_key, identity in aliases.items():
        out.setdefault(alias_key, identity)
    return out


def identity_for(namespace: str, name: str, known: Mapping[tuple[str, str], WorkloadIdentity]) -> WorkloadIdentity:
    found = known.get((namespace, name))
    if found is not None:
        return found
    return WorkloadIdentity(namespace, name, {APP_LABEL: name}, resolved=False)


# --- applications ----------------------------------------------------------------------------------

def sensitivity(state: EdgeState) -> Sensitivity:
    """Latency- vs bandwidth-bound from the mean bytes per call (rule 4 of the module docstring)."""
    m = state.bytes_per_call
    if m <= SMALL_CALL_BYTES:
        b = 0.0
    elif m >= LARGE_CALL_BYTES:
        b = 1.0
    else:
        b = math.log(m / SMALL_CALL_BYTES) / math.log(LARGE_CALL_BYTES / SMALL_CALL_BYTES)

    def r(x: float) -> float:
        return round(round(x * 20) / 20, 2)
    return Sensitivity(latency=r(0.9 * (1 - b)), bandwidth=r(0.9 * b), lossrate=0.1)


@dataclass(frozen=True)
class ObservedApp:
    namespace: str
    name: str
    workloads: tuple[WorkloadIdentity, ...]
    edges: tuple[EdgeState, ...]
    spec: AppGroupSpec


@dataclass
class _Union:
    parent: dict[str, str] = field(default_factory=dict)

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _app_name(candidates: Sequence[str]) -> str | None:
    for name in candidates:
        if name and not name_error(name, namespace=False):
            return name
    return None


def applications(states: Iterable[EdgeState], known: Mapping[tuple[str, str], WorkloadIdentity]) -> list[ObservedApp]:
    """The observed applications (rule 3) and their AppGroup specs, sorted by namespace and name."""
    per_ns: dict[str, list[EdgeState]] = defaultdict(list)
    for state in states:
        if state.edge.source_namespace == state.edge.target_namespace:
            per_ns[state.edge.source_namespace].append(state)
    apps: list[ObservedApp] = []
    for namespace, edges in sorted(per_ns.items()):
        ident: dict[str, WorkloadIdentity] = {}
        for st in edges:
            for name in (st.edge.source, st.edge.target):
                if name not in ident:
                    ident[name] = identity_for(namespace, name, known)
        # Two mesh names can resolve to one workload (a controller name and its app label): merge them.
        canonical = {name: i.name if i.resolved else name for name, i in ident.items()}
        merged: dict[tuple[str, str], EdgeState] = {}
        for st in edges:
            s, t = canonical[st.edge.source], canonical[st.edge.target]
            if s == t:
                continue
            key = (s, t)
            prev = merged.get(key)
            if prev is None or st.requests > prev.requests:
                renamed = s != st.edge.source or t != st.edge.target
                merged[key] = replace(st, edge=Edge(namespace, s, namespace, t)) if renamed else st
        workloads = {canonical[n]: ident[n] for n in ident}
        traffic: dict[str, float] = defaultdict(float)
        callers: set[str] = set()
        for (s, t), st in merged.items():
            traffic[s] += st.requests
            traffic[t] += st.requests
            callers.add(t)
        union = _Union()
        for name in workloads:
            union.find(name)
        for (s, t) in merged:
            ps, pt = workloads[s].part_of, workloads[t].part_of
            if not (ps and pt and ps != pt):
                union.join(s, t)
        components: dict[str, list[str]] = defaultdict(list)
        for name in workloads:
            components[union.find(name)].append(name)
        groups: dict[str, list[str]] = defaultdict(list)
        for members in components.values():
            labelled = {workloads[m].part_of for m in members if workloads[m].part_of}
            if len(labelled) <= 1:
                roots = sorted((m for m in members if m not in callers), key=lambda m: (-traffic[m], m))
                fallback = sorted(members, key=lambda m: (-traffic[m], m))
                app = _app_name([*labelled, *roots, *fallback]) or "observed"
                groups[app].extend(members)
                continue
            for m in members:  # several part-of values joined through unlabelled workloads
                if workloads[m].part_of:
                    groups[workloads[m].part_of].append(m)
                    continue
                neighbours = [(st.requests, workloads[o].part_of) for (s, t), st in merged.items()
                              for o in ((t,) if s == m else (s,) if t == m else ()) if workloads[o].part_of]
                groups[max(neighbours)[1] if neighbours else m].append(m)
        for app_name, members in sorted(groups.items()):
            member_set = set(members)
            app_edges = tuple(st for (s, t), st in sorted(merged.items()) if s in member_set and t in member_set)
            idents = tuple(workloads[m] for m in sorted(member_set))
            apps.append(ObservedApp(namespace, app_name, idents, app_edges,
                                    build_spec(namespace=namespace, name=app_name, workloads=idents, edges=app_edges)))
    return apps


def edge_traffic(state: EdgeState) -> float:
    """Calls per second, a byte stream counted as one call per SMALL_CALL_BYTES (rule 5)."""
    return _z(state.requests) + (_z(state.request_bytes) + _z(state.response_bytes)) / SMALL_CALL_BYTES


def edge_weights(edges: Sequence[EdgeState]) -> dict[Edge, float]:
    """Each edge's traffic over the median edge's (rule 5): the median edge 1, two significant digits, >= 0.01."""
    traffic = {st.edge: edge_traffic(st) for st in edges}
    ordered = sorted(traffic.values())
    if not ordered:
        return {}
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    if median <= 0:
        return {edge: 1.0 for edge in traffic}
    return {edge: max(0.01, float(f"{value / median:.2g}")) for edge, value in traffic.items()}


def build_spec(*, namespace: str, name: str, workloads: Sequence[WorkloadIdentity],
               edges: Sequence[EdgeState]) -> AppGroupSpec:
    load: dict[str, float] = defaultdict(float)
    deps: dict[str, list[DependencySpec]] = defaultdict(list)
    weights = edge_weights(edges)
    for st in edges:
        load[st.edge.source] += st.requests
        load[st.edge.target] += st.requests
        deps[st.edge.source].append(DependencySpec(target=st.edge.target, sensitivity=sensitivity(st),
                                                   weight=weights[st.edge]))
    busiest = max(load.values(), default=0.0) or 1.0
    specs = tuple(
        WorkloadSpec(name=w.name, selector=LabelSelector(match_labels=dict(w.selector)),
                     weight=max(0.1, round(load[w.name] / busiest, 1)),
                     dependencies=tuple(sorted(deps[w.name], key=lambda d: d.target)),
                     controller_kind=w.controller_kind, controller_name=w.controller_name, replicas=max(1, w.replicas))
        for w in workloads)
    return AppGroupSpec(namespace=namespace, name=name, workloads=specs)


# --- observed vs declared --------------------------------------------------------------------------

@dataclass(frozen=True)
class GraphDiff:
    """Edges by workload name of the declared AppGroup (observed names mapped onto it)."""

    missing: tuple[tuple[str, str, float], ...]  # observed, not declared: (source, target, requests/s)
    extra: tuple[tuple[str, str], ...]  # declared, not observed
    common: tuple[tuple[str, str], ...]
    unmatched_workloads: tuple[str, ...]  # observed workloads no declared workload selects
    # Common edges whose weight shares differ (rule 6): (source, target, declared weight, observed weight,
    # requests/s), largest disagreement first.
    reweighted: tuple[tuple[str, str, float, float, float], ...] = ()

    def hot_missing(self, threshold: float) -> int:
        return sum(1 for *_, rps in self.missing if rps >= threshold)

    def hot_reweighted(self, threshold: float) -> int:
        return sum(1 for *_, rps in self.reweighted if rps >= threshold)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def reweighted_edges(declared: Mapping[tuple[str, str], float], observed: Mapping[tuple[str, str], float],
                     requests: Mapping[tuple[str, str], float], *, ratio: float = 2.0,
                     ) -> tuple[tuple[str, str, float, float, float], ...]:
    """Common edges whose weight, as a share of its side's median over the common edges, differs by
    ``ratio`` or more (rule 6)."""
    common = sorted(set(declared) & set(observed))
    if not common:
        return ()
    d_mid = _median([declared[e] for e in common]) or 1.0
    o_mid = _median([observed[e] for e in common]) or 1.0
    out = []
    for edge in common:
        d_share, o_share = declared[edge] / d_mid, observed[edge] / o_mid
        off = max(d_share, o_share) / max(min(d_share, o_share), 1e-9)
        if off >= ratio:
            out.append((off, (edge[0], edge[1], declared[edge], observed[edge], requests.get(edge, 0.0))))
    return tuple(item for _, item in sorted(out, key=lambda x: (-x[0], x[1][0], x[1][1])))


def diff(observed: ObservedApp, declared: AppGroupSpec | None, *, weight_drift_ratio: float = 2.0) -> GraphDiff:
    """Which observed edges the declared AppGroup lacks (and the reverse), matching workloads by selector,
    and which common edges it weighs unlike the traffic does."""
    rename: dict[str, str] = {}
    unmatched: list[str] = []
    for w in observed.workloads:
        labels = {**w.labels, **w.selector}
        match = declared.workload_for_labels(labels) if declared is not None else None
        if match is None and declared is not None:
            match = next((d for d in declared.workloads if d.name == w.name), None)
        if match is None:
            unmatched.append(w.name)
        rename[w.name] = match.name if match is not None else w.name
    seen = {(rename[st.edge.source], rename[st.edge.target]): st.requests for st in observed.edges}
    observed_weights = {(rename[w.name], rename[d.target]): d.weight
                        for w in observed.spec.workloads for d in w.dependencies}
    declared_weights = ({(w.name, d.target): d.weight for w in declared.workloads for d in w.dependencies}
                        if declared is not None else {})
    declared_edges = set(declared_weights)
    missing = tuple(sorted(((s, t, rps) for (s, t), rps in seen.items() if (s, t) not in declared_edges),
                           key=lambda x: (-x[2], x[0], x[1])))
    return GraphDiff(missing=missing, extra=tuple(sorted(declared_edges - set(seen))),
                     common=tuple(sorted(declared_edges & set(seen))), unmatched_workloads=tuple(sorted(unmatched)),
                     reweighted=reweighted_edges(declared_weights, observed_weights, seen, ratio=weight_drift_ratio))
