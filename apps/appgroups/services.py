"""Writes of the appgroups app (HackSoft style: keyword-only, typed, atomic).

Every write of a whole graph goes through ``save_appgroup``. What may be saved is decided in two
places only: the AppGroup document's own rules (``documents.spec_from_document``: the CRD schema and
``validators.semantic_errors``, run again here on the spec's document so no caller can bypass them)
and the rules that need the database, ``check_appgroup`` (a namespace/name already taken, selectors
that claim pods another AppGroup of the namespace claims). Errors are ``documents.DocumentError`` (an
``AppGroupValidationError`` for the database's rules) by field path of our AppGroup document
(``spec.workloads[1].dependencies[0].name``); entry points that built the document from another shape
map the paths back to theirs (``documents.PathMap``).

Every write also tells the cluster sync, explicitly (``notify_cluster``; the sync loop's own writes
pass False): a deletion records a tombstone (``AppGroupTombstone``: the only thing that lets the sync
delete a managed CR, so an empty or restored database never deletes cluster data), a rename records
one for the old name, a row created under a tombstoned name supersedes it, and after the commit a
worker is asked to reconcile the key now (``request_sync``). The admin calls the same functions.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from celery import current_app
from django.db import IntegrityError, transaction
from django.utils import timezone

from netaware_core import kube, quantity

from . import documents, validators
from .choices import Origin, PlacementSource
from .graph import AppGroupSpec, DependencySpec, WorkloadSpec
from .models import AppGroup, AppGroupTombstone, Dependency, Placement, Workload
from .overlap import overlaps
from .selectors import appgroup_spec, appgroups_with_graph, namespace_label_selectors

logger = logging.getLogger(__name__)

DESCRIPTION_ANNOTATION = "netaware.io/description"
DIKTYO_RV_PREFIX = "diktyo:"  # resource_version of a read-only scheduler-plugins import: no CR of ours
# A queued per-AppGroup sync older than this is redundant: the periodic resync (every 60 s) has
# covered it. Expiring it keeps a worker that comes back after an outage from replaying a backlog.
SYNC_TASK_EXPIRES = 300
SYNC_TASK = "apps.appgroups.tasks.sync_appgroup"


class AppGroupValidationError(documents.DocumentError):
    """An AppGroup that cannot be saved; ``errors`` by field path of our AppGroup document."""


# --- the rules that need the database ----------------------------------------------------------


def check_appgroup(
    *, spec: AppGroupSpec, appgroup: AppGroup | None = None, create_only: bool = False, origin: str = Origin.NETAWARE
) -> dict[str, list[str]]:
    """Why ``spec`` cannot be stored (empty when it can), by document path: its namespace/name taken by
    another row (``appgroup`` is the row being edited; without it the row of that name is replaced
    unless ``create_only``), or a workload selector that can claim a pod another AppGroup of the
    namespace claims. Writes from the cluster (``origin`` cluster) skip the overlap rule: the
    cluster's state is never lost, the dashboard flags them (``selectors.overlapping_appgroups``)."""
    same_key = AppGroup.objects.filter(namespace=spec.namespace, name=spec.name)
    current: int | None
    if appgroup is not None and appgroup.pk is not None:
        current, taken = appgroup.pk, same_key.exclude(pk=appgroup.pk).exists()
    else:
        current = same_key.values_list("pk", flat=True).first()
        taken = create_only and current is not None
    if taken:
        return {"metadata.name": [f"An AppGroup named {validators.short(spec.name)} already exists in namespace "
                                  f"{validators.short(spec.namespace)}."]}
    return _overlap_errors(spec=spec, exclude_pk=current) if origin == Origin.NETAWARE else {}


def _overlap_errors(*, spec: AppGroupSpec, exclude_pk: int | None) -> dict[str, list[str]]:
    """A pod both selectors match would silently belong to whichever AppGroup comes first by name."""
    others = namespace_label_selectors(namespace=spec.namespace, exclude_pk=exclude_pk)
    index = {w.name: i for i, w in enumerate(spec.workloads)}
    errors: dict[str, list[str]] = {}
    for o in overlaps([(w.name, w.selector) for w in spec.workloads], others):
        example = ", ".join(f"{k}={v}" for k, v in sorted(o.example.items()))
        errors.setdefault(f"spec.workloads[{index[o.workload]}].selector", []).append(
            f"overlaps workload {validators.short(o.other_workload)} of AppGroup {o.other_appgroup}: a pod labelled "
            f"{example} would match both, and only the first AppGroup by name would get it. Narrow the selector, "
            f"or select on the label {documents.APPGROUP_LABEL}={spec.name} that the pods carry."
        )
    return errors


