"""Writes of the appgroups app (HackSoft style: keyword-only, typed, atomic).

Every write of a whole graph goes through ``save_appgroup``: it replaces the workloads and
dependencies of one AppGroup atomically and validates every row with ``full_clean()`` — the same
rules as the admin and the forms. Errors come back as ``AppGroupValidationError.errors``, a dict of
field paths in the API's shape (``workloads[1].dependencies[0].target``) to messages.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from . import quantity, resources, signals, validators
from .choices import Origin, PlacementSource
from .graph import AppGroupSpec, LabelSelector
from .models import AppGroup, Dependency, Placement, Workload

logger = logging.getLogger(__name__)

DESCRIPTION_ANNOTATION = "netaware.io/description"


class AppGroupValidationError(ValueError):
    """Invalid AppGroup graph; ``errors`` maps field paths to messages."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors: dict[str, list[str]] = {key: list(value) for key, value in errors.items()}
        first = next(iter(self.errors.items()), ("", [""]))
        super().__init__(f"{first[0]}: {first[1][0]}" if first[0] else first[1][0])


def _collect(errors: dict[str, list[str]], prefix: str, exc: ValidationError) -> None:
    for field, messages in exc.message_dict.items():
        if field == NON_FIELD_ERRORS:
            path = prefix or "non_field_errors"
        else:
            path = f"{prefix}.{field}" if prefix else field
        errors.setdefault(path, []).extend(messages)


def _selector_mapping(selector: LabelSelector) -> dict[str, Any]:
    return resources.selector_to_mapping(selector)


