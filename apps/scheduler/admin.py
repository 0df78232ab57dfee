"""Admin: profiles are editable (validated by the model's clean()), decisions and pods read-only."""

from __future__ import annotations

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from . import services
from .models import Decision, ObservedPod, SchedulerProfile


@admin.register(SchedulerProfile)
class SchedulerProfileAdmin(SimpleHistoryAdmin):
    list_display = ("name", "is_default", "description", "updated")
    search_fields = ("name", "description")

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        services.save_profile(profile=obj)

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        services.delete_profile(profile=obj)


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Decision)
class DecisionAdmin(_ReadOnly):
    list_display = ("id", "ts", "verb", "pod_namespace", "pod_name", "profile", "workload", "node", "candidates",
                    "duration_ms", "error")
    list_filter = ("verb", "profile")
    search_fields = ("pod_name", "pod_namespace", "workload", "error")
    date_hierarchy = "ts"


@admin.register(ObservedPod)
class ObservedPodAdmin(_ReadOnly):
    list_display = ("namespace", "name", "node_name", "phase", "terminal", "cpu_request_millicores",
                    "memory_request_bytes", "updated_at")
    list_filter = ("terminal", "phase")
    search_fields = ("namespace", "name", "node_name")
