"""AppGroup pages: list, detail (graph, order, scored placements), the structured editor (create and
edit without YAML, validated as you type), YAML import/edit, delete.

Every write and every validation goes through ``apps.appgroups.services`` (``import_document`` /
``validate_document``), the service behind the API: the editor refuses exactly what the API refuses.
"""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from django.conf import settings
from django.contrib import messages
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.permissions import missing, page_permission, refusal
from apps.appgroups import documents, selectors, services, validators
from apps.appgroups.choices import TopologyMode, TopologySortingAlgorithm
from apps.appgroups.models import AppGroup, Placement
from apps.scheduler.models import ObservedPod
from apps.topology.models import Node
from apps.traffic import selectors as traffic_selectors
from netaware_core import quantity

from ..appgroup_figures import graph_figure, graph_svg_markup, placement_scores
from ..forms import AppGroupYAMLForm, document_yaml
from ..overlaps import overlapping_appgroups
from .common import data_response, error_response

if TYPE_CHECKING:
    from apps.appgroups.graph import AppGroupSpec

TEMPLATE_APPGROUP = Path("scenarios") / "online-boutique-appgroup.yaml"
ADD, CHANGE, DELETE = "appgroups.add_appgroup", "appgroups.change_appgroup", "appgroups.delete_appgroup"
MAX_PREVIEW_PODS = 20


def _appgroup(pk: int) -> AppGroup:
    appgroup = selectors.appgroups_with_graph().filter(pk=pk).first()
    if appgroup is None:
        raise Http404(f"No AppGroup with id {pk}.")
    return appgroup


@require_GET
def appgroup_list(request: HttpRequest) -> HttpResponse:
    groups = list(
        AppGroup.objects.annotate(
            n_workloads=Count("workloads", distinct=True),
            n_dependencies=Count("dependencies", distinct=True),
            n_placements=Count("placements", distinct=True),
        ).order_by("namespace", "name")
    )
    flags = overlapping_appgroups()
    for g in groups:
        g.overlaps = flags.get(f"{g.namespace}/{g.name}", [])  # type: ignore[attr-defined]  # for the template
    zone_of = dict(Node.objects.values_list("name", "zone"))
    per_group: dict[int, dict[str, int]] = {}
    zones: set[str] = set()
    for group_id, node in Placement.objects.values_list("appgroup_id", "node_name"):
        zone = zone_of.get(node) or "(unknown)"
        zones.add(zone)
        counts = per_group.setdefault(group_id, {})
        counts[zone] = counts.get(zone, 0) + 1
    zone_list = sorted(zones)
    overview: list[dict[str, Any]] = [
        {"group": g, "counts": [per_group.get(g.pk, {}).get(z, 0) for z in zone_list]}
        for g in groups if g.pk in per_group
    ]
    totals = [sum(row["counts"][i] for row in overview) for i in range(len(zone_list))]
    return render(request, "dashboard/appgroups/list.html", {
        "groups": groups, "zones": zone_list, "overview": overview, "zone_totals": totals,
    })


@require_GET
def appgroup_history(request: HttpRequest, pk: int) -> HttpResponse:
    """Who changed the AppGroup, when, and how: each saved version's document against the one before."""
    appgroup = get_object_or_404(AppGroup, pk=pk)
    records = list(appgroup.history.select_related("history_user").order_by("history_id"))
    entries = []
    previous: dict[str, Any] | None = None
    for record in records:
        now = record.document
        before = document_yaml(previous).splitlines() if previous else []
        after = document_yaml(now).splitlines() if now else []
        diff = list(difflib.unified_diff(before, after, "before", "after", lineterm="", n=2))[2:]
        entries.append({"record": record, "user": record.history_user, "kind": {"+": "created", "~": "changed", "-": "deleted"}
                        .get(record.history_type, record.history_type), "diff": diff,
                        "unchanged": previous is not None and now == previous})
        previous = now or previous
    entries.reverse()
    return render(request, "dashboard/appgroups/history.html", {"appgroup": appgroup, "entries": entries})


