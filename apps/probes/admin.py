"""Admin for the pipeline's tables: samples are written only by the pipeline, so they are read-only here."""

from django.contrib import admin

from .models import NodeRollup, NodeSample, PairLatest, PairRollup, PairSample, PullWatermark, WindowDigest


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PairSample)
class PairSampleAdmin(ReadOnlyAdmin):
    list_display = ("ts", "series", "source", "target", "value")
    list_filter = ("series",)
    search_fields = ("source", "target")
    date_hierarchy = "ts"
    show_full_result_count = False


@admin.register(NodeSample)
class NodeSampleAdmin(ReadOnlyAdmin):
    list_display = ("ts", "series", "node", "value")
    list_filter = ("series",)
    search_fields = ("node",)
    date_hierarchy = "ts"
    show_full_result_count = False


@admin.register(PairRollup)
class PairRollupAdmin(ReadOnlyAdmin):
    list_display = ("bucket", "series", "source", "target", "count", "minimum", "mean", "maximum")
    list_filter = ("series",)
    search_fields = ("source", "target")
    date_hierarchy = "bucket"
    show_full_result_count = False


@admin.register(NodeRollup)
class NodeRollupAdmin(ReadOnlyAdmin):
    list_display = ("bucket", "series", "node", "count", "minimum", "mean", "maximum")
    list_filter = ("series",)
    search_fields = ("node",)
    date_hierarchy = "bucket"


@admin.register(PullWatermark)
class PullWatermarkAdmin(admin.ModelAdmin):
    """Editable: moving a watermark back re-pulls (idempotently) from there."""

    list_display = ("query", "last_end", "updated_at")
    search_fields = ("query",)
    readonly_fields = ("updated_at",)


@admin.register(WindowDigest)
class WindowDigestAdmin(ReadOnlyAdmin):
    list_display = ("ts", "series", "pair_count", "digest")
    list_filter = ("series",)
    search_fields = ("series",)
    date_hierarchy = "ts"


@admin.register(PairLatest)
class PairLatestAdmin(ReadOnlyAdmin):
    list_display = ("series", "source", "target", "ts", "value")
    list_filter = ("series",)
    search_fields = ("source", "target")
    show_full_result_count = False
