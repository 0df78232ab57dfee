"""Emulated-cluster scenarios: parse and validate the YAML format of docs/scenarios.md.

A scenario is the single source of truth for the emulator (which turns it into probe and
node_exporter metrics), for the evaluation harness (node capacities and nominal link values) and
for tests. Errors name the offending field with a dotted path, e.g. ``links[3].bandwidth_mbps``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from netaware_core import quantity
from netaware_core.fielderrors import FieldError
from netaware_core.yamlsafe import load_yaml

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class ScenarioError(FieldError):
    """A scenario document is invalid; ``field_path`` names where (dotted path)."""


@dataclass(frozen=True)
class LinkSpec:
    """Nominal one-way-pair characteristics; ``jitter`` is the relative spread of RTT samples."""

    latency_ms: float
    loss_pct: float
    bandwidth_mbps: float
    jitter: float


@dataclass(frozen=True)
class NodeSpec:
    name: str
    zone: str
    region: str
    cpu_millicores: int
    memory_bytes: int
    labels: Mapping[str, str] = field(default_factory=dict)
    # Emulated node_exporter utilisation (0..1) around which samples are drawn.
    cpu_utilization: float = 0.2
    memory_utilization: float = 0.3
    # Pods already running there (other teams' workloads): their count and total cpu/memory requests.
    # Kept apart from the capacity, as kube-scheduler sees them: allocatable minus requested.
    existing_pods: int = 0
    existing_cpu_millicores: int = 0
    existing_memory_bytes: int = 0


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    nodes: tuple[NodeSpec, ...]
    zone_links: Mapping[tuple[str, str], LinkSpec]
    node_links: Mapping[tuple[str, str], LinkSpec]
    unreachable: frozenset[tuple[str, str]]
    default_jitter: float
    # Pairs no probe measures (outside every agent's fan-out, a node whose agent never ran): the
    # topology infers them from their zone / region, like the pairs a bounded fan-out leaves out.
    unmeasured: frozenset[tuple[str, str]] = frozenset()
    # Pairs measured only for the first N seconds after the emulator starts (an agent that hung or
    # lost the peer): their last measurement ages until the topology calls it stale.
    stale: Mapping[tuple[str, str], float] = field(default_factory=dict)

    def unobserved(self, elapsed_s: float) -> frozenset[tuple[str, str]]:
        """Directed pairs no agent measures ``elapsed_s`` seconds after the start: the unmeasured ones
        and the stale ones whose measuring has stopped."""
        return self.unmeasured | {pair for pair, after in self.stale.items() if elapsed_s >= after}

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(node.name for node in self.nodes)

    def node(self, name: str) -> NodeSpec:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def link(self, source: str, target: str) -> LinkSpec | None:
        """Nominal link from ``source`` to ``target``; None when unreachable or undefined."""
        if (source, target) in self.unreachable:
            return None
        if (source, target) in self.node_links:
            return self.node_links[(source, target)]
        a, b = self.node(source), self.node(target)
        return self.zone_links.get((a.zone, b.zone))

    def zones(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(node.zone for node in self.nodes))


def _quantity(value: Any, path: str, convert: Callable[[Any], int]) -> int:
    """A positive Kubernetes quantity through ``netaware_core.quantity`` (the project's one parser)."""
    try:
        number = convert(value)
    except quantity.QuantityError as exc:
        raise ScenarioError(path, str(exc)) from None
    if number <= 0:
        raise ScenarioError(path, "must be positive")
    return number


def parse_cpu(value: Any, path: str) -> int:
    """Kubernetes CPU quantity ("4", "500m", 2.5) to millicores."""
    return _quantity(value, path, quantity.cpu_millicores)


def parse_memory(value: Any, path: str) -> int:
    """Kubernetes memory quantity ("8Gi", "512M", 1024) to bytes."""
    return _quantity(value, path, quantity.memory_bytes)


def _number(raw: Mapping[str, Any], key: str, path: str, *, low: float, high: float | None = None,
            default: float | None = None, low_inclusive: bool = True) -> float:
    if key not in raw or raw[key] is None:
        if default is None:
            raise ScenarioError(f"{path}.{key}", "is required")
        return default
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{path}.{key}", f"{value!r} is not a number")
    value = float(value)
    if value != value or (value < low if low_inclusive else value <= low):
        raise ScenarioError(f"{path}.{key}", f"must be {'>=' if low_inclusive else '>'} {low}, got {value}")
    if high is not None and value > high:
        raise ScenarioError(f"{path}.{key}", f"must be <= {high}, got {value}")
    return value


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(path, f"must be a mapping, got {type(value).__name__}")
    return value


def _known(raw: Mapping[str, Any], allowed: set[str], path: str) -> None:
    """Reject unknown keys so a typo (``cpu_utilisation``) is an error, not a silent default."""
    unknown = sorted(str(key) for key in raw if key not in allowed)
    if unknown:
        raise ScenarioError(f"{path}.{unknown[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


_NODE_FIELDS = {"name", "cpu", "memory", "labels", "cpu_utilization", "memory_utilization", "existing_pods"}


def _existing_pods(raw: Any, path: str, cpu: int, memory: int) -> tuple[int, int, int]:
    """``existing_pods: {count, cpu, memory}`` (total requests of the pods already on the node) ->
    (count, millicores, bytes); the requests may not exceed the node's capacity."""
    if raw is None:
        return 0, 0, 0
    raw = _mapping(raw, path)
    _known(raw, {"count", "cpu", "memory"}, path)
    count = raw.get("count", 0)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 110:
        raise ScenarioError(f"{path}.count", f"must be an integer 0..110 (kubelet's default max pods), got {count!r}")
    used_cpu = parse_cpu(raw["cpu"], f"{path}.cpu") if raw.get("cpu") not in (None, 0, "0") else 0
    used_memory = parse_memory(raw["memory"], f"{path}.memory") if raw.get("memory") not in (None, 0, "0") else 0
    if used_cpu > cpu:
        raise ScenarioError(f"{path}.cpu", f"requests {used_cpu}m, more than the node's {cpu}m")
    if used_memory > memory:
        raise ScenarioError(f"{path}.memory", f"requests {used_memory} bytes, more than the node's {memory}")
    if (used_cpu or used_memory) and not count:
        raise ScenarioError(f"{path}.count", "pods with requests need a count >= 1")
    return count, used_cpu, used_memory


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise ScenarioError(path, f"must be a list, got {type(value).__name__}")
    return value


def _name(value: Any, path: str) -> str:
    if not isinstance(value, str) or not _NAME_RE.match(value.lower()) or len(value) > 253:
        raise ScenarioError(path, f"{value!r} is not a valid name (lower-case DNS label characters)")
    return value


def _pair(value: Any, path: str, known: set[str], what: str) -> tuple[str, str]:
    items = _list(value, path)
    if len(items) != 2:
        raise ScenarioError(path, f"must name exactly two {what}s, got {len(items)}")
    for i, item in enumerate(items):
        if item not in known:
            raise ScenarioError(f"{path}[{i}]", f"unknown {what} {item!r}")
    return items[0], items[1]


def _link(raw: Mapping[str, Any], path: str, default_jitter: float) -> LinkSpec:
    allowed = {"between", "latency_ms", "loss_pct", "bandwidth_mbps", "jitter", "directed"}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ScenarioError(f"{path}.{unknown[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")
    return LinkSpec(
        latency_ms=_number(raw, "latency_ms", path, low=0.0, low_inclusive=False),
        loss_pct=_number(raw, "loss_pct", path, low=0.0, high=100.0),
        bandwidth_mbps=_number(raw, "bandwidth_mbps", path, low=0.0, low_inclusive=False),
        jitter=_number(raw, "jitter", path, low=0.0, high=1.0, default=default_jitter),
    )


def _expand_nodes(raw_zone: Mapping[str, Any], path: str) -> list[tuple[Mapping[str, Any], str]]:
    """Nodes of a zone: an explicit list and/or a ``range`` {prefix, from, to} shorthand."""
    out: list[tuple[Mapping[str, Any], str]] = []
    for i, raw in enumerate(_list(raw_zone.get("nodes", []), f"{path}.nodes")):
        out.append((_mapping(raw, f"{path}.nodes[{i}]"), f"{path}.nodes[{i}]"))
    if "range" in raw_zone:
        rpath = f"{path}.range"
        rng = _mapping(raw_zone["range"], rpath)
        _known(rng, (_NODE_FIELDS - {"name"}) | {"prefix", "from", "to"}, rpath)
        prefix = rng.get("prefix", "")
        if not isinstance(prefix, str):
            raise ScenarioError(f"{rpath}.prefix", "must be a string")
        lo, hi = rng.get("from"), rng.get("to")
        if not isinstance(lo, int) or not isinstance(hi, int) or isinstance(lo, bool) or isinstance(hi, bool):
            raise ScenarioError(f"{rpath}.from", "from and to must be integers")
        if hi < lo:
            raise ScenarioError(f"{rpath}.to", f"must be >= from ({lo}), got {hi}")
        template = {k: v for k, v in rng.items() if k not in {"prefix", "from", "to"}}
        for number in range(lo, hi + 1):
            out.append(({**template, "name": f"{prefix}{number}"}, f"{rpath}[{number}]"))
    if not out:
        raise ScenarioError(f"{path}.nodes", "a zone needs at least one node (nodes or range)")
    return out


DEFAULT_STALE_AFTER_S = 60.0


def _node_pairs(raw_list: Any, key: str, known: set[str], nodes: list[NodeSpec], *, after_s: bool = False
                ) -> dict[tuple[str, str], float]:
    """``unmeasured`` / ``stale`` entries -> {directed pair: after_s}. An entry is ``[a, b]``
    (both directions), ``{between: [a, b], directed: true}`` or ``{node: a}`` (every pair from and to a:
    an agent that is down); ``stale`` entries may give ``after_s`` (seconds measured before stopping)."""
    out: dict[tuple[str, str], float] = {}
    given: dict[tuple[str, str], str] = {}  # pair -> the entry that named it first
    names = [node.name for node in nodes]
    for i, raw in enumerate(_list(raw_list or [], key)):
        path = f"{key}[{i}]"
        after = DEFAULT_STALE_AFTER_S
        if isinstance(raw, Mapping):
            allowed = {"between", "directed", "node"} | ({"after_s"} if after_s else set())
            _known(raw, allowed, path)
            if after_s:
                after = _number(raw, "after_s", path, low=0.0, low_inclusive=False, high=86400.0,
                                default=DEFAULT_STALE_AFTER_S)
            if ("node" in raw) == ("between" in raw):
                raise ScenarioError(path, "give exactly one of between (a node pair) or node (every pair of a node)")
            if "node" in raw and "directed" in raw:
                raise ScenarioError(f"{path}.directed", "only with between: node means every pair from and to it")
            if "node" in raw:
                node = raw["node"]
                if node not in known:
                    raise ScenarioError(f"{path}.node", f"unknown node {node!r}")
                pairs = [(node, other) for other in names if other != node]
                pairs += [(b, a) for a, b in pairs]
            else:
                a, b = _pair(raw.get("between"), f"{path}.between", known, "node")
                pairs = [(a, b)] if raw.get("directed", False) else [(a, b), (b, a)]
        else:
            a, b = _pair(raw, path, known, "node")
            pairs = [(a, b), (b, a)]
        if any(a == b for a, b in pairs):
            raise ScenarioError(path, "a pair needs two different nodes")
        for pair in pairs:
            if pair in out and out[pair] != after:
                raise ScenarioError(f"{path}.after_s", f"{after:g} for {pair[0]} -> {pair[1]}, which {given[pair]} "
                                    f"gives {out[pair]:g}")
            out[pair] = after
            given.setdefault(pair, path)
    return out


def load_scenario(source: str | Path | Mapping[str, Any]) -> Scenario:
    """Parse a scenario from a path, a YAML string or an already-loaded mapping."""
    if isinstance(source, Mapping):
        doc: Any = source
    else:
        text = Path(source).read_text() if isinstance(source, Path) or (
            isinstance(source, str) and "\n" not in source and source.endswith((".yaml", ".yml"))
        ) else source
        try:
            doc = load_yaml(text)
        except yaml.YAMLError as exc:
            raise ScenarioError("", f"not valid YAML: {exc}") from exc
    doc = _mapping(doc, "(document)")
    allowed = {"name", "description", "defaults", "regions", "links", "node_links", "unreachable", "unmeasured",
               "stale"}
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise ScenarioError(unknown[0], f"unknown top-level field (allowed: {', '.join(sorted(allowed))})")
    name = _name(doc.get("name"), "name")
    defaults = _mapping(doc.get("defaults", {}) or {}, "defaults")
    _known(defaults, {"jitter", "node"}, "defaults")
    default_jitter = _number(defaults, "jitter", "defaults", low=0.0, high=1.0, default=0.1)
    default_node = _mapping(defaults.get("node", {}) or {}, "defaults.node")
    _known(default_node, _NODE_FIELDS - {"name"}, "defaults.node")

    nodes: list[NodeSpec] = []
    seen_nodes: set[str] = set()
    zone_names: set[str] = set()
    for r, raw_region in enumerate(_list(doc.get("regions"), "regions")):
        rpath = f"regions[{r}]"
        raw_region = _mapping(raw_region, rpath)
        _known(raw_region, {"name", "zones"}, rpath)
        region = _name(raw_region.get("name"), f"{rpath}.name")
        for z, raw_zone in enumerate(_list(raw_region.get("zones"), f"{rpath}.zones")):
            zpath = f"{rpath}.zones[{z}]"
            raw_zone = _mapping(raw_zone, zpath)
            _known(raw_zone, {"name", "nodes", "range"}, zpath)
            zone = raw_zone.get("name")
            if not isinstance(zone, str) or not zone:
                raise ScenarioError(f"{zpath}.name", "is required")
            if zone in zone_names:
                raise ScenarioError(f"{zpath}.name", f"duplicate zone {zone!r}")
            zone_names.add(zone)
            for raw_node, npath in _expand_nodes(raw_zone, zpath):
                _known(raw_node, _NODE_FIELDS, npath)
                merged = {**default_node, **raw_node}
                node_name = _name(merged.get("name"), f"{npath}.name")
                if node_name in seen_nodes:
                    raise ScenarioError(f"{npath}.name", f"duplicate node {node_name!r}")
                seen_nodes.add(node_name)
                labels = _mapping(merged.get("labels", {}) or {}, f"{npath}.labels")
                labels = {str(k): str(v) for k, v in labels.items()}
                labels.setdefault("kubernetes.io/hostname", node_name)
                labels.setdefault("topology.kubernetes.io/zone", zone)
                labels.setdefault("topology.kubernetes.io/region", region)
                cpu = parse_cpu(merged.get("cpu", "4"), f"{npath}.cpu")
                memory = parse_memory(merged.get("memory", "8Gi"), f"{npath}.memory")
                existing = _existing_pods(merged.get("existing_pods"), f"{npath}.existing_pods", cpu, memory)
                nodes.append(
                    NodeSpec(
                        name=node_name,
                        zone=zone,
                        region=region,
                        cpu_millicores=cpu,
                        memory_bytes=memory,
                        labels=labels,
                        cpu_utilization=_number(merged, "cpu_utilization", npath, low=0.0, high=1.0, default=0.2),
                        memory_utilization=_number(merged, "memory_utilization", npath, low=0.0, high=1.0,
                                                   default=0.3),
                        existing_pods=existing[0],
                        existing_cpu_millicores=existing[1],
                        existing_memory_bytes=existing[2],
                    )
                )
    if not nodes:
        raise ScenarioError("regions", "a scenario needs at least one node")

    zone_links: dict[tuple[str, str], LinkSpec] = {}
    explicit: set[tuple[str, str]] = set()
    for i, raw in enumerate(_list(doc.get("links", []) or [], "links")):
        path = f"links[{i}]"
        raw = _mapping(raw, path)
        a, b = _pair(raw.get("between"), f"{path}.between", zone_names, "zone")
        link = _link(raw, path, default_jitter)
        if (a, b) in explicit:
            raise ScenarioError(f"{path}.between", f"link {a!r} -> {b!r} is defined twice")
        explicit.add((a, b))
        zone_links[(a, b)] = link
        # A symmetric link fills the reverse direction unless that direction is given explicitly.
        if not raw.get("directed", False) and (b, a) not in explicit:
            zone_links[(b, a)] = link
    for a in sorted(zone_names):
        for b in sorted(zone_names):
            if (a, b) not in zone_links:
                raise ScenarioError("links", f"no link defined between zones {a!r} and {b!r}")

    node_links: dict[tuple[str, str], LinkSpec] = {}
    for i, raw in enumerate(_list(doc.get("node_links", []) or [], "node_links")):
        path = f"node_links[{i}]"
        raw = _mapping(raw, path)
        a, b = _pair(raw.get("between"), f"{path}.between", seen_nodes, "node")
        if a == b:
            raise ScenarioError(f"{path}.between", "a node link needs two different nodes")
        link = _link(raw, path, default_jitter)
        node_links[(a, b)] = link
        if not raw.get("directed", False):
            node_links[(b, a)] = link

    unreachable: set[tuple[str, str]] = set()
    for i, raw in enumerate(_list(doc.get("unreachable", []) or [], "unreachable")):
        path = f"unreachable[{i}]"
        if isinstance(raw, Mapping):
            a, b = _pair(raw.get("between"), f"{path}.between", seen_nodes, "node")
            directed = bool(raw.get("directed", False))
        else:
            a, b = _pair(raw, path, seen_nodes, "node")
            directed = False
        unreachable.add((a, b))
        if not directed:
            unreachable.add((b, a))

    unmeasured = _node_pairs(doc.get("unmeasured"), "unmeasured", seen_nodes, nodes)
    stale: dict[tuple[str, str], float] = {}
    for pair, after in _node_pairs(doc.get("stale"), "stale", seen_nodes, nodes, after_s=True).items():
        if pair not in unmeasured:  # a pair nobody measures cannot go stale: unmeasured wins
            stale[pair] = after

    description = doc.get("description", "") or ""
    if not isinstance(description, str):
        raise ScenarioError("description", "must be a string")
    return Scenario(
        name=name,
        description=description,
        nodes=tuple(nodes),
        zone_links=zone_links,
        node_links=node_links,
        unreachable=frozenset(unreachable),
        default_jitter=default_jitter,
        unmeasured=frozenset(unmeasured),
        stale=stale,
    )
