"""What a traffic source is: the PromQL that turns one mesh's metrics into per-edge rates.

Every adapter answers the same six questions per directed edge (caller workload -> callee workload),
each as one PromQL expression over the aligned pull window's ``$rate`` range:

=================  ====================================================================
``requests``       requests (or flows) per second
``errors``         failed requests per second (5xx / gRPC failure / dropped flow)
``request_bytes``  bytes per second caller -> callee (request bodies, TCP bytes sent)
``response_bytes`` bytes per second callee -> caller
``p50`` / ``p99``  call duration quantiles in seconds
=================  ====================================================================

A measure the mesh does not export is ``None``. Every expression aggregates ``by`` exactly the four
label names of :class:`EdgeLabels` (``le`` is consumed by ``histogram_quantile``), so one parser reads
every source. Framework-free: the pipeline (apps.traffic.services), the docs and the tests read these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MEASURES = ("requests", "errors", "request_bytes", "response_bytes", "p50", "p99")


@dataclass(frozen=True)
class EdgeLabels:
    """The label names that name an edge's two ends; an empty namespace label means the source has
    none (OpenTelemetry's service graph): the configured default namespace is used."""

    source_namespace: str
    source: str
    target_namespace: str
    target: str

    @property
    def by(self) -> str:
        return ", ".join(name for name in (self.source_namespace, self.source, self.target_namespace, self.target)
                         if name)


@dataclass(frozen=True)
class Adapter:
    name: str  # short name: settings, watermarks, API (istio, linkerd, otel, hubble)
    title: str
    presence_metric: str  # the source exists when this metric has at least one series
    labels: EdgeLabels
    queries: dict[str, str | None] = field(default_factory=dict)  # measure -> PromQL with $rate and $by
    # Lower wins when two sources report the same edge (a mesh's own metrics beat traces and flows).
    priority: int = 100

    def query(self, measure: str, *, rate: str) -> str | None:
        """The PromQL of one measure with ``$rate`` and ``$by`` filled in (None: not exported)."""
        text = self.queries.get(measure)
        if text is None:
            return None
        return text.replace("$by", self.labels.by).replace("$rate", rate)

    def presence_query(self) -> str:
        return f"count({self.presence_metric})"


def quantile(q: float, bucket: str, *, scale: float = 1.0) -> str:
    """``histogram_quantile`` of a histogram's buckets by edge, in seconds (``scale`` converts ms)."""
    expr = f"histogram_quantile({q:g}, sum by ($by, le) (rate({bucket}[$rate])))"
    return f"{expr} / {1 / scale:g}" if scale != 1.0 else expr
