"""Istio's standard metrics (istio.io "Istio Standard Metrics"), reported by the sidecars or ztunnel/waypoints.

Edges are ``source_workload`` in ``source_workload_namespace`` -> ``destination_workload`` in
``destination_workload_namespace``. Only ``reporter="source"`` series are read: every call is reported by
both ends, and the client's view includes the network (the scheduler's concern). HTTP/gRPC traffic comes
from ``istio_requests_total`` and the ``istio_request_bytes`` / ``istio_response_bytes`` histograms' sums;
TCP-only traffic (Redis, databases) from ``istio_tcp_received_bytes_total`` (request direction, bytes the
server received) and ``istio_tcp_sent_bytes_total`` (response direction); both are summed in one selector
so an edge carrying both is counted once each.
"""

from __future__ import annotations

from .base import Adapter, EdgeLabels, quantile

NAME = "istio"
_SRC = 'reporter="source"'

ADAPTER = Adapter(
    name=NAME,
    title="Istio standard metrics",
    presence_metric="istio_requests_total",
    labels=EdgeLabels("source_workload_namespace", "source_workload",
                      "destination_workload_namespace", "destination_workload"),
    queries={
        "requests": f"sum by ($by) (rate(istio_requests_total{{{_SRC}}}[$rate]))",
        "errors": f'sum by ($by) (rate(istio_requests_total{{{_SRC},response_code=~"5.."}}[$rate]))',
        "request_bytes": 'sum by ($by) (rate({__name__=~"istio_request_bytes_sum|istio_tcp_received_bytes_total",'
                         f"{_SRC}}}[$rate]))",
        "response_bytes": 'sum by ($by) (rate({__name__=~"istio_response_bytes_sum|istio_tcp_sent_bytes_total",'
                          f"{_SRC}}}[$rate]))",
        "p50": quantile(0.5, f"istio_request_duration_milliseconds_bucket{{{_SRC}}}", scale=0.001),
        "p99": quantile(0.99, f"istio_request_duration_milliseconds_bucket{{{_SRC}}}", scale=0.001),
    },
    priority=10,
)
