"""Topology pages: heatmap (metric and quantile selectable), zone graph and table, nodes; one link's
history. Pages are shells; their data comes from the JSON endpoints below, polled by the page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.topology.selectors import current_snapshot

from .. import selectors
from .common import data_response, error_response


@require_GET
def topology_page(request: HttpRequest) -> HttpResponse:
    # The view's state lives in the query string (metric, zoom, worst-pairs sort): a reload or a
    # shared link shows the same; the metric is read here so the early data fetch asks for it.
    metric = request.GET.get("metric")
    return render(request, "dashboard/topology.html", {
        "metrics": [(key, label, unit) for key, (_s, label, unit, _f) in selectors.METRICS.items()],
        "default_metric": metric if metric in selectors.METRICS else _default_metric(),
        "top_choices": (10, 20, 50, 100),
    })


def _default_metric() -> str:
    snapshot = current_snapshot()
    q = round(snapshot.latency_quantile, 2) if snapshot else 0.9
    return {0.5: "latency_p50", 0.99: "latency_p99"}.get(q, "latency_p90")


@require_GET
def heatmap_data(request: HttpRequest) -> HttpResponse:
    metric = request.GET.get("metric") or _default_metric()
    try:
        etag, data = selectors.heatmap(metric=metric)
    except ValueError as exc:
        return error_response(str(exc), field="metric")
    if data is None:
        return error_response("No NetworkTopology yet: the pipeline has not stored a snapshot (it rebuilds every "
                              "60 s), or POST one to /api/topology/import.", status=404)
    snapshot = current_snapshot()
    fresh = selectors.freshness(snapshot)  # type: ignore[arg-type]
    return data_response(request, etag + ("s" if fresh["stale"] else ""), {**data, **fresh})


@require_GET
def worst_pairs_data(request: HttpRequest) -> HttpResponse:
    """The worst node pairs by one metric (``sort``), top ``limit``; ``order=best`` ranks the best first."""
    raw_limit = request.GET.get("limit") or "20"
    if not raw_limit.isdigit():
        return error_response(f"limit: {raw_limit!r} is not a whole number", field="limit")
    order = request.GET.get("order") or "worst"
    if order not in ("worst", "best"):
        return error_response(f"order: {order!r} is not one of worst, best", field="order")
    sort = request.GET.get("sort") or _default_metric()
    try:
        etag, data = selectors.worst_pairs(sort=sort, limit=int(raw_limit), worst_first=order == "worst")
    except ValueError as exc:
        field = str(exc).split(":", 1)[0]
        return error_response(str(exc), field=field)
    if data is None:
        return error_response("No NetworkTopology yet.", status=404)
    return data_response(request, etag, data)


@require_GET
def zones_data(request: HttpRequest) -> HttpResponse:
    etag, data = selectors.zone_summary()
    if data is None:
        return error_response("No NetworkTopology yet.", status=404)
    return data_response(request, etag, data)


@require_GET
def link_page(request: HttpRequest, source: str, target: str) -> HttpResponse:
    return render(request, "dashboard/link.html", {
        "source": source, "target": target, "ranges": list(selectors.LINK_RANGES),
        "range": request.GET.get("range") if request.GET.get("range") in selectors.LINK_RANGES else "6h",
        "custom": {"from": request.GET.get("from", ""), "to": request.GET.get("to", "")},
        "now": selectors.link_now(source=source, target=target),
    })


@require_GET
def link_data(request: HttpRequest, source: str, target: str) -> HttpResponse:
    try:
        span = selectors.parse_range(value=request.GET.get("range"), since=request.GET.get("from"),
                                     until=request.GET.get("to"))
    except ValueError as exc:
        return error_response(str(exc), field=str(exc).split(":", 1)[0])
    data = selectors.link_history(source=source, target=target, span=span)
    data["now"] = selectors.link_now(source=source, target=target)
    data["events"] = selectors.link_events(source=source, target=target, span=span)
    return data_response(request, None, data)
