"""OpenTelemetry service-graph metrics: the Collector's ``servicegraph`` connector and Tempo's metrics
generator (both name them ``traces_service_graph_*``).

Edges are ``client`` -> ``server`` (service names, usually the workloads' ``app`` / service names). The
series carry no namespace unless the connector is configured with dimensions; the configured default
namespace (``NETAWARE_TRAFFIC_DEFAULT_NAMESPACE``) is used. Durations come from the server-side histogram
``traces_service_graph_request_server_seconds`` or, where only the client side was seen, from
``traces_service_graph_request_client_seconds``. Spans carry no sizes: no byte rates.
"""

from __future__ import annotations

from .base import Adapter, EdgeLabels

NAME = "otel"


def _duration(q: float) -> str:
    return (f"histogram_quantile({q:g}, sum by ($by, le) (rate(traces_service_graph_request_server_seconds_bucket[$rate]))) "
            f"or histogram_quantile({q:g}, sum by ($by, le) "
            "(rate(traces_service_graph_request_client_seconds_bucket[$rate])))")


ADAPTER = Adapter(
    name=NAME,
    title="OpenTelemetry service graph",
    presence_metric="traces_service_graph_request_total",
    labels=EdgeLabels("", "client", "", "server"),
    queries={
        "requests": "sum by ($by) (rate(traces_service_graph_request_total[$rate]))",
        "errors": "sum by ($by) (rate(traces_service_graph_request_failed_total[$rate]))",
        "request_bytes": None,
        "response_bytes": None,
        "p50": _duration(0.5),
        "p99": _duration(0.99),
    },
    priority=30,
)