# --- writes ------------------------------------------------------------------------------------


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

    After the commit a worker applies the change to the cluster (``changed``); the sync loop passes
    ``notify_cluster=False`` for changes that come from the cluster.
    """
    if origin not in Origin.values:
        raise AppGroupValidationError(errors={"origin": [f"{validators.short(origin)} is not one of {', '.join(Origin.values)}"]})
    try:  # the document's own rules, whoever built the spec
        documents.spec_from_document(documents.document_from_spec(spec))
    except documents.DocumentError as exc:
        raise AppGroupValidationError(errors=exc.errors) from None
    row = _locked_row(spec=spec, appgroup=appgroup)
    errors = check_appgroup(spec=spec, appgroup=appgroup, create_only=create_only, origin=origin)
    if errors:
        raise AppGroupValidationError(errors=errors)
    created = row.pk is None
    row.namespace, row.name = spec.namespace, spec.name
    old_key = key_before_save(appgroup=row)
    row.topology_sorting_algorithm, row.topology_mode = spec.topology_sorting_algorithm, spec.topology_mode
    row.min_zones = spec.min_zones
    row.rebalance_mode = spec.rebalance_mode
    row.origin, row.spec_hash = origin, documents.spec_hash(spec)
    if description is not None:
        row.description = description
    row.save()
    changed(appgroup=row, old_key=old_key, created=created, notify_cluster=notify_cluster)
    _write_graph(appgroup=row, spec=spec)
    _record_document(appgroup=row)
    return row


def _record_document(*, appgroup: AppGroup) -> None:
    """The document as saved, on the change-history record this save created (which holds who and when)."""
    record = appgroup.history.order_by("-history_id").first()
    if record is not None:
        record.document = export_document(appgroup=appgroup)
        record.save(update_fields=["document"])


def _locked_row(*, spec: AppGroupSpec, appgroup: AppGroup | None) -> AppGroup:
    """The row to write, locked: the given one, the one of the spec's namespace/name, or a new one."""
    if appgroup is not None and appgroup.pk is not None:
        return AppGroup.objects.select_for_update().get(pk=appgroup.pk)
    found = AppGroup.objects.select_for_update().filter(namespace=spec.namespace, name=spec.name).first()
    return found or AppGroup(namespace=spec.namespace, name=spec.name)


def _write_graph(*, appgroup: AppGroup, spec: AppGroupSpec) -> None:
    """Workloads matched by name (their placements survive), undeclared ones deleted; dependencies rewritten."""
    existing = {workload.name: workload for workload in appgroup.workloads.all()}
    saved: dict[str, Workload] = {}
    for index, workload_spec in enumerate(spec.workloads):
        workload = existing.pop(workload_spec.name, None) or Workload(appgroup=appgroup, name=workload_spec.name)
        _copy_workload(workload, workload_spec, position=index)
        saved[workload.name] = workload
    Workload.objects.filter(pk__in=[w.pk for w in existing.values()]).delete()
    for workload in saved.values():
        workload.save()
    appgroup.dependencies.all().delete()
    dependencies = [(saved[w.name], dep) for w in spec.workloads for dep in w.dependencies]
    for position, (source, dep) in enumerate(dependencies):
        _dependency_row(appgroup, source, saved[dep.target], dep, position=position).save()


def _copy_workload(workload: Workload, spec: WorkloadSpec, *, position: int) -> None:
    workload.position = position
    workload.selector = documents.label_selector_to_mapping(spec.selector)
    workload.weight = spec.weight
    workload.controller_kind, workload.controller_name = spec.controller_kind, spec.controller_name
    workload.replicas = spec.replicas
    workload.min_zones = spec.min_zones
    workload.cpu_request = quantity.format_cpu(spec.cpu_request_millicores) if spec.cpu_request_millicores else ""
    workload.memory_request = quantity.format_bytes(spec.memory_request_bytes) if spec.memory_request_bytes else ""


