"""kube-scheduler's extender wire format (k8s.io/kube-scheduler/extender/v1), parsed and built.

kube-scheduler marshals the extender types with Go's encoding/json and no json tags, so the
top-level keys are Go field names (``Pod``, ``Nodes``, ``NodeNames``, ``PodName`` ...) while the
embedded Kubernetes objects (v1.Pod, v1.NodeList) use their normal camelCase JSON names. Go's
decoder matches keys case-insensitively, so we accept keys in any case at every level we read;
unused pointer fields arrive as ``null``.

Framework-free on purpose: the parsers take bytes and return frozen dataclasses, raise
``WireError`` naming the offending field, and the builders return bytes ready to send.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from apps.scheduler.cache import NodeRecord, PodRecord
from apps.scheduler.scoring.default_plugins import (
    FIELD_SELECTOR_OPERATORS,
    NO_CONSTRAINTS,
    NODE_SELECTOR_OPERATORS,
    TOLERATION_OPERATORS,
    NodeConstraints,
    NodeSelectorTerm,
    Requirement,
    Taint,
    Toleration,
)
from apps.scheduler.scoring.state import NodeResources, PodInfo
from netaware_core import quantity

_T = TypeVar("_T")

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
# Bandwidth requested as an extended resource (bits/s), the KEP's "networkAware.com/bandwidth".
BANDWIDTH_RESOURCES = ("netaware.io/bandwidth", "networkAware.com/bandwidth")


class WireError(ValueError):
    """The request body is not what kube-scheduler sends; the message names the field."""


class WireInterner:
    """What one extender process has already parsed or encoded, reused across requests: kube-scheduler
    sends the same Pod to filter and prioritize (and again on retries), the same Node objects cycle
    after cycle, and the same host names in every HostPriorityList.

    * ``nodes``: (name, resourceVersion) -> (NodeResources, ready); a node's resourceVersion changes
      whenever any of it does;
    * ``pods``: (uid, resourceVersion) -> (name/namespace/labels/annotations, spec, PodInfo), served
      only while every field the parse reads is equal (dict equality runs in C; parsing quantities
      and containers does not);
    * ``hosts``: host name -> ``{"Host":"<name>","Score":`` JSON-escaped once, so an answer is one
      bytes join (~2x faster than building and serializing hundreds of dicts).

    Owned by the extender runtime and passed in explicitly (no module state); each map is cleared
    when it reaches its bound. Dict reads and writes are atomic under the GIL, so request threads
    share it without a lock.
    """

    def __init__(self, *, nodes_max: int = 20000, pods_max: int = 4096, hosts_max: int = 50000) -> None:
        self.nodes: dict[tuple[str, str], tuple[NodeResources, bool]] = {}
        self.pods: dict[tuple[str, str], tuple[Any, Any, PodInfo]] = {}
        self.hosts: dict[str, bytes] = {}
        self.nodes_max, self.pods_max, self.hosts_max = nodes_max, pods_max, hosts_max

    def host_prefix(self, host: str) -> bytes:
        prefix = self.hosts.get(host)
        if prefix is None:
            if len(self.hosts) >= self.hosts_max:
                self.hosts.clear()
            prefix = self.hosts[host] = _host_prefix(host)
        return prefix


# --- helpers ---------------------------------------------------------------------------------


def get_ci(obj: Mapping[str, Any], key: str) -> Any:
    """``obj[key]`` with Go's case-insensitive key matching (exact match wins)."""
    if key in obj:
        return obj[key]
    lowered = key.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == lowered:
            return v
    return None


def _mapping(value: Any, where: str, *, allow_null: bool = True) -> Mapping[str, Any]:
    if value is None:
        if allow_null:
            return {}
        raise WireError(f"{where}: required, got null")
    if not isinstance(value, dict):
        raise WireError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _string(value: Any, where: str, *, required: bool = False) -> str:
    if value is None or value == "":
        if required:
            raise WireError(f"{where}: required")
        return ""
    if not isinstance(value, str):
        raise WireError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    raw = _mapping(value, where)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if not isinstance(v, str):
            raise WireError(f"{where}.{k}: expected a string, got {type(v).__name__}")
        out[k] = v
    return out


def load_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"body: malformed JSON ({exc})") from exc