@transaction.atomic
def save_appgroup(
    *,
    spec: AppGroupSpec,
    origin: str = Origin.NETAWARE,
    appgroup: AppGroup | None = None,
    description: str | None = None,
    create_only: bool = False,
    notify_cluster: bool = True,
) -> AppGroup:
    """Create or replace an AppGroup and its whole graph from ``spec`` (atomic, fully validated).

    With ``appgroup`` given, that row is updated (its namespace/name may change); otherwise the
    AppGroup is looked up by namespace/name and created when missing. Workloads are matched by
    name so their placements survive edits; dependencies are rewritten. ``create_only`` refuses
    to replace an existing AppGroup of the same namespace/name (API POST).

    After the commit a worker applies the change to the cluster (signals.py); the sync loop passes
    ``notify_cluster=False`` for changes that come from the cluster.
    """
    if origin not in Origin.values:
        raise AppGroupValidationError({"origin": [f"{validators.short(origin)} is not one of {', '.join(Origin.values)}"]})
    errors: dict[str, list[str]] = {}
    if appgroup is None:
        appgroup = (
            AppGroup.objects.select_for_update().filter(namespace=spec.namespace, name=spec.name).first()
        )
        if appgroup is not None and create_only:
            raise AppGroupValidationError(
                {"name": [f"An AppGroup named {validators.short(spec.name)} already exists in namespace {validators.short(spec.namespace)}."]}
            )
        if appgroup is None:
            appgroup = AppGroup(namespace=spec.namespace, name=spec.name)
    else:
        appgroup = AppGroup.objects.select_for_update().get(pk=appgroup.pk)
        appgroup.namespace, appgroup.name = spec.namespace, spec.name
    appgroup.topology_sorting_algorithm = spec.topology_sorting_algorithm
    appgroup.origin = origin
    if description is not None:
        appgroup.description = description
    appgroup.spec_hash = resources.spec_hash(spec)
    setattr(appgroup, signals.NOTIFY_ATTR, notify_cluster)
    try:
        appgroup.full_clean()
    except ValidationError as exc:
        _collect(errors, "", exc)
        raise AppGroupValidationError(errors) from None
    appgroup.save()

    seen: dict[str, int] = {}
    for index, workload_spec in enumerate(spec.workloads):
        if workload_spec.name in seen:
            errors.setdefault(f"workloads[{index}].name", []).append(
                f"Duplicate workload name {validators.short(workload_spec.name)} (also workloads[{seen[workload_spec.name]}])."
            )
        seen.setdefault(workload_spec.name, index)
    if errors:
        raise AppGroupValidationError(errors)

    existing = {workload.name: workload for workload in appgroup.workloads.all()}
    saved: dict[str, Workload] = {}
    for index, workload_spec in enumerate(spec.workloads):
        workload = existing.pop(workload_spec.name, None) or Workload(
            appgroup=appgroup, name=workload_spec.name
        )
        workload.position = index
        workload.selector = _selector_mapping(workload_spec.selector)
        workload.weight = workload_spec.weight
        workload.controller_kind = workload_spec.controller_kind
        workload.controller_name = workload_spec.controller_name
        workload.replicas = workload_spec.replicas
        workload.cpu_request = (
            quantity.format_cpu(workload_spec.cpu_request_millicores)
            if workload_spec.cpu_request_millicores
            else ""
        )
        workload.memory_request = (
            quantity.format_bytes(workload_spec.memory_request_bytes)
            if workload_spec.memory_request_bytes
            else ""
        )
        try:
            workload.full_clean(validate_unique=False)
        except ValidationError as exc:
            _collect(errors, f"workloads[{index}]", exc)
            continue
        saved[workload.name] = workload
    if errors:
        raise AppGroupValidationError(errors)
    # Drop workloads no longer declared first, then rename-free saves cannot collide.
    if existing:
        Workload.objects.filter(pk__in=[w.pk for w in existing.values()]).delete()
    for workload in saved.values():
        workload.save()

    appgroup.dependencies.all().delete()
    position = 0
    for index, workload_spec in enumerate(spec.workloads):
        pairs: set[str] = set()
        for dep_index, dep_spec in enumerate(workload_spec.dependencies):
            path = f"workloads[{index}].dependencies[{dep_index}]"
            target = saved.get(dep_spec.target)
            if target is None:
                errors.setdefault(f"{path}.target", []).append(
                    f"Unknown dependency target {validators.short(dep_spec.target)}: not a workload of this AppGroup."
                )
                continue
            if dep_spec.target in pairs:
                errors.setdefault(f"{path}.target", []).append(
                    f"Duplicate dependency on {validators.short(dep_spec.target)}."
                )
                continue
            pairs.add(dep_spec.target)
            dependency = Dependency(
                appgroup=appgroup,
                source=saved[workload_spec.name],
                target=target,
                position=position,
                latency=dep_spec.sensitivity.latency,
                bandwidth=dep_spec.sensitivity.bandwidth,
                lossrate=dep_spec.sensitivity.lossrate,
                max_network_cost=int(dep_spec.max_network_cost)
                if dep_spec.max_network_cost is not None
                else None,
                min_bandwidth=(
                    quantity.format_bytes(dep_spec.min_bandwidth_bps)
                    if dep_spec.min_bandwidth_bps is not None
                    else ""
                ),
            )
            position += 1
            try:
                dependency.full_clean(validate_unique=False)
            except ValidationError as exc:
                _collect(errors, path, exc)
                continue
            dependency.save()
    if errors:
        raise AppGroupValidationError(errors)
    return appgroup


def upsert_appgroup_from_spec(*, spec: AppGroupSpec, origin: str, notify_cluster: bool = True) -> AppGroup:
    """Create or replace the AppGroup named by ``spec`` (namespace/name) — used by the sync loop."""
    return save_appgroup(spec=spec, origin=origin, notify_cluster=notify_cluster)


def import_resource(*, document: Mapping[str, Any], origin: str = Origin.NETAWARE) -> AppGroup:
    """Upsert an AppGroup from a resource document (ours or diktyo). Raises ResourceError or
    AppGroupValidationError naming the field."""
    spec = resources.spec_from_resource(document)
    metadata = document.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    description = annotations.get(DESCRIPTION_ANNOTATION) if isinstance(annotations, Mapping) else None
    return save_appgroup(
        spec=spec, origin=origin, description=description if isinstance(description, str) else None
    )


def export_resource(*, appgroup: AppGroup, flavor: resources.Flavor = "netaware") -> dict[str, Any]:
    """The AppGroup as a resource document (our CR or the scheduler-plugins CR), without status."""
    from .selectors import appgroup_spec

    annotations = {DESCRIPTION_ANNOTATION: appgroup.description} if appgroup.description else None
    return resources.resource_from_spec(
        appgroup_spec(appgroup=appgroup), flavor=flavor, annotations=annotations
    )


