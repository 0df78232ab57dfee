"""Reads of the observed-traffic app (the API, the dashboard, /metrics)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from .models import LearnedEdge, ObservedAppGroup, TrafficSource, TrafficWatermark
from .services import WATERMARK_KEY


def sources() -> dict[str, Any]:
    """The configuration and what discovery found, per source."""
    rows = TrafficSource.objects.order_by("name")
    return {"configured": str(settings.NETAWARE["TRAFFIC_SOURCES"]),
            "sources": [{"name": r.name, "enabled": r.enabled, "present": r.present, "series": r.series,
                         "checked_at": r.checked_at, "rejected_last_run": r.rejected_last_run,
                         "rejection_reasons": r.rejection_reasons} for r in rows]}


def observed(*, namespace: str, name: str) -> ObservedAppGroup | None:
    return ObservedAppGroup.objects.filter(namespace=namespace, name=name).first()


def learned_until() -> datetime | None:
    return TrafficWatermark.objects.filter(key=WATERMARK_KEY).values_list("last_end", flat=True).first()


def learned_edge_count() -> int:
    return LearnedEdge.objects.count()


def graph(row: ObservedAppGroup) -> dict[str, Any]:
    """Nodes and edges for a chart: edges sized by requests/s and bytes/s, coloured by p99."""
    workloads = row.document.get("spec", {}).get("workloads", [])
    return {"namespace": row.namespace, "name": row.name, "mode": row.mode, "learned_at": row.learned_at,
            "nodes": [{"name": w["name"], "selector": w.get("selector"), "controller": w.get("controller")}
                      for w in workloads],
            "edges": row.edges, "document": row.document}
