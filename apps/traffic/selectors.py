"""Reads of the observed-traffic app (the API, the dashboard, /metrics)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from apps.appgroups.graph import AppGroupSpec

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


def observed_covering(*, spec: AppGroupSpec) -> tuple[ObservedAppGroup | None, int]:
    """The observed application of ``spec``'s namespace whose workloads ``spec`` selects most, and how many
    of ``spec``'s workloads it covers (matched by selector: the observed selector's labels)."""
    best, best_count = None, 0
    for row in ObservedAppGroup.objects.filter(namespace=spec.namespace).order_by("name"):
        labels = [dict((w.get("selector") or {}).get("matchLabels") or {})
                  for w in row.document.get("spec", {}).get("workloads", [])]
        count = sum(1 for w in spec.workloads if any(w.selector.matches(lab) for lab in labels))
        if count > best_count:
            best, best_count = row, count
    return best, best_count


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
