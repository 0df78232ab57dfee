"""Observed traffic: the applications learned from the mesh, each one's graph with rates beside the
declared AppGroup's diff, and the adopt action (apps.traffic; docs/traffic.md)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.permissions import page_permission
from apps.appgroups import documents
from apps.traffic import selectors, services
from apps.traffic.api.views import ADOPT_PERMISSIONS
from apps.traffic.models import ObservedAppGroup

from ..forms import document_yaml


@require_GET
def traffic_list(request: HttpRequest) -> HttpResponse:
    rows = ObservedAppGroup.objects.order_by("namespace", "name")
    return render(request, "dashboard/traffic.html", {
        "rows": [{"row": r, "edges": len(r.edges or []),
                  "workloads": len(r.document.get("spec", {}).get("workloads", []))} for r in rows],
        "sources": selectors.sources(), "learned_until": selectors.learned_until()})


def _observed(namespace: str, name: str) -> ObservedAppGroup:
    row = selectors.observed(namespace=namespace, name=name)
    if row is None:
        raise Http404(f"no observed application {namespace}/{name}")
    return row


@require_GET
def traffic_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    row = _observed(namespace, name)
    edges = sorted(row.edges or [], key=lambda e: -e["requests"])
    busiest = max((e["requests"] for e in edges), default=0.0) or 1.0
    for edge in edges:  # bar width by traffic, colour class by p99 (the page's legend says the thresholds)
        edge["bar"] = max(2, round(100 * edge["requests"] / busiest))
        p99 = edge.get("p99")
        edge["latency"] = "unknown" if p99 is None else "slow" if p99 > 0.25 else "medium" if p99 > 0.05 else "fast"
    return render(request, "dashboard/traffic_detail.html", {
        "row": row, "edges": edges, "diff": row.diff or {}, "yaml": document_yaml(row.document),
        "can_adopt": all(request.user.has_perm(p) for p in ADOPT_PERMISSIONS)})


@require_POST
@page_permission(*ADOPT_PERMISSIONS, what="Adopting an observed AppGroup")
def traffic_adopt(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    row = _observed(namespace, name)
    try:
        appgroup = services.adopt(observed=row)
    except (services.AdoptRefused, documents.DocumentError) as exc:
        messages.error(request, f"Not adopted: {exc}")
        return redirect("dashboard-traffic-detail", namespace=namespace, name=name)
    messages.success(request, f"Adopted {appgroup.namespace}/{appgroup.name} (origin observed).")
    return redirect("dashboard-appgroup-detail", pk=appgroup.pk)