@require_GET
def appgroup_detail(request: HttpRequest, pk: int) -> HttpResponse:
    appgroup = _appgroup(pk)
    spec = selectors.appgroup_spec(appgroup=appgroup)
    order = documents.topology_order(spec)
    scores = placement_scores(appgroup=appgroup, spec=spec)
    weights = {w.name: w.weight for w in spec.workloads}

    workload_rows = [
        {"name": name, "weight": weights[name], "position": i + 1,
         "score": scores.workload_scores.get(name),
         "dependencies": [
             {"target": d.target, "sensitivity": d.sensitivity, "max_network_cost": d.max_network_cost,
              "min_bandwidth": quantity.format_bytes(d.min_bandwidth_bps) if d.min_bandwidth_bps is not None else None,
              "weight": d.weight}
             for d in spec.workload(name).dependencies],
         "placed": sum(1 for p in scores.pods if p.workload == name)}
        for i, name in enumerate(order.order)
    ]
    export = reverse("appgroup-export", kwargs={"pk": appgroup.pk})
    return render(request, "dashboard/appgroups/detail.html", {
        "appgroup": appgroup, "spec": spec, "order": order, "workload_rows": workload_rows,
        "scores": scores,
        "graph": mark_safe(graph_svg_markup(spec, list(order.order))),  # graph_svg escapes every text
        "overlaps": overlapping_appgroups().get(str(appgroup), []),
        "export": {
            "netaware": export + "?format=yaml&flavor=netaware",
            "diktyo": export + "?format=yaml&flavor=diktyo",
            "json": export + "?format=json&flavor=netaware",
        },
    })


# --- structured editor --------------------------------------------------------------------------


def _editor(request: HttpRequest, appgroup: AppGroup | None, prefill: dict[str, Any] | None = None) -> HttpResponse:
    if appgroup is not None:
        document = services.export_document(appgroup=appgroup, flavor="netaware")
    elif prefill is not None:
        document = prefill
    else:
        document = {"apiVersion": documents.API_VERSION, "kind": documents.APPGROUP_KIND,
                    "metadata": {"namespace": "default", "name": ""},
                    "spec": {"topologySortingAlgorithm": TopologySortingAlgorithm.KAHN, "workloads": []}}
    return render(request, "dashboard/appgroups/editor.html", {
        "appgroup": appgroup, "document": document, "algorithms": TopologySortingAlgorithm.values,
        "topology_modes": TopologyMode.choices,
        "validate_url": reverse("dashboard-appgroup-validate") + (f"?pk={appgroup.pk}" if appgroup else ""),
        "save_url": reverse("dashboard-appgroup-save") + (f"?pk={appgroup.pk}" if appgroup else ""),
        "preview_url": reverse("dashboard-selector-preview"),
    })


@require_GET
@page_permission(ADD, what="Creating an AppGroup")
def appgroup_new(request: HttpRequest) -> HttpResponse:
    """The editor, empty or (``?from=observed&namespace=NS&app=NAME``) filled with an observed
    AppGroup's document: one click from the traffic page, nothing saved until Create."""
    if request.GET.get("from") != "observed":
        return _editor(request, None)
    namespace, name = request.GET.get("namespace", ""), request.GET.get("app", "")
    observed = traffic_selectors.observed(namespace=namespace, name=name)
    if observed is None:
        raise Http404(f"app: no observed application {namespace}/{name}")
    return _editor(request, None, prefill=copy.deepcopy(observed.document))


@require_GET
@page_permission(CHANGE, what="Editing an AppGroup")
def appgroup_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _editor(request, _appgroup(pk))


def _document(request: HttpRequest) -> tuple[dict[str, Any] | None, str]:
    try:
        body = orjson.loads(request.body or b"{}")
    except orjson.JSONDecodeError as exc:
        return None, f"body: not JSON ({exc})"
    document = body.get("document") if isinstance(body, dict) else None
    if not isinstance(document, dict):
        return None, "document: required, an AppGroup document (an object)"
    return document, ""


def _preview(spec: AppGroupSpec) -> dict[str, Any]:
    order = documents.topology_order(spec)
    return {"order": list(order.order), "cyclic": bool(getattr(order, "cyclic", False)),
            "cycle": list(getattr(order, "cycle_nodes", ()) or ()), "algorithm": order.algorithm,
            "figure": graph_figure(spec, list(order.order))}


@require_POST
@page_permission(ADD, CHANGE, what="Validating an AppGroup")
def appgroup_validate(request: HttpRequest) -> HttpResponse:
    """Dry run of a save: errors by field path, and the graph preview and order when valid."""
    document, problem = _document(request)
    if document is None:
        return error_response(problem)
    appgroup = _target(request)
    try:
        spec = services.validate_document(document=document, appgroup=appgroup)
    except documents.DocumentError as exc:
        errors = exc.errors
        try:  # a preview of the graph even while, e.g., a name clashes
            preview = _preview(documents.spec_from_document(document))
        except documents.DocumentError:
            preview = None
        return data_response(request, None, {"valid": False, "errors": errors, "preview": preview})
    return data_response(request, None, {"valid": True, "errors": {}, "preview": _preview(spec)})


def _target(request: HttpRequest) -> AppGroup | None:
    pk = request.GET.get("pk")
    if not pk:
        return None
    if not pk.isdigit():
        raise Http404("pk: not an AppGroup id")
    return get_object_or_404(AppGroup, pk=int(pk))


