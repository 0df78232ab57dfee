"""Dashboard pages of the topology app (the heatmaps come from the JSON API the page calls)."""

from django.db.models import Count
from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def topology_page(request):
    from apps.appgroups.models import Placement

    placed = dict(Placement.objects.values_list("node_name").annotate(n=Count("id")).values_list("node_name", "n"))
    return render(request, "topology/topology.html", {"placements_by_node": placed})