def _dependency_row(appgroup: AppGroup, source: Workload, target: Workload, dep: DependencySpec, *,
                    position: int) -> Dependency:
    return Dependency(
        appgroup=appgroup, source=source, target=target, position=position,
        latency=dep.sensitivity.latency, bandwidth=dep.sensitivity.bandwidth, lossrate=dep.sensitivity.lossrate,
        max_network_cost=int(dep.max_network_cost) if dep.max_network_cost is not None else None,
        min_bandwidth=quantity.format_bytes(dep.min_bandwidth_bps) if dep.min_bandwidth_bps is not None else "",
        weight=dep.weight,
    )


def upsert_appgroup_from_spec(*, spec: AppGroupSpec, origin: str, notify_cluster: bool = True) -> AppGroup:
    """Create or replace the AppGroup named by ``spec`` (namespace/name) — used by the sync loop."""
    return save_appgroup(spec=spec, origin=origin, notify_cluster=notify_cluster)


def document_description(document: Mapping[str, Any]) -> str | None:
    """The description a document carries in its annotation, if any."""
    metadata = document.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    description = annotations.get(DESCRIPTION_ANNOTATION) if isinstance(annotations, Mapping) else None
    return description if isinstance(description, str) else None


def import_document(
    *,
    document: Mapping[str, Any],
    origin: str = Origin.NETAWARE,
    appgroup: AppGroup | None = None,
    create_only: bool = False,
) -> AppGroup:
    """Upsert an AppGroup from a document (ours or diktyo); with ``appgroup``, replace that row, whose
    description the document then replaces (the editors send whole documents). Raises
    ``documents.DocumentError`` naming every problem by field path."""
    spec = documents.spec_from_document(document)
    description = document_description(document)
    return save_appgroup(
        spec=spec, origin=origin, appgroup=appgroup,
        description="" if description is None and appgroup is not None else description,
        create_only=create_only,
    )


def validate_document(*, document: Mapping[str, Any], appgroup: AppGroup | None = None) -> AppGroupSpec:
    """Every rule a save of ``document`` would apply (a new AppGroup unless ``appgroup``), writing
    nothing: the editor's validation as you type. Raises ``documents.DocumentError``."""
    spec = documents.spec_from_document(document)
    errors = check_appgroup(spec=spec, appgroup=appgroup, create_only=appgroup is None)
    if errors:
        raise AppGroupValidationError(errors=errors)
    return spec


def export_document(*, appgroup: AppGroup, flavor: documents.Flavor = "netaware") -> dict[str, Any]:
    """The AppGroup as a document (our CR or the scheduler-plugins CR), without status."""
    annotations = {DESCRIPTION_ANNOTATION: appgroup.description} if appgroup.description else None
    return documents.document_from_spec(appgroup_spec(appgroup=appgroup), flavor=flavor, annotations=annotations)


def delete_appgroup(*, appgroup: AppGroup, notify_cluster: bool = True) -> None:
    """Delete the row. A deliberate deletion (``notify_cluster``) leaves a tombstone that lets the
    sync delete the managed CR, and enqueues that sync; the sync loop itself passes False when the
    cluster deleted the object first."""
    namespace, name = appgroup.namespace, appgroup.name
    resource_version, resource_uid = appgroup.resource_version, appgroup.resource_uid
    with transaction.atomic():
        appgroup.delete()
        if notify_cluster:
            record_tombstone(namespace=namespace, name=name, resource_version=resource_version,
                             resource_uid=resource_uid)
            request_sync(namespace=namespace, name=name)


# --- telling the cluster sync ---------------------------------------------------------------------

OldKey = tuple[str, str, str, str]  # namespace, name, resource_version, resource_uid


def key_before_save(*, appgroup: AppGroup) -> OldKey | None:
    """The stored key of a row about to be saved when the save renames it (None otherwise); the row
    forgets its resource version and UID then: under its new name it has never been synced."""
    if appgroup.pk is None:
        return None
    old = (AppGroup.objects.filter(pk=appgroup.pk)
           .values_list("namespace", "name", "resource_version", "resource_uid").first())
    if old is None or (old[0], old[1]) == (appgroup.namespace, appgroup.name):
        return None
    appgroup.resource_version = ""
    appgroup.resource_uid = ""
    return old


