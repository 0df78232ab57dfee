"""The pipeline's PromQL: defaults for our probe agent and node_exporter, overridable from YAML.

A queries file (settings.NETAWARE["QUERIES_FILE"], env NETAWARE_QUERIES_FILE) may override any
query by its series name, or switch it off with ``null``; see docs/pipeline.md for the format and
the smokeping_prober profile. ``$rate`` in a query is replaced by the rate window (the file's
``rate`` key, else settings.NETAWARE["RATE_WINDOW"]).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from netaware_core.fielderrors import FieldError
from netaware_core.yamlsafe import load_yaml

from . import metrics
from .choices import NodeSeries, PairSeries

SHARD_PLACEHOLDER = "$shard"


def source_matcher(label: str, sources: Sequence[str] | None) -> str:
    """A label matcher selecting ``sources`` by ``label`` (every non-empty value when None)."""
    if sources is None:
        return f'{label}!=""'
    if not sources:
        return f'{label}="\x00none"'  # matches nothing
    alternatives = "|".join(re.escape(name).replace("\\", "\\\\").replace('"', '\\"') for name in sources)
    return f'{label}=~"{alternatives}"'


class QueriesFileError(FieldError):
    """A queries file is invalid; ``field_path`` is the dotted path of the offending entry."""


@dataclass(frozen=True)
class PairQuery:
    series: str
    query: str
    source_label: str = "source"
    target_label: str = "target"
    # Loss ratio is clipped into [0, 1]; other series only have to be finite and non-negative.
    clip_unit_interval: bool = False

    @property
    def watermark_key(self) -> str:
        return f"pair:{self.series}"

    @property
    def shardable(self) -> bool:
        """True when the query names ``$shard``, so a shard can restrict it to its sources."""
        return SHARD_PLACEHOLDER in self.query

    def for_sources(self, sources: Sequence[str] | None) -> str:
        """The query restricted to ``sources`` (None: every source)."""
        return self.query.replace(SHARD_PLACEHOLDER, source_matcher(self.source_label, sources))


@dataclass(frozen=True)
class NodeQuery:
    series: str
    query: str
    node_label: str = "node"
    clip_unit_interval: bool = False

    @property
    def watermark_key(self) -> str:
        return f"node:{self.series}"


@dataclass(frozen=True)
class NodeInfoQuery:
    query: str
    node_label: str = "node"
    zone_label: str = "zone"
    region_label: str = "region"


@dataclass(frozen=True)
class PullQueries:
    """The PromQL one pull runs: pair series, node series and the node list (not a Django QuerySet)."""

    rate: str
    pairs: tuple[PairQuery, ...]
    nodes: tuple[NodeQuery, ...]
    node_info: NodeInfoQuery | None


# Both export modes of the agent (docs/scale.md) answer the same default query: the histogram's
# quantile where histograms exist, else the agent-side quantile (PromQL `or` keeps the left side's
# pairs and adds the right side's others, so a cluster in the middle of switching works too).
# `$shard` becomes a matcher on the source label (docs/pipeline.md, "Sharded pulls").
_RTT = (
    "histogram_quantile(Q, sum by (source, target, le) "
    f"(rate({metrics.RTT_HISTOGRAM}_bucket{{$shard}}[$rate]))) "
    f'or max by (source, target) ({metrics.RTT_QUANTILE}{{quantile="Q",$shard}})'
)
# Pairs that sent nothing in the window give 0/0; `> 0` drops them so the ratio is absent, not NaN.
_LOSS = (
    f"(1 - sum by (source, target) (increase({metrics.PACKETS_RECEIVED}{{$shard}}[$rate])) "
    f"/ (sum by (source, target) (increase({metrics.PACKETS_SENT}{{$shard}}[$rate])) > 0)) "
    f"or max by (source, target) ({metrics.LOSS_RATIO}{{$shard}})"
)

_PAIR_LABELS = {"source_label": "source", "target_label": "target"}
DEFAULT_PAIR_QUERIES: dict[str, dict[str, Any]] = {
    PairSeries.RTT_P50.value: {"query": _RTT.replace("Q", "0.5"), **_PAIR_LABELS},
    PairSeries.RTT_P90.value: {"query": _RTT.replace("Q", "0.9"), **_PAIR_LABELS},
    PairSeries.RTT_P99.value: {"query": _RTT.replace("Q", "0.99"), **_PAIR_LABELS},
    PairSeries.LOSS.value: {"query": _LOSS, **_PAIR_LABELS},
    PairSeries.BANDWIDTH.value: {"query": f"max by (source, target) ({metrics.BANDWIDTH}{{$shard}})",
                                 **_PAIR_LABELS},
}

DEFAULT_NODE_QUERIES: dict[str, dict[str, Any]] = {
    NodeSeries.CPU.value: {
        "query": '1 - avg by (node) (rate(node_cpu_seconds_total{mode="idle"}[$rate]))', "node_label": "node"},
    NodeSeries.MEMORY.value: {
        "query": "1 - sum by (node) (node_memory_MemAvailable_bytes) / sum by (node) (node_memory_MemTotal_bytes)",
        "node_label": "node",
    },
    NodeSeries.NET_USED.value: {
        "query": "sum by (node) (rate(node_network_transmit_bytes_total[$rate]) * 8)", "node_label": "node"},
}

DEFAULT_NODE_INFO: dict[str, Any] = {
    "query": metrics.NODE_INFO, "node_label": "node", "zone_label": "zone", "region_label": "region"}

_TOP_KEYS = {"rate", "pair_queries", "node_queries", "node_info"}
_PAIR_KEYS = {"query", "source_label", "target_label"}
_NODE_KEYS = {"query", "node_label"}
_INFO_KEYS = {"query", "node_label", "zone_label", "region_label"}
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_DURATION_RE = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
_UNIT_INTERVAL = {PairSeries.LOSS.value, NodeSeries.CPU.value, NodeSeries.MEMORY.value}


def _mapping(value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise QueriesFileError(key, f"must be a mapping, got {type(value).__name__}")
    return value


def _check_keys(raw: Mapping[str, Any], allowed: set[str], key: str) -> None:
    for name in raw:
        if name not in allowed:
            prefix = f"{key}." if key else ""
            raise QueriesFileError(f"{prefix}{name}", f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _overridden(raw: Mapping[str, Any], group: str, defaults: Mapping[str, Mapping[str, Any]], allowed: set[str],
                required: tuple[str, ...]) -> list[tuple[str, Mapping[str, Any]]]:
    """``group``'s default entries with the file's overrides applied; an override of null switches one off."""
    over = _mapping(raw.get(group) or {}, group)
    _check_keys(over, set(defaults), group)
    entries: list[tuple[str, Mapping[str, Any]]] = []
    for series, default in defaults.items():
        if series not in over:
            entries.append((series, default))
        elif over[series] is not None:
            entries.append((series, _entry(over[series], allowed, required, f"{group}.{series}")))
    return entries


def _entry(raw: Any, allowed: set[str], required: tuple[str, ...], key: str) -> Mapping[str, Any]:
    """An override replaces the default entry wholly, so it must name its labels explicitly."""
    entry = _mapping(raw, key)
    _check_keys(entry, allowed, key)
    query = entry.get("query")
    if not isinstance(query, str) or not query.strip():
        raise QueriesFileError(f"{key}.query", "missing or empty PromQL string")
    for label in required:
        value = entry.get(label)
        if value is None:
            raise QueriesFileError(f"{key}.{label}", "missing label name")
        if not isinstance(value, str) or not _LABEL_RE.match(value):
            raise QueriesFileError(f"{key}.{label}", f"not a valid Prometheus label name: {value!r}")
    return entry


def build_pull_queries(overrides: Mapping[str, Any] | None, *, rate: str) -> PullQueries:
    """Merge ``overrides`` (a parsed queries file) over the defaults and validate everything."""
    raw = _mapping(overrides if overrides is not None else {}, "")
    _check_keys(raw, _TOP_KEYS, "")
    rate = raw.get("rate", rate)
    if not isinstance(rate, str) or not _DURATION_RE.match(rate):
        raise QueriesFileError("rate", f"not a Prometheus duration: {rate!r}")

    pairs = [
        PairQuery(series=series, query=spec["query"].replace("$rate", rate), source_label=spec["source_label"],
                  target_label=spec["target_label"], clip_unit_interval=series in _UNIT_INTERVAL)
        for series, spec in _overridden(raw, "pair_queries", DEFAULT_PAIR_QUERIES, _PAIR_KEYS,
                                        ("source_label", "target_label"))
    ]
    nodes = [
        NodeQuery(series=series, query=spec["query"].replace("$rate", rate), node_label=spec["node_label"],
                  clip_unit_interval=series in _UNIT_INTERVAL)
        for series, spec in _overridden(raw, "node_queries", DEFAULT_NODE_QUERIES, _NODE_KEYS, ("node_label",))
    ]

    node_info: NodeInfoQuery | None = None
    if "node_info" in raw:
        if raw["node_info"] is not None:
            spec = _entry(raw["node_info"], _INFO_KEYS, ("node_label", "zone_label", "region_label"), "node_info")
            node_info = NodeInfoQuery(query=spec["query"].replace("$rate", rate), node_label=spec["node_label"],
                                      zone_label=spec["zone_label"], region_label=spec["region_label"])
    else:
        node_info = NodeInfoQuery(**DEFAULT_NODE_INFO)
    return PullQueries(rate=rate, pairs=tuple(pairs), nodes=tuple(nodes), node_info=node_info)


def load_queries_file(path: str | Path, *, rate: str) -> PullQueries:
    """Parse and validate a queries file; errors are QueriesFileError naming the key."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise QueriesFileError("NETAWARE_QUERIES_FILE", f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise QueriesFileError("", f"{path}: invalid YAML: {exc}") from exc
    return build_pull_queries(data, rate=rate)


def configured_queries() -> PullQueries:
    """The query set in force: the file named by settings, else the defaults."""
    from django.conf import settings

    conf = settings.NETAWARE
    path = conf.get("QUERIES_FILE") or ""
    if path:
        return load_queries_file(path, rate=conf["RATE_WINDOW"])
    return build_pull_queries(None, rate=conf["RATE_WINDOW"])
