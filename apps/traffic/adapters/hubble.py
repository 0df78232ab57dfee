"""Cilium Hubble flow metrics, where Hubble labels them with workloads.

Needs the ``flow`` metric with workload context, e.g. Helm
``hubble.metrics.enabled={flow:sourceContext=workload-name|reserved-identity;destinationContext=workload-name|reserved-identity,...}``
plus namespaces: ``labelsContext=source_namespace,source_workload,destination_namespace,destination_workload``.
Edges are ``source_workload`` in ``source_namespace`` -> ``destination_workload`` in
``destination_namespace``. Hubble counts flows (L3/L4 packets' flow events, or L7 requests where L7
visibility is on), not requests: ``requests`` is forwarded flows per second and ``errors`` dropped
ones; it has no byte counts or durations.
"""

from __future__ import annotations

from .base import Adapter, EdgeLabels

NAME = "hubble"

ADAPTER = Adapter(
    name=NAME,
    title="Cilium Hubble flows",
    presence_metric="hubble_flows_processed_total",
    labels=EdgeLabels("source_namespace", "source_workload", "destination_namespace", "destination_workload"),
    queries={
        "requests": 'sum by ($by) (rate(hubble_flows_processed_total{verdict="FORWARDED",source_workload!="",'
                    'destination_workload!=""}[$rate]))',
        "errors": 'sum by ($by) (rate(hubble_flows_processed_total{verdict="DROPPED",source_workload!="",'
                  'destination_workload!=""}[$rate]))',
        "request_bytes": None,
        "response_bytes": None,
        "p50": None,
        "p99": None,
    },
    priority=40,
)
