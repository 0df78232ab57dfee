"""Admin for AppGroups: one page edits an AppGroup with its workloads and dependencies inline.

The page's forms only convert values. The AppGroup document they make up is judged as a whole by the
same validator as every other entry point (``services.validate_document``: the CRD schema, the
semantic rules, the database's rules), when the last inline is cleaned, and each problem is shown on
the row and field it names, with the same message the API, the editors and the sync give. A valid
page is saved by ``services.save_appgroup`` (tombstones, cluster sync and all). Workloads and
dependencies are read-only on their own pages: a row alone cannot be judged without its AppGroup.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.forms.models import BaseInlineFormSet, construct_instance
from simple_history.admin import SimpleHistoryAdmin

from . import documents, services
from .models import AppGroup, AppGroupTombstone, Dependency, Placement, Workload

if TYPE_CHECKING:
    from django.db.models import ForeignKey, Model, QuerySet
    from django.http import HttpRequest


class _ValuesOnly(forms.ModelForm):
    """A row form that converts its values and leaves every rule to the AppGroup document's validator
    (the models' constraints would answer a second time, in their own words)."""

    def _post_clean(self) -> None:
        self.instance = construct_instance(self, self.instance, self._meta.fields, self._meta.exclude)


class _Page:
    """The forms of one AppGroup change page (one request): the main form and the inline formsets."""

    def __init__(self) -> None:
        self.form: forms.ModelForm | None = None
        self.formsets: dict[str, BaseInlineFormSet] = {}
        self.spec: Any = None

    @staticmethod
    def of(request: Any) -> _Page:
        page = getattr(request, "_appgroup_page", None)
        if page is None:
            page = request._appgroup_page = _Page()
        return page

    def ready(self) -> bool:
        """True when every form converted its values (conversion errors are shown first, alone)."""
        rows = [form for formset in self.formsets.values() for form in formset.forms]
        return self.form is not None and self.form.is_valid() and not any(form.errors for form in rows)

    def document(self) -> tuple[dict[str, Any], documents.PathMap]:
        """The page as our AppGroup document, and where each of its paths is on the page."""
        main = self.form.cleaned_data  # type: ignore[union-attr]
        paths = documents.PathMap({"metadata.name": "form:name", "metadata.namespace": "form:namespace",
                                   "spec.topologySortingAlgorithm": "form:topology_sorting_algorithm",
                                   "spec.topologyMode": "form:topology_mode", "spec.minZones": "form:min_zones",
                                   "spec.rebalanceMode": "form:rebalance_mode", "spec.workloads": "form:"})
        rows = sorted(_kept(self.formsets["workloads"]), key=lambda item: (item[1].get("position") or 0, item[0]))
        workloads: list[dict[str, Any]] = []
        index_of: dict[Any, int] = {}
        for index, (form_index, data, instance) in enumerate(rows):
            if instance.pk is not None:  # only stored workloads can be chosen as a dependency's ends
                index_of[instance.pk] = index
            workloads.append(_workload_entry(data, f"spec.workloads[{index}]", f"workloads:{form_index}", paths))
        deps = [(form_index, data) for form_index, data, _ in _kept(self.formsets["dependencies"])]
        for form_index, data in sorted(deps, key=lambda item: (item[1].get("position") or 0, item[0])):
            source = index_of.get(data["source"].pk)
            if source is None:
                continue  # its workload is being deleted: so is the dependency
            target = data["target"]
            name = workloads[index_of[target.pk]]["name"] if target.pk in index_of else target.name
            entries = workloads[source].setdefault("dependencies", [])
            base = f"spec.workloads[{source}].dependencies[{len(entries)}]"
            entries.append(_dependency_entry(data, name, base, f"dependencies:{form_index}", paths))
        spec: dict[str, Any] = {"topologySortingAlgorithm": main["topology_sorting_algorithm"],
                                "topologyMode": main["topology_mode"]}
        if main.get("min_zones") not in (None, 1):
            spec["minZones"] = main["min_zones"]
        if main.get("rebalance_mode") not in (None, "", "off"):
            spec["rebalanceMode"] = main["rebalance_mode"]
        spec["workloads"] = workloads
        document = {"apiVersion": documents.API_VERSION, "kind": documents.APPGROUP_KIND,
                    "metadata": {"namespace": main["namespace"], "name": main["name"]}, "spec": spec}
        return document, paths

    def check(self) -> None:
        """Judge the page's AppGroup; each problem becomes an error on the form and field it names."""
        if not self.ready():
            return
        document, paths = self.document()
        instance = self.form.instance  # type: ignore[union-attr]
        try:
            self.spec = services.validate_document(document=document, appgroup=instance if instance.pk else None)
        except documents.DocumentError as exc:
            unplaced = [message for path, messages in paths.errors(exc.errors).items()
                        for message in self._place(path, messages)]
            raise forms.ValidationError(unplaced or ["The AppGroup was not saved: correct the errors on this page."]) from None

    def _place(self, path: str, messages: list[str]) -> list[str]:
        """Add ``messages`` to the field ``path`` names; the ones that fit no field are returned."""
        match = re.fullmatch(r"(?:form|(workloads|dependencies):(\d+)):([a-z_]*)(.*)", path)
        if match is None:
            return [f"{path}: {message}" for message in messages]
        prefix, index, field, rest = match.groups()
        form = self.form if prefix is None else self.formsets[prefix].forms[int(index)]
        for message in messages:
            text = f"{rest.lstrip('.')}: {message}" if rest else message
            form.add_error(field if field in form.fields else None, text)  # type: ignore[union-attr]
        return []


def _kept(formset: BaseInlineFormSet) -> list[tuple[int, dict[str, Any], Any]]:
    """(form index, cleaned data, instance) of the rows the page keeps (not deleted, not left empty)."""
    return [(index, form.cleaned_data, form.instance) for index, form in enumerate(formset.forms)
            if form.cleaned_data and not form.cleaned_data.get("DELETE")]


def _workload_entry(data: dict[str, Any], ours: str, theirs: str, paths: documents.PathMap) -> dict[str, Any]:
    paths[f"{ours}"] = f"{theirs}:"
    for field in ("name", "selector", "weight", "replicas"):
        paths[f"{ours}.{field}"] = f"{theirs}:{field}"
    paths[f"{ours}.minZones"] = f"{theirs}:min_zones"
    for field, column in (("resources.cpu", "cpu_request"), ("resources.memory", "memory_request"),
                          ("controller.kind", "controller_kind"), ("controller.name", "controller_name")):
        paths[f"{ours}.{field}"] = f"{theirs}:{column}"
    entry: dict[str, Any] = {"name": data["name"], "selector": data["selector"], "weight": data["weight"]}
    if data.get("replicas") is not None:
        entry["replicas"] = data["replicas"]
    if data.get("min_zones") is not None:
        entry["minZones"] = data["min_zones"]
    controller = {key: data[f"controller_{key}"] for key in ("kind", "name") if data.get(f"controller_{key}")}
    if controller:
        entry["controller"] = controller
    requests = {key: data[f"{key}_request"] for key in ("cpu", "memory") if data.get(f"{key}_request")}
    if requests:
        entry["resources"] = requests
    return entry


def _dependency_entry(data: dict[str, Any], target: str, ours: str, theirs: str,
                      paths: documents.PathMap) -> dict[str, Any]:
    paths[ours] = f"{theirs}:"
    paths[f"{ours}.name"] = f"{theirs}:target"
    paths[f"{ours}.metrics"] = f"{theirs}:"
    for field, column in (("metrics.latency", "latency"), ("metrics.bandwidth", "bandwidth"),
                          ("metrics.lossrate", "lossrate"), ("maxNetworkCost", "max_network_cost"),
                          ("minBandwidth", "min_bandwidth"), ("weight", "weight")):
        paths[f"{ours}.{field}"] = f"{theirs}:{column}"
    entry: dict[str, Any] = {"name": target,
                             "metrics": {key: data[key] for key in ("latency", "bandwidth", "lossrate")}}
    if data.get("max_network_cost") is not None:
        entry["maxNetworkCost"] = data["max_network_cost"]
    if data.get("min_bandwidth"):
        entry["minBandwidth"] = data["min_bandwidth"]
    if data.get("weight") is not None:
        entry["weight"] = data["weight"]
    return entry


class _PageFormSet(BaseInlineFormSet):
    """An inline of the AppGroup page; the last one to be cleaned has the whole page judged."""

    def __init__(self, *args: Any, page: _Page | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.page = page or _Page()
        self.page.formsets[self.prefix] = self  # type: ignore[index]  # set by BaseFormSet.__init__

    def validate_unique(self) -> None:
        """Duplicate workloads and dependencies are the document validator's to name."""

    def clean(self) -> None:
        super().clean()
        if self.is_bound and list(self.page.formsets)[-1] == self.prefix:
            self.page.check()


class AppGroupForm(_ValuesOnly):
    # Optional like the document's field: left empty, no zone requirement (1).
    min_zones = forms.IntegerField(required=False, initial=1, help_text="Replicas over at least this many zones; empty = 1.")

    class Meta:
        model = AppGroup
        fields = ("namespace", "name", "description", "topology_sorting_algorithm", "topology_mode", "min_zones",
                  "rebalance_mode", "origin")

    page: _Page | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.page is not None:
            self.page.form = self


class WorkloadForm(_ValuesOnly):
    class Meta:
        model = Workload
        fields = ("name", "position", "selector", "weight", "controller_kind", "controller_name", "replicas",
                  "min_zones", "cpu_request", "memory_request")


class DependencyForm(_ValuesOnly):
    # Optional like the document's field: left empty, the edge weighs 1 (the paper's unweighted score).
    weight = forms.FloatField(required=False, initial=1.0, help_text="Edge weight (> 0); empty = 1.")

    class Meta:
        model = Dependency
        fields = ("source", "target", "latency", "bandwidth", "lossrate", "max_network_cost", "min_bandwidth",
                  "weight", "position")


class WorkloadInline(admin.TabularInline):
    model = Workload
    form = WorkloadForm
    formset = _PageFormSet
    extra = 0
    fields = WorkloadForm.Meta.fields


class DependencyInline(admin.TabularInline):
    model = Dependency
    form = DependencyForm
    formset = _PageFormSet
    fk_name = "appgroup"
    extra = 0

    def formfield_for_foreignkey(self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name in ("source", "target"):
            object_id = request.resolver_match.kwargs.get("object_id") if request.resolver_match else None
            kwargs["queryset"] = (
                Workload.objects.filter(appgroup_id=object_id) if object_id else Workload.objects.none()
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(AppGroup)
class AppGroupAdmin(SimpleHistoryAdmin):
    list_display = (
        "name",
        "namespace",
        "topology_sorting_algorithm",
        "topology_mode",
        "rebalance_mode",
        "origin",
        "last_synced_at",
        "updated_at",
    )
    list_filter = ("namespace", "origin", "topology_sorting_algorithm", "topology_mode", "rebalance_mode")
    search_fields = ("name", "namespace", "description")
    readonly_fields = AppGroup.BOOKKEEPING_FIELDS
    form = AppGroupForm
    inlines = (WorkloadInline, DependencyInline)

    def get_form(self, request: HttpRequest, obj: AppGroup | None = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"page": _Page.of(request)})

    def get_formset_kwargs(self, request: HttpRequest, obj: AppGroup, inline: Any, prefix: str) -> dict[str, Any]:
        return {**super().get_formset_kwargs(request, obj, inline, prefix), "page": _Page.of(request)}

    def save_model(self, request: HttpRequest, obj: AppGroup, form: Any, change: bool) -> None:
        """Nothing yet: the row and its graph are written together in ``save_related``."""

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        saved = services.save_appgroup(
            spec=_Page.of(request).spec, origin=form.cleaned_data["origin"], appgroup=form.instance if change else None,
            description=form.cleaned_data["description"], create_only=not change,
        )
        form.instance.pk = saved.pk
        form.instance.refresh_from_db()

    def construct_change_message(self, request: HttpRequest, form: Any, formsets: Any, add: bool = False) -> Any:
        return super().construct_change_message(request, form, [], add)  # rows were written by the service

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """Workloads and dependencies go with their AppGroup (their own pages cannot delete them)."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        rows = {str(Workload._meta.verbose_name), str(Dependency._meta.verbose_name)}
        return deleted, counts, perms_needed - rows, protected

    def delete_model(self, request: HttpRequest, obj: AppGroup) -> None:
        services.delete_appgroup(appgroup=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AppGroup]) -> None:
        for appgroup in queryset:
            services.delete_appgroup(appgroup=appgroup)


class _ReadOnly:
    """Shown, never edited here: the row belongs to its AppGroup's page."""

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class WorkloadDependencyInline(_ReadOnly, admin.TabularInline):
    """Dependencies declared by one workload."""

    model = Dependency
    fk_name = "source"
    extra = 0
    exclude = ("appgroup",)


@admin.register(Workload)
class WorkloadAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("name", "appgroup", "weight", "controller_kind", "controller_name", "replicas")
    list_filter = ("appgroup__namespace",)
    search_fields = ("name", "appgroup__name", "controller_name")
    list_select_related = ("appgroup",)
    inlines = (WorkloadDependencyInline,)


@admin.register(Dependency)
class DependencyAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = (
        "source",
        "target",
        "appgroup",
        "latency",
        "bandwidth",
        "lossrate",
        "max_network_cost",
        "min_bandwidth",
        "weight",
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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