def changed(*, appgroup: AppGroup, old_key: OldKey | None, created: bool, notify_cluster: bool) -> None:
    """After a saved row (services, admin): tombstones for a rename, superseded tombstones, syncs."""
    if created or old_key is not None:
        AppGroupTombstone.objects.filter(namespace=appgroup.namespace, name=appgroup.name).delete()
    if old_key is not None:
        namespace, name, resource_version, resource_uid = old_key
        record_tombstone(namespace=namespace, name=name, resource_version=resource_version,
                         resource_uid=resource_uid)
        if notify_cluster:
            request_sync(namespace=namespace, name=name)
    if notify_cluster:
        request_sync(namespace=appgroup.namespace, name=appgroup.name)


def record_tombstone(*, namespace: str, name: str, resource_version: str = "", resource_uid: str = "") -> None:
    if resource_version.startswith(DIKTYO_RV_PREFIX):
        return
    AppGroupTombstone.objects.update_or_create(
        namespace=namespace, name=name,
        defaults={"resource_version": resource_version, "resource_uid": resource_uid, "deleted_at": timezone.now()},
    )


def request_sync(*, namespace: str, name: str) -> None:
    """Ask a worker to reconcile one AppGroup once the current transaction commits (by task name:
    the task module imports the sync, which writes through these services).

    Skipped without a Kubernetes API; a broker that is down is logged, never raised: the edit is
    saved and the periodic resync applies it anyway."""
    if not kube.configured():
        return

    def send() -> None:
        try:
            # retry=False: with the broker down, fail at once instead of stalling the request.
            current_app.send_task(SYNC_TASK, (namespace, name), retry=False, expires=SYNC_TASK_EXPIRES)
        except Exception as exc:
            logger.warning("could not enqueue the sync of AppGroup %s/%s (the periodic resync will apply it): %s",
                           namespace, name, exc)

    transaction.on_commit(send, robust=True)


def _find_workload(*, pod_namespace: str, labels: Mapping[str, str]) -> Workload | None:
    group_name = labels.get(documents.APPGROUP_LABEL) or labels.get(documents.DIKTYO_APPGROUP_LABEL)
    groups = appgroups_with_graph().filter(namespace=pod_namespace)
    if group_name:
        groups = groups.filter(name=group_name)
    for appgroup in groups:
        workloads = list(appgroup.workloads.all())
        for workload in workloads:
            selector = documents.label_selector_from_mapping(workload.selector or {})
            if selector.matches(labels):
                return workload
        # scheduler-plugins pods name their workload in a label; our diktyo import names workloads so.
        diktyo_workload = labels.get(documents.DIKTYO_WORKLOAD_LABEL)
        if group_name and diktyo_workload:
            for workload in workloads:
                if workload.name == diktyo_workload:
                    return workload
    return None


def record_placements(*, rows: Sequence[tuple[str, str, str, str, int, int]], source: str) -> int:
    """Upsert many placements in one statement: rows of (pod namespace, pod name, pod UID, node,
    AppGroup id, Workload id) whose workload the caller already resolved (the extender's batches).
    A pod that moves gets a new ``bound_at``; returns the number of rows written."""
    if source not in PlacementSource.values:
        raise ValueError(f"source must be one of {', '.join(PlacementSource.values)} (got {validators.short(source)})")
    if not rows:
        return 0
    now = timezone.now()
    latest = {(ns, name): (ns, name, uid, node, ag, wl) for ns, name, uid, node, ag, wl in rows}
    Placement.objects.bulk_create(
        [Placement(pod_namespace=ns, pod_name=name, pod_uid=uid, node_name=node, appgroup_id=ag, workload_id=wl,
                   source=source, bound_at=now) for ns, name, uid, node, ag, wl in latest.values()],
        update_conflicts=True, unique_fields=["pod_namespace", "pod_name"],
        update_fields=["pod_uid", "node_name", "appgroup", "workload", "source", "bound_at", "updated_at"],
    )
    return len(latest)


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
