"""Admin for the pipeline's tables: samples are written only by the pipeline, so they are read-only here."""

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .models import NodeRollup, NodeSample, PairLatest, PairRollup, PairSample, PullWatermark, WindowDigest


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class SeriesAdmin(ReadOnlyAdmin):
    """A time-series table: filtered by series, browsed by time, never counted in full (millions of rows)."""

    list_filter = ("series",)
    date_hierarchy = "ts"
    show_full_result_count = False


ROLLUP_COLUMNS = ("count", "minimum", "mean", "maximum")


@admin.register(PairSample)
class PairSampleAdmin(SeriesAdmin):
    list_display = ("ts", "series", "source", "target", "value")
    search_fields = ("source", "target")


@admin.register(NodeSample)
class NodeSampleAdmin(SeriesAdmin):
    list_display = ("ts", "series", "node", "value")
    search_fields = ("node",)


@admin.register(PairRollup)
class PairRollupAdmin(SeriesAdmin):
    list_display = ("bucket", "series", "source", "target", *ROLLUP_COLUMNS)
    search_fields = ("source", "target")
    date_hierarchy = "bucket"


@admin.register(NodeRollup)
class NodeRollupAdmin(SeriesAdmin):
    list_display = ("bucket", "series", "node", *ROLLUP_COLUMNS)
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
