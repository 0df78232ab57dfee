"""Observed traffic: the applications learned from the mesh, each one's graph with rates beside the
declared AppGroup's diff, and the adopt action (apps.traffic; docs/traffic.md)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.permissions import page_permission
from apps.appgroups import documents
from apps.traffic import selectors, services
from apps.traffic.api.views import ADOPT_PERMISSIONS
from apps.traffic.models import ObservedAppGroup

from .. import graph_svg
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


LATENCY_CLASSES = ((0.25, "slow"), (0.05, "medium"), (0.0, "fast"))  # p99 seconds above which; the page's legend


def latency_class(p99: float | None) -> str:
    if p99 is None:
        return "unknown"
    return next(name for bound, name in LATENCY_CLASSES if p99 > bound or bound == 0.0)


def _ms(seconds: float | None) -> str:
    return "unknown" if seconds is None else f"{1000 * seconds:.0f} ms"


def edge_text(edge: dict[str, Any]) -> str:
    """An edge's rates in one sentence: its hover text and its link's accessible name."""
    errors = edge.get("error_ratio")
    return (f"{edge['source']} → {edge['target']}: {edge['requests']:.2f} req/s, "
            f"{edge['request_bytes']:,.0f} B/s out, {edge['response_bytes']:,.0f} B/s back, "
            f"p50 {_ms(edge.get('p50'))}, p99 {_ms(edge.get('p99'))}, "
            f"errors {'unknown' if errors is None else f'{100 * errors:.1f} %'}"
            + (f", weight {edge['weight']:g}" if edge.get("weight") is not None else ""))


def observed_graph(row: ObservedAppGroup) -> tuple[list[dict[str, Any]], str]:
    """The edges, busiest first, with their learned weight and latency class, and the graph's SVG:
    edges as wide as their share of the busiest edge's traffic, coloured by p99."""
    workloads = row.document.get("spec", {}).get("workloads", [])
    weights = {(w["name"], d["name"]): float(d.get("weight", 1.0))
               for w in workloads for d in w.get("dependencies", [])}
    edges = sorted((dict(e) for e in row.edges or []), key=lambda e: -e["requests"])
    busiest = max((e["requests"] for e in edges), default=0.0) or 1.0
    for i, edge in enumerate(edges):
        edge["id"] = f"edge-{i}"
        edge["share"] = edge["requests"] / busiest
        edge["bar"] = max(2, round(100 * edge["share"]))
        edge["latency"] = latency_class(edge.get("p99"))
        edge["weight"] = weights.get((edge["source"], edge["target"]))
        edge["text"] = edge_text(edge)
    load: dict[str, float] = {}
    for edge in edges:
        for name in (edge["source"], edge["target"]):
            load[name] = load.get(name, 0.0) + edge["requests"]
    names = [w["name"] for w in workloads] + sorted({n for e in edges for n in (e["source"], e["target"])}
                                                    - {w["name"] for w in workloads})
    top = max(load.values(), default=0.0) or 1.0
    svg = graph_svg.draw(
        [graph_svg.GraphNode(n, load.get(n, 0.0) / top, f"{n}: {load.get(n, 0.0):.2f} req/s in and out") for n in names],
        [graph_svg.GraphEdge(e["source"], e["target"], e["share"], e["latency"], e["text"], f"#{e['id']}")
         for e in edges],
        label=f"Observed call graph of {row.namespace}/{row.name}; the edge table below lists the same figures")
    return edges, svg


@require_GET
def traffic_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    row = _observed(namespace, name)
    edges, svg = observed_graph(row)
    return render(request, "dashboard/traffic_detail.html", {
        "row": row, "edges": edges, "graph": mark_safe(svg),  # graph_svg escapes every text
        "diff": row.diff or {}, "yaml": document_yaml(row.document),
        "can_adopt": all(request.user.has_perm(p) for p in ADOPT_PERMISSIONS),
        "can_copy": request.user.has_perm("appgroups.add_appgroup")})


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
