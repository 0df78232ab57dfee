"""Pages of single objects and the search over them: a node (its links, pods and decisions), a zone
(its nodes and its medians to every zone), and search over nodes, zones, AppGroups and pods."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.appgroups.models import Placement
from apps.scheduler.models import Decision, ObservedPod
from apps.topology.models import Node

from .. import selectors

RECENT_DECISIONS = 20


@require_GET
def node_page(request, name: str):  # type: ignore[no-untyped-def]
    node = Node.objects.filter(name=name).first()
    links = selectors.node_links(name=name)
    if node is None and not (links and links["known"]):
        raise Http404(f"No node {name!r}: not in the node list, nor in the current topology.")
    return render(request, "dashboard/node.html", {
        "name": name, "node": node, "links": links,
        "placements": Placement.objects.filter(node_name=name).select_related("appgroup", "workload")
                               .order_by("pod_namespace", "pod_name"),
        "pods": ObservedPod.objects.filter(node_name=name, terminal=False).order_by("namespace", "name")
                                   .values_list("namespace", "name", "phase"),
        "decisions": Decision.objects.filter(node=name).defer("breakdown").order_by("-id")[:RECENT_DECISIONS],
    })


@require_GET
def zone_page(request, name: str):  # type: ignore[no-untyped-def]
    nodes = list(Node.objects.filter(zone=name).order_by("name"))
    pairs = selectors.zone_pairs(name=name)
    if not nodes and not (pairs and pairs["zone"]):
        raise Http404(f"No zone {name!r}: no node is in it.")
    names = [n.name for n in nodes] or (pairs["zone"]["nodes"] if pairs and pairs["zone"] else [])
    return render(request, "dashboard/zone.html", {
        "name": name, "nodes": nodes, "pairs": pairs,
        "placements": Placement.objects.filter(node_name__in=names).select_related("appgroup", "workload")
                               .order_by("node_name", "pod_namespace", "pod_name"),
    })


@require_GET
def search_page(request):  # type: ignore[no-untyped-def]
    query = request.GET.get("q", "")
    results = selectors.search(query=query)
    return render(request, "dashboard/search.html", {
        "query": query, "results": results, "total": sum(len(v) for v in results.values()),
        "cap": selectors.MAX_SEARCH_RESULTS,
    })
