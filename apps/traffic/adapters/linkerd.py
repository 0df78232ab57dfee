"""Linkerd's proxy metrics (linkerd.io "Proxy Metrics"), outbound side.

Edges are ``deployment`` in ``namespace`` -> ``dst_deployment`` in ``dst_namespace`` (the proxy labels
its outbound series with the destination's workload; StatefulSets and DaemonSets carry ``statefulset`` /
``daemonset`` instead and are not read here). Requests from ``response_total`` (one per response,
``classification="failure"`` for errors), bytes from ``tcp_write_bytes_total`` (caller -> callee) and
``tcp_read_bytes_total`` (callee -> caller) of the outbound connections, durations from the
``response_latency_ms`` histogram.
"""

from __future__ import annotations

from .base import Adapter, EdgeLabels, quantile

NAME = "linkerd"
_OUT = 'direction="outbound"'

ADAPTER = Adapter(
    name=NAME,
    title="Linkerd proxy metrics",
    presence_metric="response_total",
    labels=EdgeLabels("namespace", "deployment", "dst_namespace", "dst_deployment"),
    queries={
        "requests": f"sum by ($by) (rate(response_total{{{_OUT}}}[$rate]))",
        "errors": f'sum by ($by) (rate(response_total{{{_OUT},classification="failure"}}[$rate]))',
        "request_bytes": f'sum by ($by) (rate(tcp_write_bytes_total{{{_OUT},peer="dst"}}[$rate]))',
        "response_bytes": f'sum by ($by) (rate(tcp_read_bytes_total{{{_OUT},peer="dst"}}[$rate]))',
        "p50": quantile(0.5, f"response_latency_ms_bucket{{{_OUT}}}", scale=0.001),
        "p99": quantile(0.99, f"response_latency_ms_bucket{{{_OUT}}}", scale=0.001),
    },
    priority=20,
)