# Bodies from this size on are parsed with the cyclic garbage collector paused: decoding a 15 MB
# NodeList creates ~1.5 million containers, and the collections they trigger (each re-scanning what
# the decode made so far) cost ~4x the decode itself. Nothing parsed here forms a cycle; the pause
# ends with the parse (the last of concurrent parses turns it back on).
GC_PAUSE_BYTES = 1 << 20
_gc_lock = threading.Lock()
_gc_state = {"pausers": 0, "was_enabled": True}


@contextmanager
def _collector_paused(size: int) -> Iterator[None]:
    if size < GC_PAUSE_BYTES:
        yield
        return
    with _gc_lock:
        if _gc_state["pausers"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
        _gc_state["pausers"] += 1
        gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["pausers"] -= 1
            if _gc_state["pausers"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


# --- Kubernetes resource quantities (netaware_core.quantity: one parser for the whole project) -------------


def _quantity(parse: Callable[[Any], _T], value: Any, where: str) -> _T:
    """Apply one of netaware_core.quantity's parsers, its error named by the field's path."""
    try:
        return parse(value)
    except quantity.QuantityError as exc:
        raise WireError(f"{where}: {exc}") from exc


def parse_quantity(value: Any, where: str) -> float:
    """A resource.Quantity (``"500m"``, ``"16Gi"``, ``"1e3"``, or a bare number) as a float."""
    return float(_quantity(quantity.parse_quantity, value, where))


def _cpu_millicores(value: Any, where: str) -> int:
    """Millicores rounded up, as kube-scheduler's MilliValue() does."""
    return _quantity(quantity.cpu_millicores, value, where)


def _bytes(value: Any, where: str) -> int:
    return _quantity(quantity.memory_bytes, value, where)


# --- objects ---------------------------------------------------------------------------------


def _container_requests(containers: Any, where: str) -> list[tuple[int, int, float]]:
    if containers is None:
        return []
    if not isinstance(containers, list):
        raise WireError(f"{where}: expected a list, got {type(containers).__name__}")
    out: list[tuple[int, int, float]] = []
    for i, container in enumerate(containers):
        c = _mapping(container, f"{where}[{i}]")
        resources = _mapping(get_ci(c, "resources"), f"{where}[{i}].resources")
        requests = _mapping(get_ci(resources, "requests"), f"{where}[{i}].resources.requests")
        cpu = requests.get("cpu")
        mem = requests.get("memory")
        bandwidth = 0.0
        for resource in BANDWIDTH_RESOURCES:
            if requests.get(resource) is not None:
                bandwidth += parse_quantity(requests[resource], f"{where}[{i}].resources.requests.{resource}")
        out.append(
            (
                _cpu_millicores(cpu, f"{where}[{i}].resources.requests.cpu") if cpu is not None else 0,
                _bytes(mem, f"{where}[{i}].resources.requests.memory") if mem is not None else 0,
                bandwidth,
            )
        )
    return out


def parse_pod(value: Any, where: str = "Pod") -> PodInfo:
    """A v1.Pod object → PodInfo (effective requests as kube-scheduler computes them)."""
    pod = _mapping(value, where, allow_null=False)
    meta = _mapping(get_ci(pod, "metadata"), f"{where}.metadata")
    spec = _mapping(get_ci(pod, "spec"), f"{where}.spec")
    containers = _container_requests(get_ci(spec, "containers"), f"{where}.spec.containers")
    init = _container_requests(get_ci(spec, "initContainers"), f"{where}.spec.initContainers")
    cpu = max(sum(c for c, _, _ in containers), max((c for c, _, _ in init), default=0))
    mem = max(sum(m for _, m, _ in containers), max((m for _, m, _ in init), default=0))
    bandwidth = max(sum(b for _, _, b in containers), max((b for _, _, b in init), default=0.0))
    overhead = _mapping(get_ci(spec, "overhead"), f"{where}.spec.overhead")
    if overhead.get("cpu") is not None:
        cpu += _cpu_millicores(overhead["cpu"], f"{where}.spec.overhead.cpu")
    if overhead.get("memory") is not None:
        mem += _bytes(overhead["memory"], f"{where}.spec.overhead.memory")
    return PodInfo(
        namespace=_string(get_ci(meta, "namespace"), f"{where}.metadata.namespace") or "default",
        name=_string(get_ci(meta, "name"), f"{where}.metadata.name", required=True),
        uid=_string(get_ci(meta, "uid"), f"{where}.metadata.uid"),
        labels=_string_map(get_ci(meta, "labels"), f"{where}.metadata.labels"),
        annotations=_string_map(get_ci(meta, "annotations"), f"{where}.metadata.annotations"),
        cpu_request_millicores=cpu,
        memory_request_bytes=mem,
        bandwidth_request_bps=bandwidth,
        zone_max_skew=_zone_max_skew(get_ci(spec, "topologySpreadConstraints"), f"{where}.spec.topologySpreadConstraints"),
    )


ZONE_LABEL = "topology.kubernetes.io/zone"


def _zone_max_skew(value: Any, where: str) -> int:
    """The smallest maxSkew of the hard (DoNotSchedule, kube-scheduler's default) zone spread
    constraints, 0 when there is none; other keys and ScheduleAnyway are kube-scheduler's alone."""
    if value is None:
        return 0
    if not isinstance(value, list):
        raise WireError(f"{where}: expected a list, got {type(value).__name__}")
    skews = []
    for i, item in enumerate(value):
        entry = _mapping(item, f"{where}[{i}]")
        if get_ci(entry, "topologyKey") != ZONE_LABEL or (get_ci(entry, "whenUnsatisfiable") or "DoNotSchedule") != "DoNotSchedule":
            continue
        skew = _int(get_ci(entry, "maxSkew"), f"{where}[{i}].maxSkew")
        if skew < 1:
            raise WireError(f"{where}[{i}].maxSkew: must be >= 1, got {skew}")
        skews.append(skew)
    return min(skews, default=0)


def pod_node_name(value: Mapping[str, Any]) -> str:
    spec = get_ci(value, "spec")
    return (get_ci(spec, "nodeName") or "") if isinstance(spec, dict) else ""


def pod_uid(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    meta = get_ci(value, "metadata")
    uid = get_ci(meta, "uid") if isinstance(meta, dict) else None
    return uid if isinstance(uid, str) else ""


def _first_label(labels: Mapping[str, str], keys: Sequence[str]) -> str:
    for key in keys:
        if labels.get(key):
            return labels[key]
    return ""


def node_ready(status: Mapping[str, Any]) -> bool:
    conditions = get_ci(status, "conditions")
    if not isinstance(conditions, list):
        return True
    for condition in conditions:
        if isinstance(condition, dict) and get_ci(condition, "type") == "Ready":
            return bool(get_ci(condition, "status") == "True")
    return True


@dataclass(frozen=True)
class NodeObject:
    """A full v1.Node as sent when nodeCacheCapable is false; ``raw`` is echoed back untouched."""

    resources: NodeResources
    ready: bool
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    version: str = ""  # metadata.resourceVersion ("" when absent)

    @property
    def name(self) -> str:
        return self.resources.name


def parse_node(value: Any, where: str, interner: WireInterner | None = None) -> NodeObject:
    """A v1.Node object; with ``interner``, a node already parsed at the same resourceVersion is not
    parsed again."""
    node = _mapping(value, where, allow_null=False)
    meta = _mapping(get_ci(node, "metadata"), f"{where}.metadata")
    if interner is None:
        return _parse_node(node, meta, where)
    name = get_ci(meta, "name")
    version = get_ci(meta, "resourceVersion")
    key = (name, version) if isinstance(name, str) and isinstance(version, str) and name and version else None
    if key is not None:
        hit = interner.nodes.get(key)
        if hit is not None:
            return NodeObject(resources=hit[0], ready=hit[1], raw=node, version=version)
    parsed = _parse_node(node, meta, where)
    if key is not None:
        if len(interner.nodes) >= interner.nodes_max:
            interner.nodes.clear()
        interner.nodes[key] = (parsed.resources, parsed.ready)
    return parsed


def _parse_node(node: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> NodeObject:
    status = _mapping(get_ci(node, "status"), f"{where}.status")
    labels = _string_map(get_ci(meta, "labels"), f"{where}.metadata.labels")
    allocatable = _mapping(get_ci(status, "allocatable"), f"{where}.status.allocatable")
    cpu = allocatable.get("cpu")
    mem = allocatable.get("memory")
    resources = NodeResources(
        name=_string(get_ci(meta, "name"), f"{where}.metadata.name", required=True),
        zone=_first_label(labels, ZONE_LABELS),
        region=_first_label(labels, REGION_LABELS),
        allocatable_cpu_millicores=_cpu_millicores(cpu, f"{where}.status.allocatable.cpu") if cpu is not None else 0,
        allocatable_memory_bytes=_bytes(mem, f"{where}.status.allocatable.memory") if mem is not None else 0,
        labels=labels,
    )
    version = get_ci(meta, "resourceVersion")
    return NodeObject(resources=resources, ready=node_ready(status), raw=node,
                      version=version if isinstance(version, str) else "")


# --- requests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtenderArgs:
    pod: PodInfo
    node_names: tuple[str, ...] | None
    nodes: tuple[NodeObject, ...] | None
    # Nodes mode: names of the Node objects left unparsed when ``parse_until`` passed (not candidates).
    unparsed: tuple[str, ...] = ()

    @property
    def candidates(self) -> tuple[str, ...]:
        if self.node_names is not None:
            return self.node_names
        return tuple(n.name for n in self.nodes or ())


def _top(body: bytes) -> Mapping[str, Any]:
    data = load_json(body)
    if not isinstance(data, dict):
        raise WireError(f"body: expected a JSON object, got {type(data).__name__}")
    return data


def _parse_pod_interned(value: Any, interner: WireInterner) -> PodInfo:
    meta = get_ci(value, "metadata") if isinstance(value, dict) else None
    if not isinstance(meta, dict):
        return parse_pod(value)
    uid, version = get_ci(meta, "uid"), get_ci(meta, "resourceVersion")
    if not (isinstance(uid, str) and uid and isinstance(version, str) and version):
        return parse_pod(value)
    seen = (get_ci(meta, "name"), get_ci(meta, "namespace"), get_ci(meta, "labels"), get_ci(meta, "annotations"))
    spec = get_ci(value, "spec")
    hit = interner.pods.get((uid, version))
    if hit is not None and hit[0] == seen and hit[1] == spec:
        return hit[2]
    pod = parse_pod(value)
    if len(interner.pods) >= interner.pods_max:
        interner.pods.clear()
    interner.pods[(uid, version)] = (seen, spec, pod)
    return pod


def _item_name(item: Any, where: str) -> str:
    meta = get_ci(item, "metadata") if isinstance(item, dict) else None
    name = get_ci(meta, "name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and name else where


def _parse_nodes(items: list[Any], interner: WireInterner | None,
                 parse_until: float | None) -> tuple[tuple[NodeObject, ...], tuple[str, ...]]:
    """The Node objects parsed before ``parse_until`` (perf_counter; None: all) and the names of the rest."""
    if parse_until is None:
        return tuple(parse_node(item, f"Nodes.items[{i}]", interner) for i, item in enumerate(items)), ()
    parsed: list[NodeObject] = []
    for start in range(0, len(items), 256):
        if time.perf_counter() >= parse_until:
            rest = tuple(_item_name(item, f"Nodes.items[{i}]") for i, item in enumerate(items[start:], start))
            return tuple(parsed), rest
        parsed.extend(parse_node(item, f"Nodes.items[{i}]", interner)
                      for i, item in enumerate(items[start:start + 256], start))
    return tuple(parsed), ()


def parse_extender_args(body: bytes, interner: WireInterner | None = None, *,
                        parse_until: float | None = None) -> ExtenderArgs:
    """ExtenderArgs; ``interner`` (the extender runtime's) skips re-parsing what it has seen. With
    ``parse_until`` (a ``time.perf_counter()`` value), Node objects not reached by then are left
    unparsed and named in ``unparsed`` (the extender's deadline; names-only requests cost no parse)."""
    with _collector_paused(len(body)):
        return _extender_args(body, interner, parse_until)


def _extender_args(body: bytes, interner: WireInterner | None, parse_until: float | None) -> ExtenderArgs:
    data = _top(body)
    raw_pod = get_ci(data, "Pod")
    pod = parse_pod(raw_pod) if interner is None else _parse_pod_interned(raw_pod, interner)
    raw_names = get_ci(data, "NodeNames")
    raw_nodes = get_ci(data, "Nodes")
    names: tuple[str, ...] | None = None
    nodes: tuple[NodeObject, ...] | None = None
    if raw_names is not None:
        if not isinstance(raw_names, list):
            raise WireError(f"NodeNames: expected a list of strings, got {type(raw_names).__name__}")
        names = tuple(raw_names)
        # C-speed check first (a per-name Python loop costs ~0.1 ms per 500 names); the loop only
        # runs to name the offending entry.
        if not set(map(type, names)) <= {str} or "" in names:
            for i, name in enumerate(names):
                if not isinstance(name, str) or not name:
                    raise WireError(f"NodeNames[{i}]: expected a node name, got {name!r}")
    elif raw_nodes is not None:
        node_list = _mapping(raw_nodes, "Nodes", allow_null=False)
        items = get_ci(node_list, "items")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise WireError(f"Nodes.items: expected a list, got {type(items).__name__}")
        nodes, unparsed = _parse_nodes(items, interner, parse_until)
        return ExtenderArgs(pod=pod, node_names=None, nodes=nodes, unparsed=unparsed)
    else:
        raise WireError("NodeNames and Nodes: one of them is required (both are null)")
    return ExtenderArgs(pod=pod, node_names=names, nodes=nodes)


@dataclass(frozen=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def parse_binding_args(body: bytes) -> BindingArgs:
    data = _top(body)
    return BindingArgs(
        pod_name=_string(get_ci(data, "PodName"), "PodName", required=True),
        pod_namespace=_string(get_ci(data, "PodNamespace"), "PodNamespace") or "default",
        pod_uid=_string(get_ci(data, "PodUID"), "PodUID"),
        node=_string(get_ci(data, "Node"), "Node", required=True),
    )


@dataclass(frozen=True)
class MetaVictims:
    uids: tuple[str, ...]
    num_pdb_violations: int


@dataclass(frozen=True)
class PreemptionArgs:
    pod: PodInfo
    # Always normalized to the meta form (the answer is always NodeNameToMetaVictims).
    victims: Mapping[str, MetaVictims]


def _int(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"{where}: expected an integer, got {type(value).__name__}")
    return value


def _meta_pod_uid(value: Any, where: str) -> str:
    return _string(get_ci(_mapping(value, where), "UID"), f"{where}.UID")


def _victims(raw: Any, name: str, uid_of: Callable[[Any, str], str]) -> dict[str, MetaVictims]:
    """Either victims map (whole pods or their UIDs only) as UIDs and PDB violations per node."""
    victims: dict[str, MetaVictims] = {}
    for node, entry in _mapping(raw, name).items():
        where = f"{name}.{node}"
        e = _mapping(entry, where)
        pods = get_ci(e, "Pods") or []
        if not isinstance(pods, list):
            raise WireError(f"{where}.Pods: expected a list, got {type(pods).__name__}")
        uids = tuple(uid_of(p, f"{where}.Pods[{i}]") for i, p in enumerate(pods))
        victims[node] = MetaVictims(uids, _int(get_ci(e, "NumPDBViolations"), f"{where}.NumPDBViolations"))
    return victims


def parse_preemption_args(body: bytes) -> PreemptionArgs:
    data = _top(body)
    pod = parse_pod(get_ci(data, "Pod"))
    meta = get_ci(data, "NodeNameToMetaVictims")
    full = get_ci(data, "NodeNameToVictims")
    victims: dict[str, MetaVictims] = {}
    if meta is not None:
        victims = _victims(meta, "NodeNameToMetaVictims", _meta_pod_uid)
    elif full is not None:
        victims = _victims(full, "NodeNameToVictims", lambda p, _where: pod_uid(p))
    return PreemptionArgs(pod=pod, victims=victims)


# --- responses -------------------------------------------------------------------------------


def filter_result(
    *,
    args: ExtenderArgs | None,
    passed: Sequence[str],
    failed: Mapping[str, str],
    unresolvable: Mapping[str, str],
    error: str = "",
) -> bytes:
    """ExtenderFilterResult: ``NodeNames`` if the request had names, else ``Nodes`` (full objects)."""
    nodes: Any = None
    names: Any = None
    if args is not None and args.nodes is not None:
        keep = set(passed)
        nodes = {"metadata": {}, "items": [n.raw for n in args.nodes if n.name in keep]}
    elif args is not None:
        names = list(passed)
    return orjson.dumps(
        {
            "Nodes": nodes,
            "NodeNames": names,
            "FailedNodes": dict(failed),
            "FailedAndUnresolvableNodes": dict(unresolvable),
            "Error": error,
        }
    )


def filter_error(error: str) -> bytes:
    return filter_result(args=None, passed=(), failed={}, unresolvable={}, error=error)


_SCORE_SUFFIX = tuple(b"%d}" % i for i in range(11))
_SCORE_SUFFIX_COMMA = tuple(b"%d}," % i for i in range(11))


def _host_prefix(host: str) -> bytes:
    return b'{"Host":' + orjson.dumps(host) + b',"Score":'


def _score_suffix(score: int) -> bytes:
    return _SCORE_SUFFIX[score] if 0 <= score <= 10 else b"%d}" % score


def prioritize_result(hosts: Sequence[str], scores: Sequence[int], interner: WireInterner | None = None) -> bytes:
    """HostPriorityList: a bare list of ``{"Host", "Score"}`` with integer scores 0..10."""
    if len(hosts) != len(scores):
        raise ValueError(f"prioritize_result: {len(hosts)} hosts but {len(scores)} scores")
    if not hosts:
        return b"[]"
    if interner is not None and isinstance(scores, list) and min(scores) >= 0:
        # ints 0..10 from ndarray.tolist() and hosts seen before: prefixes and '<score>},' suffixes
        # interleaved by C-level slice assignment, one join (no per-host Python bytecode).
        try:
            parts: list[bytes] = [b""] * (2 * len(hosts))
            parts[0::2] = map(interner.hosts.__getitem__, hosts)
            parts[1::2] = map(_SCORE_SUFFIX_COMMA.__getitem__, scores)
        except (KeyError, IndexError, TypeError, ValueError):  # a new host, a score > 10, a non-int
            pass
        else:
            parts[-1] = parts[-1][:-1]
            return b"[" + b"".join(parts) + b"]"
    prefix = interner.host_prefix if interner is not None else _host_prefix
    values = [int(s) for s in scores]
    return b"[" + b",".join([prefix(h) + _score_suffix(s) for h, s in zip(hosts, values, strict=True)]) + b"]"


def bulk_prioritize_result(hosts: Sequence[str], scores: Sequence[int]) -> bytes:
    """A HostPriorityList for tens of thousands of hosts, encoded by orjson in one call (the interner
    holds at most ``hosts_max`` prefixes; an answer near its deadline must not wait on per-host Python)."""
    return orjson.dumps([{"Host": h, "Score": int(s)} for h, s in zip(hosts, scores, strict=True)])


def binding_result(error: str = "") -> bytes:
    return orjson.dumps({"Error": error})


def preemption_result(victims: Mapping[str, MetaVictims]) -> bytes:
    return orjson.dumps(
        {
            "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": uid} for uid in v.uids], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
        }
    )


# --- informer objects --------------------------------------------------------------------------


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _requirements(value: Any, where: str, operators: Sequence[str]) -> tuple[Requirement, ...]:
    out = []
    for i, raw in enumerate(_list(value, where)):
        req = _mapping(raw, f"{where}[{i}]", allow_null=False)
        operator = _string(get_ci(req, "operator"), f"{where}[{i}].operator", required=True)
        if operator not in operators:
            raise WireError(f"{where}[{i}].operator: {operator!r} is not one of {', '.join(operators)}")
        values = _list(get_ci(req, "values"), f"{where}[{i}].values")
        for j, v in enumerate(values):
            _string(v, f"{where}[{i}].values[{j}]")
        out.append(Requirement(_string(get_ci(req, "key"), f"{where}[{i}].key", required=True), operator,
                               tuple(values)))
    return tuple(out)


def pod_node_constraints(spec: Mapping[str, Any], where: str = "pod.spec") -> NodeConstraints:
    """``spec.nodeSelector``, the required node affinity and ``spec.tolerations`` of a v1.Pod."""
    selector = _string_map(get_ci(spec, "nodeSelector"), f"{where}.nodeSelector")
    affinity = _mapping(get_ci(_mapping(get_ci(spec, "affinity"), f"{where}.affinity"), "nodeAffinity"),
                        f"{where}.affinity.nodeAffinity")
    at = f"{where}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = get_ci(affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    terms: tuple[NodeSelectorTerm, ...] | None = None
    if required is not None:
        raw_terms = _list(get_ci(_mapping(required, at), "nodeSelectorTerms"), f"{at}.nodeSelectorTerms")
        terms = tuple(
            NodeSelectorTerm(
                _requirements(get_ci(term, "matchExpressions"), f"{at}.nodeSelectorTerms[{i}].matchExpressions",
                              NODE_SELECTOR_OPERATORS),
                _requirements(get_ci(term, "matchFields"), f"{at}.nodeSelectorTerms[{i}].matchFields",
                              FIELD_SELECTOR_OPERATORS),
            )
            for i, term in enumerate(_mapping(t, f"{at}.nodeSelectorTerms[{i}]", allow_null=False)
                                     for i, t in enumerate(raw_terms))
        )
    tolerations = []
    for i, raw in enumerate(_list(get_ci(spec, "tolerations"), f"{where}.tolerations")):
        tol = _mapping(raw, f"{where}.tolerations[{i}]", allow_null=False)
        operator = _string(get_ci(tol, "operator"), f"{where}.tolerations[{i}].operator") or "Equal"
        if operator not in TOLERATION_OPERATORS:
            raise WireError(f"{where}.tolerations[{i}].operator: {operator!r} is not one of "
                            f"{', '.join(TOLERATION_OPERATORS)}")
        tolerations.append(Toleration(
            key=_string(get_ci(tol, "key"), f"{where}.tolerations[{i}].key"), operator=operator,
            value=_string(get_ci(tol, "value"), f"{where}.tolerations[{i}].value"),
            effect=_string(get_ci(tol, "effect"), f"{where}.tolerations[{i}].effect")))
    if not selector and terms is None and not tolerations:
        return NO_CONSTRAINTS
    return NodeConstraints(node_selector=selector, required_terms=terms, tolerations=tuple(tolerations))


def node_taints(spec: Any, where: str = "node.spec") -> tuple[Taint, ...]:
    if not isinstance(spec, dict):
        return ()
    taints = []
    for i, raw in enumerate(_list(get_ci(spec, "taints"), f"{where}.taints")):
        taint = _mapping(raw, f"{where}.taints[{i}]", allow_null=False)
        taints.append(Taint(_string(get_ci(taint, "key"), f"{where}.taints[{i}].key", required=True),
                            _string(get_ci(taint, "value"), f"{where}.taints[{i}].value"),
                            _string(get_ci(taint, "effect"), f"{where}.taints[{i}].effect", required=True)))
    return tuple(taints)



def pod_record(obj: Mapping[str, Any]) -> PodRecord:
    """A v1.Pod from a list/watch → what the scheduling cache keeps (raises WireError when malformed)."""
    info = parse_pod(obj, "pod")
    meta = _mapping(get_ci(obj, "metadata"), "pod.metadata")
    spec = _mapping(get_ci(obj, "spec"), "pod.spec")
    status = _mapping(get_ci(obj, "status"), "pod.status")
    phase = get_ci(status, "phase") or ""
    return PodRecord(
        namespace=info.namespace,
        name=info.name,
        uid=info.uid,
        node=_string(get_ci(spec, "nodeName"), "pod.spec.nodeName"),
        labels=info.labels,
        cpu_request_millicores=info.cpu_request_millicores,
        memory_request_bytes=info.memory_request_bytes,
        scheduler_name=_string(get_ci(spec, "schedulerName"), "pod.spec.schedulerName") or "default-scheduler",
        terminal=phase in ("Succeeded", "Failed") or bool(get_ci(meta, "deletionTimestamp")),
        constraints=pod_node_constraints(spec),
    )


def node_record(obj: Mapping[str, Any]) -> NodeRecord:
    """A v1.Node from a list/watch → what the scheduling cache keeps. Unschedulable (cordoned) nodes
    count as not ready for bind, as kube-scheduler will not place new pods there."""
    node = _parse_node(_mapping(obj, "node", allow_null=False),
                       _mapping(get_ci(obj, "metadata"), "node.metadata"), "node")
    spec = get_ci(obj, "spec")
    cordoned = bool(get_ci(spec, "unschedulable")) if isinstance(spec, dict) else False
    return NodeRecord(resources=node.resources, ready=node.ready and not cordoned, taints=node_taints(spec))
