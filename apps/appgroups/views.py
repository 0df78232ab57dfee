"""AppGroup dashboard pages: list, detail (graph, order, scored placements), edit, YAML, delete.

Server-rendered; plotly only draws the communication graph. Every write goes through
``services.save_appgroup`` / ``services.delete_appgroup`` via the forms in forms.py.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.db.models import Count
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from netaware_site.dashboard import edits_need_user

from . import quantity, resources, selectors, services
from .dashboard import graph_figure, placement_scores
from .forms import AppGroupYAMLForm, StructuredAppGroupForm, document_yaml
from .models import AppGroup, Placement

TEMPLATE_APPGROUP = Path("scenarios") / "online-boutique-appgroup.yaml"


def _appgroup(pk: int) -> AppGroup:
    appgroup = selectors.appgroups_with_graph().filter(pk=pk).first()
    if appgroup is None:
        raise Http404(f"No AppGroup with id {pk}.")
    return appgroup


@require_GET
def appgroup_list(request):
    from apps.topology.models import Node

    groups = list(
        AppGroup.objects.annotate(
            n_workloads=Count("workloads", distinct=True),
            n_dependencies=Count("dependencies", distinct=True),
            n_placements=Count("placements", distinct=True),
        ).order_by("namespace", "name")
    )
    zone_of = dict(Node.objects.values_list("name", "zone"))
    per_group: dict[int, dict[str, int]] = {}
    zones: set[str] = set()
    for group_id, node in Placement.objects.values_list("appgroup_id", "node_name"):
        zone = zone_of.get(node) or "(unknown)"
        zones.add(zone)
        counts = per_group.setdefault(group_id, {})
        counts[zone] = counts.get(zone, 0) + 1
    zone_list = sorted(zones)
    overview = [
        {"group": g, "counts": [per_group.get(g.pk, {}).get(z, 0) for z in zone_list]}
        for g in groups if g.pk in per_group
    ]
    totals = [sum(row["counts"][i] for row in overview) for i in range(len(zone_list))]
    return render(request, "appgroups/list.html", {
        "groups": groups, "zones": zone_list, "overview": overview, "zone_totals": totals,
    })


@require_GET
def appgroup_detail(request, pk: int):
    appgroup = _appgroup(pk)
    spec = selectors.appgroup_spec(appgroup=appgroup)
    order = resources.topology_order(spec)
    scores = placement_scores(appgroup=appgroup, spec=spec)
    weights = {w.name: w.weight for w in spec.workloads}
    workload_rows = [
        {"name": name, "weight": weights[name], "position": i + 1,
         "score": scores.workload_scores.get(name),
         "dependencies": [
             {"target": d.target, "sensitivity": d.sensitivity, "max_network_cost": d.max_network_cost,
              "min_bandwidth": quantity.format_bytes(d.min_bandwidth_bps) if d.min_bandwidth_bps is not None else None}
             for d in spec.workload(name).dependencies],
         "placed": sum(1 for p in scores.pods if p.workload == name)}
        for i, name in enumerate(order.order)
    ]
    return render(request, "appgroups/detail.html", {
        "appgroup": appgroup, "spec": spec, "order": order, "workload_rows": workload_rows,
        "scores": scores, "figure": graph_figure(spec, list(order.order)),
        "export": {
            "netaware": reverse("appgroup-export", kwargs={"pk": appgroup.pk}) + "?format=yaml&flavor=netaware",
            "diktyo": reverse("appgroup-export", kwargs={"pk": appgroup.pk}) + "?format=yaml&flavor=diktyo",
            "json": reverse("appgroup-export", kwargs={"pk": appgroup.pk}) + "?format=json&flavor=netaware",
        },
    })


@require_http_methods(["GET", "POST"])
@edits_need_user
def appgroup_edit(request, pk: int):
    appgroup = _appgroup(pk)
    spec = selectors.appgroup_spec(appgroup=appgroup)
    form = StructuredAppGroupForm(request.POST or None, appgroup=appgroup, spec=spec)
    if request.method == "POST" and form.is_valid():
        try:
            form.save()
        except services.AppGroupValidationError as exc:
            form.add_service_errors(exc.errors)
        else:
            messages.success(request, f"Saved {appgroup}.")
            return redirect("dashboard-appgroup-detail", pk=appgroup.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "appgroups/edit.html", {"appgroup": appgroup, "form": form}, status=status)


@require_http_methods(["GET", "POST"])
@edits_need_user
def appgroup_yaml(request, pk: int):
    appgroup = _appgroup(pk)
    if request.method == "POST":
        form = AppGroupYAMLForm(request.POST, appgroup=appgroup)
        if form.is_valid():
            saved = form.save()
            if saved is not None:
                messages.success(request, f"Saved {saved} from YAML.")
                return redirect("dashboard-appgroup-detail", pk=saved.pk)
        return render(request, "appgroups/yaml.html", {"appgroup": appgroup, "form": form}, status=400)
    initial = document_yaml(services.export_resource(appgroup=appgroup, flavor="netaware"))
    form = AppGroupYAMLForm(initial={"document": initial}, appgroup=appgroup)
    return render(request, "appgroups/yaml.html", {"appgroup": appgroup, "form": form})


@require_http_methods(["GET", "POST"])
@edits_need_user
def appgroup_new(request):
    if request.method == "POST":
        form = AppGroupYAMLForm(request.POST)
        if form.is_valid():
            saved = form.save()
            if saved is not None:
                messages.success(request, f"Created {saved}.")
                return redirect("dashboard-appgroup-detail", pk=saved.pk)
        return render(request, "appgroups/yaml.html", {"appgroup": None, "form": form}, status=400)
    path = Path(settings.BASE_DIR) / TEMPLATE_APPGROUP
    template = path.read_text() if path.is_file() else ""
    form = AppGroupYAMLForm(initial={"document": template})
    return render(request, "appgroups/yaml.html", {"appgroup": None, "form": form, "template_path": TEMPLATE_APPGROUP})


@require_http_methods(["GET", "POST"])
@edits_need_user
def appgroup_delete(request, pk: int):
    appgroup = get_object_or_404(AppGroup.objects.annotate(
        n_workloads=Count("workloads", distinct=True), n_placements=Count("placements", distinct=True)), pk=pk)
    if request.method == "POST":
        label = str(appgroup)
        services.delete_appgroup(appgroup=appgroup)
        messages.success(request, f"Deleted {label}.")
        return redirect("dashboard-appgroups")
    return render(request, "appgroups/delete.html", {"appgroup": appgroup})