def delete_appgroup(*, appgroup: AppGroup, notify_cluster: bool = True) -> None:
    """Delete the row. A deliberate deletion (``notify_cluster``) leaves a tombstone that lets the
    sync delete the managed CR, and enqueues that sync; the sync loop itself passes False when the
    cluster deleted the object first."""
    setattr(appgroup, signals.NOTIFY_ATTR, notify_cluster)
    appgroup.delete()


def _find_workload(*, pod_namespace: str, labels: Mapping[str, str]) -> Workload | None:
    from .selectors import appgroups_with_graph

    group_name = labels.get(resources.APPGROUP_LABEL) or labels.get(resources.DIKTYO_APPGROUP_LABEL)
    groups = appgroups_with_graph().filter(namespace=pod_namespace)
    if group_name:
        groups = groups.filter(name=group_name)
    for appgroup in groups:
        workloads = list(appgroup.workloads.all())
        for workload in workloads:
            selector = resources.selector_from_mapping(workload.selector or {})
            if selector.matches(labels):
                return workload
        # scheduler-plugins pods name their workload in a label; our diktyo import names workloads so.
        diktyo_workload = labels.get(resources.DIKTYO_WORKLOAD_LABEL)
        if group_name and diktyo_workload:
            for workload in workloads:
                if workload.name == diktyo_workload:
                    return workload
    return None


def record_placement(
    *,
    pod_namespace: str,
    pod_name: str,
    pod_uid: str,
    node_name: str,
    labels: Mapping[str, str],
    source: str,
) -> Placement | None:
    """Record that a pod is bound to ``node_name`` (idempotent). Returns None when the pod belongs to
    no AppGroup workload — and then forgets any placement recorded for it earlier (relabelled pod).

    The AppGroup is the one named by the pod label ``netaware.io/appgroup`` (or scheduler-plugins'
    ``appgroup.diktyo.x-k8s.io``) when present, otherwise any AppGroup of the pod's namespace; the
    workload is the first (in declaration order) whose selector matches the pod's labels.
    """
    if source not in PlacementSource.values:
        raise ValueError(f"source must be one of {', '.join(PlacementSource.values)} (got {validators.short(source)})")
    if not pod_namespace or not pod_name or not node_name:
        raise ValueError("pod_namespace, pod_name and node_name are required")
    workload = _find_workload(pod_namespace=pod_namespace, labels=labels)
    if workload is None:
        Placement.objects.filter(pod_namespace=pod_namespace, pod_name=pod_name).delete()
        return None
    for attempt in range(2):
        try:
            with transaction.atomic():
                placement = (
                    Placement.objects.select_for_update()
                    .filter(pod_namespace=pod_namespace, pod_name=pod_name)
                    .first()
                )
                if placement is None:
                    return Placement.objects.create(
                        pod_namespace=pod_namespace,
                        pod_name=pod_name,
                        pod_uid=pod_uid,
                        node_name=node_name,
                        appgroup_id=workload.appgroup_id,
                        workload=workload,
                        source=source,
                        bound_at=timezone.now(),
                    )
                moved = placement.node_name != node_name or placement.pod_uid != pod_uid
                changed = moved or placement.workload_id != workload.pk
                if changed:
                    placement.node_name = node_name
                    placement.pod_uid = pod_uid
                    placement.appgroup_id = workload.appgroup_id
                    placement.workload = workload
                    placement.source = source
                    if moved:
                        placement.bound_at = timezone.now()
                    placement.save()
                return placement
        except IntegrityError:
            # A concurrent recorder created the row between our read and insert: read it again.
            if attempt:
                raise
    return None  # pragma: no cover - loop always returns or raises


def remove_placement(*, pod_namespace: str, pod_name: str) -> bool:
    """Forget a pod's placement (pod deleted or finished). True when a row was removed."""
    deleted, _ = Placement.objects.filter(pod_namespace=pod_namespace, pod_name=pod_name).delete()
    return deleted > 0
