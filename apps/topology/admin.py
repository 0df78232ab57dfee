from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from .models import Node, TopologySnapshot


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("name", "zone", "region", "address", "allocatable_cpu_millicores", "allocatable_memory_bytes",
                    "ready", "source", "updated_at")
    list_filter = ("ready", "source", "region", "zone")
    search_fields = ("name", "zone", "region", "address")
    readonly_fields = ("updated_at",)


@admin.register(TopologySnapshot)
class TopologySnapshotAdmin(admin.ModelAdmin):
    """Snapshots are derived data: viewable, prunable, never edited by hand."""

    list_display = ("version", "created_at", "source", "node_count", "measured_pairs", "inferred_pairs",
                    "stale_pairs", "stale", "min_latency", "max_latency")
    list_filter = ("source", "stale")
    search_fields = ("version", "stale_reason")
    exclude = ("payload",)
    readonly_fields = ("summary",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[TopologySnapshot]:
        # The payload is megabytes of arrays: never pull it through the ORM for list or detail pages.
        return super().get_queryset(request).defer("payload")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    @admin.display(description="Summary")
    def summary(self, obj: TopologySnapshot) -> str:
        return format_html(
            "v{} from {} ({} nodes): {} measured, {} inferred, {} stale pairs; latency {}..{} ms, "
            "bandwidth {}..{} Mbps, loss {}..{} %; {} zone and {} region costs (1 unit = {} ms){}",
            obj.version, obj.get_source_display(), obj.node_count, obj.measured_pairs, obj.inferred_pairs,
            obj.stale_pairs, obj.min_latency, obj.max_latency, obj.min_bandwidth, obj.max_bandwidth,
            obj.min_lossrate, obj.max_lossrate, sum(len(v) for v in obj.zone_costs.values()),
            sum(len(v) for v in obj.region_costs.values()), round(obj.cost_unit_ms, 4),
            f"; STALE: {obj.stale_reason}" if obj.stale else "",
        )