@require_POST
def appgroup_save(request: HttpRequest) -> HttpResponse:
    appgroup = _target(request)
    return _save(request, appgroup)


def _save(request: HttpRequest, appgroup: AppGroup | None) -> HttpResponse:
    from django.core.exceptions import PermissionDenied

    needed = [CHANGE] if appgroup is not None else [ADD]
    lacking = missing(request.user, needed)
    if lacking:
        raise PermissionDenied(refusal(lacking, "Saving an AppGroup"))
    document, problem = _document(request)
    if document is None:
        return error_response(problem)
    try:
        saved = services.import_document(document=document, appgroup=appgroup, create_only=appgroup is None)
    except documents.DocumentError as exc:
        return data_response(request, None, {"valid": False, "errors": exc.errors}, status=400)
    messages.success(request, f"{'Saved' if appgroup else 'Created'} {saved}.")
    return data_response(request, None, {"valid": True, "id": saved.pk,
                                         "url": reverse("dashboard-appgroup-detail", kwargs={"pk": saved.pk})},
                         status=200 if appgroup else 201)


@require_POST
@page_permission(ADD, CHANGE, what="Previewing selectors")
def label_selector_preview(request: HttpRequest) -> HttpResponse:
    """Pods of the cluster watcher's cache that a selector matches now (namespace given)."""

    try:
        body = orjson.loads(request.body or b"{}")
        namespace = str(body.get("namespace") or "default")
        selector = documents.label_selector_from_mapping(validators.normalize_label_selector(body.get("selector") or {}))
    except (orjson.JSONDecodeError, AttributeError, validators.SelectorError) as exc:
        return error_response(str(exc), field="selector")
    pods = ObservedPod.objects.filter(namespace=namespace, terminal=False).values_list("name", "labels", "node_name")
    matched = [(name, node) for name, labels, node in pods if selector.matches(labels or {})]
    return data_response(request, None, {
        "namespace": namespace, "count": len(matched),
        "pods": [{"name": n, "node": node} for n, node in matched[:MAX_PREVIEW_PODS]],
        "known": pods.count(),
    })


# --- YAML, delete ------------------------------------------------------------------------------


def _save_yaml(request: HttpRequest, appgroup: AppGroup | None, *, done: str) -> HttpResponse:
    """POST of the YAML page: save and go to the AppGroup, or show the document's errors with a 400."""
    form = AppGroupYAMLForm(request.POST, appgroup=appgroup)
    if form.is_valid():
        saved = form.save()
        if saved is not None:
            messages.success(request, done.format(saved))
            return redirect("dashboard-appgroup-detail", pk=saved.pk)
    return render(request, "dashboard/appgroups/yaml.html", {"appgroup": appgroup, "form": form}, status=400)


@require_http_methods(["GET", "POST"])
@page_permission(CHANGE, what="Editing an AppGroup")
def appgroup_yaml(request: HttpRequest, pk: int) -> HttpResponse:
    appgroup = _appgroup(pk)
    if request.method == "POST":
        return _save_yaml(request, appgroup, done="Saved {} from YAML.")
    initial = document_yaml(services.export_document(appgroup=appgroup, flavor="netaware"))
    form = AppGroupYAMLForm(initial={"document": initial}, appgroup=appgroup)
    return render(request, "dashboard/appgroups/yaml.html", {"appgroup": appgroup, "form": form})


@require_http_methods(["GET", "POST"])
@page_permission(ADD, what="Importing an AppGroup")
def appgroup_import(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _save_yaml(request, None, done="Created {}.")
    path = Path(settings.BASE_DIR) / TEMPLATE_APPGROUP
    template = path.read_text() if path.is_file() else ""
    form = AppGroupYAMLForm(initial={"document": template})
    return render(request, "dashboard/appgroups/yaml.html", {"appgroup": None, "form": form,
                                                             "template_path": TEMPLATE_APPGROUP})


@require_http_methods(["GET", "POST"])
@page_permission(DELETE, what="Deleting an AppGroup")
def appgroup_delete(request: HttpRequest, pk: int) -> HttpResponse:
    appgroup = get_object_or_404(AppGroup.objects.annotate(
        n_workloads=Count("workloads", distinct=True), n_placements=Count("placements", distinct=True)), pk=pk)
    if request.method == "POST":
        label = str(appgroup)
        services.delete_appgroup(appgroup=appgroup)
        messages.success(request, f"Deleted {label}.")
        return redirect("dashboard-appgroups")
    return render(request, "dashboard/appgroups/delete.html", {"appgroup": appgroup})
