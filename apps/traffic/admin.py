"""Admin for the observed-traffic tables: samples, states and observed AppGroups are written by the
pipeline (read-only here); the learning modes are set here, in the API or per namespace by default."""

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .models import (
    EdgeRollup,
    EdgeSample,
    LearnedEdge,
    LearningMode,
    ObservedAppGroup,
    TrafficSource,
    TrafficWatermark,
)

EDGE = ("source_namespace", "source_workload", "target_namespace", "target_workload")


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(EdgeSample)
class EdgeSampleAdmin(ReadOnlyAdmin):
    list_display = ("ts", "source", *EDGE, "requests", "request_bytes", "response_bytes", "p50", "p99", "error_ratio")
    list_filter = ("source",)
    search_fields = ("source_workload", "target_workload", "source_namespace")
    date_hierarchy = "ts"
    show_full_result_count = False


@admin.register(EdgeRollup)
class EdgeRollupAdmin(ReadOnlyAdmin):
    list_display = ("bucket", "source", *EDGE, "count", "requests_mean", "requests_max")
    list_filter = ("source",)
    date_hierarchy = "bucket"
    show_full_result_count = False


@admin.register(LearnedEdge)
class LearnedEdgeAdmin(ReadOnlyAdmin):
    list_display = (*EDGE, "source", "requests", "request_bytes", "response_bytes", "p50", "p99", "last_seen")
    search_fields = ("source_workload", "target_workload", "source_namespace")


@admin.register(ObservedAppGroup)
class ObservedAppGroupAdmin(ReadOnlyAdmin):
    list_display = ("namespace", "name", "mode", "declared", "hot_missing", "learned_at", "adopt_error")
    list_filter = ("mode", "namespace")


@admin.register(TrafficSource)
class TrafficSourceAdmin(ReadOnlyAdmin):
    list_display = ("name", "enabled", "present", "series", "checked_at", "rejected_last_run")


@admin.register(TrafficWatermark)
class TrafficWatermarkAdmin(admin.ModelAdmin):
    list_display = ("key", "last_end", "updated_at")


@admin.register(LearningMode)
class LearningModeAdmin(admin.ModelAdmin):
    list_display = ("namespace", "application", "mode", "updated_at")
    list_filter = ("mode",)
