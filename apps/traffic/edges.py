"""From Prometheus answers to clean per-window edge rates: every bad series is refused with a reason.

Framework-free. A pull fetches one range-query matrix per measure (adapters/base.py) and hands them to
:func:`parse_window_matrices`, which returns, per window end, ``{Edge: Rates}`` and a
:class:`Rejections` tally. What is refused, and why (logged by the pipeline, never raised):

* ``invalid name``: a workload or namespace label value that is not a Kubernetes object name (DNS-1123
  subdomain of at most 63 characters for workloads, DNS-1123 label for namespaces), or a missing label;
* ``unknown workload``: Istio's ``unknown`` (a caller outside the mesh) -- no pods to place;
* ``self edge``: caller and callee are the same workload (loopback; nothing to place apart);
* ``not finite`` / ``negative``: NaN, ±Inf or a negative rate (a counter reset seen badly, a broken
  exporter). A NaN *quantile* is only "no observation" (histogram_quantile of an empty window) and
  leaves the duration unknown; an infinite or negative one is refused;
* ``edge cap``: more edges in one window than ``max_edges``: the busiest ``max_edges`` (by requests, then
  bytes) are kept, the rest refused -- the query itself is capped too (services.py), so a million
  series never reach the worker.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .adapters import MEASURES, EdgeLabels

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RATE_MEASURES = ("requests", "errors", "request_bytes", "response_bytes")
UNKNOWN_WORKLOADS = frozenset({"unknown"})


@dataclass(frozen=True, order=True)
class Edge:
    source_namespace: str
    source: str
    target_namespace: str
    target: str

    def __str__(self) -> str:
        return f"{self.source_namespace}/{self.source}->{self.target_namespace}/{self.target}"


@dataclass
class Rates:
    """One edge in one window; NaN means "not reported by this source"."""

    requests: float = math.nan
    errors: float = math.nan
    request_bytes: float = math.nan
    response_bytes: float = math.nan
    p50: float = math.nan
    p99: float = math.nan

    @property
    def error_ratio(self) -> float:
        if not self.requests > 0 or math.isnan(self.errors):
            return math.nan
        return min(1.0, self.errors / self.requests)

    def traffic(self) -> tuple[float, float]:
        """(requests/s, bytes/s both ways) with unknown as 0: the sort key of the edge cap."""
        def z(x: float) -> float:
            return 0.0 if math.isnan(x) else x
        return z(self.requests), z(self.request_bytes) + z(self.response_bytes)


@dataclass
class Rejections:
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, example: str, n: int = 1) -> None:
        self.counts[reason] += n
        self.examples.setdefault(reason, example[:200])

    def merge(self, other: Rejections) -> None:
        for reason, n in other.counts.items():
            self.add(reason, other.examples.get(reason, ""), n)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        return "; ".join(f"{n} {reason} (e.g. {self.examples.get(reason, '')})" for reason, n in self.counts.most_common())


def name_error(value: object, *, namespace: bool) -> str | None:
    """Why ``value`` cannot name a workload (or namespace); None when it can."""
    if not isinstance(value, str) or not value:
        return "missing"
    if len(value) > 63:
        return "longer than 63 characters"
    if not (_LABEL if namespace else _SUBDOMAIN).match(value):
        return "not a DNS-1123 name"
    return None


def edge_of(labels: Mapping[str, str], names: EdgeLabels, *, default_namespace: str,
            rejections: Rejections) -> Edge | None:
    src_ns = labels.get(names.source_namespace, "") if names.source_namespace else default_namespace
    dst_ns = labels.get(names.target_namespace, "") if names.target_namespace else default_namespace
    src, dst = labels.get(names.source, ""), labels.get(names.target, "")
    if src in UNKNOWN_WORKLOADS or dst in UNKNOWN_WORKLOADS:
        rejections.add("unknown workload", f"{src_ns}/{src}->{dst_ns}/{dst}")
        return None
    for value, is_ns in ((src_ns, True), (src, False), (dst_ns, True), (dst, False)):
        problem = name_error(value, namespace=is_ns)
        if problem:
            rejections.add("invalid name", f"{value!r}: {problem}")
            return None
    if (src_ns, src) == (dst_ns, dst):
        rejections.add("self edge", f"{src_ns}/{src}")
        return None
    return Edge(src_ns, src, dst_ns, dst)


def parse_window_matrices(matrices: Mapping[str, Sequence[Mapping[str, Any]]], names: EdgeLabels, *,
                          default_namespace: str, max_edges: int,
                          ends: Sequence[int] | None = None) -> tuple[dict[int, dict[Edge, Rates]], Rejections]:
    """Per window end, the clean rates of every edge in ``matrices`` (measure -> Prometheus matrix)."""
    rejections = Rejections()
    wanted = set(ends) if ends is not None else None
    out: dict[int, dict[Edge, Rates]] = {}
    # The queries aggregate by exactly the edge labels, so their four values identify a series.
    label_names = (names.source_namespace, names.source, names.target_namespace, names.target)
    label_cache: dict[tuple[str | None, ...], Edge | None] = {}
    for measure, matrix in matrices.items():
        if measure not in MEASURES:
            raise ValueError(f"unknown measure {measure!r}")
        is_rate = measure in RATE_MEASURES
        for item in matrix:
            metric = item.get("metric") or {}
            key = tuple(metric.get(name) if name else None for name in label_names)
            if key in label_cache:
                edge = label_cache[key]
            else:
                edge = label_cache[key] = edge_of(metric, names, default_namespace=default_namespace,
                                                  rejections=rejections)
            if edge is None:
                continue
            for stamp, raw in item.get("values") or ():
                ts = round(float(stamp))
                if wanted is not None and ts not in wanted:
                    continue
                try:
                    value = float(raw)
                except (TypeError, ValueError):
                    rejections.add("not finite", f"{edge} {measure}={raw!r}")
                    continue
                if math.isnan(value) and not is_rate:
                    continue  # a quantile of an empty window: unknown, not wrong
                if not math.isfinite(value):
                    rejections.add("not finite", f"{edge} {measure}={raw}")
                    continue
                if value < 0:
                    rejections.add("negative", f"{edge} {measure}={raw}")
                    continue
                rates = out.setdefault(ts, {}).get(edge)
                if rates is None:
                    rates = out[ts][edge] = Rates()
                setattr(rates, measure, value)
    for ts, edges in out.items():
        if len(edges) > max_edges:
            ranked = sorted(edges.items(), key=lambda kv: kv[1].traffic(), reverse=True)
            rejections.add("edge cap", f"{len(edges)} edges at {ts}, kept the busiest {max_edges}",
                           len(edges) - max_edges)
            out[ts] = dict(ranked[:max_edges])
    return out, rejections


def merge_sources(per_source: Mapping[str, Mapping[Edge, Rates]], priority: Mapping[str, int]) -> dict[Edge, tuple[str, Rates]]:
    """One view of a window over several sources: each edge from the highest-priority source that saw it."""
    merged: dict[Edge, tuple[str, Rates]] = {}
    for source in sorted(per_source, key=lambda name: priority.get(name, 1000)):
        for edge, rates in per_source[source].items():
            merged.setdefault(edge, (source, rates))
    return merged
