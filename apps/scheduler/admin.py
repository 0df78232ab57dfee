"""Admin: profiles are editable (validated by the model's clean()), decisions, pods and drift read-only."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from . import services
from .models import Decision, DriftAssessment, ObservedPod, SchedulerProfile
from .profiles import document_of

if TYPE_CHECKING:
    from django.db.models import Model
    from django.http import HttpRequest


@admin.register(SchedulerProfile)
class SchedulerProfileAdmin(SimpleHistoryAdmin):
    """Edits the stored fields (a netaware.io/v1alpha1 profile's); shows the profile as the current
    version's document (netaware.io/v1), which the API also accepts."""

    list_display = ("name", "is_default", "description", "updated")
    search_fields = ("name", "description")
    readonly_fields = ("document",)

    @admin.display(description="document (netaware.io/v1)")
    def document(self, obj: SchedulerProfile) -> str:
        document = document_of(obj) if obj.pk else None
        return format_html("<pre>{}</pre>", json.dumps(document, indent=2)) if document else "-"

    def save_model(self, request: HttpRequest, obj: SchedulerProfile, form: Any, change: bool) -> None:
        services.save_profile(profile=obj)

    def delete_model(self, request: HttpRequest, obj: SchedulerProfile) -> None:
        services.delete_profile(profile=obj)


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
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


@admin.register(DriftAssessment)
class DriftAssessmentAdmin(_ReadOnly):
    list_display = ("appgroup", "drift", "current_score", "best_score", "computed_at", "topology_version")
    search_fields = ("appgroup__namespace", "appgroup__name")
    list_select_related = ("appgroup",)
