"""Admin for AppGroups: workloads and dependencies inline, validated by the models' own rules.

Dependency choices are limited to the AppGroup's workloads; anything else (a target from another
AppGroup posted by hand, a self-dependency, a zero sensitivity sum) is rejected by
``Dependency.clean()`` as a field error on the form, never a 500.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin

from . import services
from .models import AppGroup, AppGroupTombstone, Dependency, Placement, Workload


class WorkloadInline(admin.TabularInline):
    model = Workload
    extra = 0
    fields = (
        "name",
        "position",
        "selector",
        "weight",
        "controller_kind",
        "controller_name",
        "replicas",
        "cpu_request",
        "memory_request",
    )


class DependencyInlineForm(forms.ModelForm):
    class Meta:
        model = Dependency
        fields = (
            "source",
            "target",
            "latency",
            "bandwidth",
            "lossrate",
            "max_network_cost",
            "min_bandwidth",
            "position",
        )


class DependencyInline(admin.TabularInline):
    model = Dependency
    form = DependencyInlineForm
    fk_name = "appgroup"
    extra = 0

    def formfield_for_foreignkey(self, db_field, request, **kwargs):  # type: ignore[no-untyped-def]
        if db_field.name in ("source", "target"):
            object_id = request.resolver_match.kwargs.get("object_id") if request.resolver_match else None
            kwargs["queryset"] = (
                Workload.objects.filter(appgroup_id=object_id) if object_id else Workload.objects.none()
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(AppGroup)
class AppGroupAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "namespace",
        "topology_sorting_algorithm",
        "topology_mode",
        "origin",
        "last_synced_at",
        "updated_at",
    )
    list_filter = ("namespace", "origin", "topology_sorting_algorithm", "topology_mode")
    search_fields = ("name", "namespace", "description")
    readonly_fields = AppGroup.BOOKKEEPING_FIELDS
    inlines = (WorkloadInline, DependencyInline)

    # The cluster sync hears of admin edits through the same services as every other path.
    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        obj._old_key = services.key_before_save(appgroup=obj) if change else None
        obj._created = not change
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):  # type: ignore[no-untyped-def]
        super().save_related(request, form, formsets, change)
        obj = form.instance
        services.changed(appgroup=obj, old_key=getattr(obj, "_old_key", None), created=getattr(obj, "_created", False),
                         notify_cluster=True)

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        services.delete_appgroup(appgroup=obj)

    def delete_queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        for appgroup in queryset:
            services.delete_appgroup(appgroup=appgroup)


class WorkloadDependencyInline(admin.TabularInline):
    """Dependencies declared by one workload (edited from the workload page)."""

    model = Dependency
    form = DependencyInlineForm
    fk_name = "source"
    extra = 0
    exclude = ("appgroup",)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):  # type: ignore[no-untyped-def]
        if db_field.name == "target":
            object_id = request.resolver_match.kwargs.get("object_id") if request.resolver_match else None
            group = (
                Workload.objects.filter(pk=object_id).values_list("appgroup_id", flat=True).first()
                if object_id
                else None
            )
            kwargs["queryset"] = (
                Workload.objects.filter(appgroup_id=group) if group else Workload.objects.none()
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ("name", "appgroup", "weight", "controller_kind", "controller_name", "replicas")
    list_filter = ("appgroup__namespace",)
    search_fields = ("name", "appgroup__name", "controller_name")
    list_select_related = ("appgroup",)
    inlines = (WorkloadDependencyInline,)


@admin.register(Dependency)
class DependencyAdmin(admin.ModelAdmin):
    list_display = (
        "source",
        "target",
        "appgroup",
        "latency",
        "bandwidth",
        "lossrate",
        "max_network_cost",
        "min_bandwidth",
    )
    list_filter = ("appgroup",)
    list_select_related = ("appgroup", "source", "target")
    readonly_fields = ("min_bandwidth_bps",)


@admin.register(Placement)
class PlacementAdmin(admin.ModelAdmin):
    list_display = ("pod_namespace", "pod_name", "node_name", "appgroup", "workload", "source", "bound_at")
    list_filter = ("source", "appgroup", "node_name")
    search_fields = ("pod_name", "pod_namespace", "node_name", "pod_uid")
    list_select_related = ("appgroup", "workload")


@admin.register(AppGroupTombstone)
class AppGroupTombstoneAdmin(admin.ModelAdmin):
    """Pending deletions the cluster has not seen yet: visible, deletable (to cancel), never edited."""

    list_display = ("namespace", "name", "resource_uid", "resource_version", "deleted_at")
    search_fields = ("namespace", "name", "resource_uid")
    readonly_fields = ("namespace", "name", "resource_uid", "resource_version", "deleted_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
