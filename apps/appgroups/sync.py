"""Two-way AppGroup sync between netaware's database and the cluster's custom resources.

kopf-style: every pass is level-triggered and idempotent — it compares what *is* on both sides
and makes them agree, so a missed watch event, a restart or an API outage only delays
convergence. See docs/sync.md for the rules; in short:

* netaware → cluster: each AppGroup row is our CR ``appgroups.netaware.io/v1alpha1`` (namespaced).
  Writes are resourceVersion-guarded (POST create, PUT replace); a 409 re-reads and re-decides.
* cluster → netaware: our CRs created/edited with kubectl are imported; scheduler-plugins
  (``appgroup.diktyo.x-k8s.io``) AppGroups are imported read-only.
* Conflict rule: the CR carries ``netaware.io/last-synced-spec-hash``, the spec both sides agreed on
  at the last sync. Only one side differs from it → that side wins. Both differ (and disagree) →
  the cluster wins; the losing netaware spec is kept in ``AppGroup.sync_error`` and reported as a
  ``SyncConflict`` Event on the CR.
* Status (placements, running count, topological order, observedGeneration) is written through the
  status subresource only when it changed.
* Invalid CRs are logged, get a Warning Event, are listed by ``current_issues()`` (and the row's
  ``sync_error``) and are skipped: nothing is deleted on either side because of them.
* Deletion: a managed CR is deleted only when a tombstone (``AppGroupTombstone``, recorded by every
  deletion in netaware) names it and the CR is unchanged since the last sync. A managed CR with no
  row and no tombstone is imported (adopted): an empty or restored database never deletes cluster
  data. Tombstones expire after ``NETAWARE["APPGROUP_TOMBSTONE_RETENTION_DAYS"]`` (default 7).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection
from django.utils import timezone
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException

from netaware_core import kube, metrics
from netaware_core.informer import ListWatch

from . import documents, selectors, services
from .choices import Origin
from .graph import AppGroupSpec
from .models import AppGroup, AppGroupTombstone

log = logging.getLogger(__name__)

GROUP = documents.GROUP
VERSION = documents.VERSION
PLURAL = documents.APPGROUP_PLURAL
DIKTYO_GROUP = documents.DIKTYO_APPGROUP_GROUP
DIKTYO_VERSION = "v1alpha1"

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "netaware"
SYNCED_HASH_ANNOTATION = "netaware.io/last-synced-spec-hash"
DIKTYO_RV_PREFIX = services.DIKTYO_RV_PREFIX
EVENT_SOURCE = "netaware-appgroup-sync"
ISSUES_CACHE_KEY = "appgroups:sync:issues"
CONFLICT_PREFIX = "conflict: "

ATTEMPTS = 4  # per API call (kube.retry) and per object (re-read after a 409)
BASE_DELAY = 0.2

Key = tuple[str, str]  # (namespace, name)


@dataclass
class SyncReport:
    """What one pass did (returned by sync_once, logged by the command and the task)."""

    created: list[str] = field(default_factory=list)  # CRs created in the cluster
    updated: list[str] = field(default_factory=list)  # CR specs written
    imported: list[str] = field(default_factory=list)  # rows created/updated from the cluster
    deleted_in_cluster: list[str] = field(default_factory=list)
    deleted_in_netaware: list[str] = field(default_factory=list)
    status_written: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    tombstones_expired: int = 0  # deletions never applied within the retention period
    errors: list[str] = field(default_factory=list)  # retryable failures left for the next pass
    resource_version: str = ""  # of our CR list, for a following watch

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v}


class InvalidResource(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _call(fn: Callable[[], Any]) -> Any:
    return kube.retry(fn, attempts=ATTEMPTS, base_delay=BASE_DELAY)


def _label(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- cluster reads ---------------------------------------------------------------------------


def _list(group: str, *, optional: bool) -> tuple[dict[Key, dict[str, Any]], str]:
    api = kube.custom_objects()
    try:
        listed = _call(lambda: api.list_cluster_custom_object(group, VERSION, PLURAL))
    except ApiException as exc:
        if optional and exc.status == 404:  # CRD not installed: nothing to import
            return {}, ""
        raise
    items = {
        (obj["metadata"].get("namespace", ""), obj["metadata"]["name"]): obj
        for obj in listed.get("items") or []
    }
    return items, str((listed.get("metadata") or {}).get("resourceVersion") or "")


def _get(group: str, key: Key) -> dict[str, Any] | None:
    api = kube.custom_objects()
    try:
        return _call(lambda: api.get_namespaced_custom_object(group, VERSION, key[0], PLURAL, key[1]))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


# --- reporting ------------------------------------------------------------------------------


def _event(obj: Mapping[str, Any], *, reason: str, message: str, type_: str = "Warning") -> None:
    """A Kubernetes Event on the object; one per (object version, reason, message), never fatal."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    digest = hashlib.sha256(f"{meta.get('resourceVersion')}|{reason}|{message}".encode()).hexdigest()[:12]
    now = datetime.now(UTC)
    body = k8s.CoreV1Event(
        metadata=k8s.V1ObjectMeta(name=f"{str(meta.get('name'))[:200]}.{digest}", namespace=namespace),
        involved_object=k8s.V1ObjectReference(
            api_version=obj.get("apiVersion"),
            kind=obj.get("kind"),
            name=meta.get("name"),
            namespace=namespace,
            uid=meta.get("uid"),
            resource_version=meta.get("resourceVersion"),
        ),
        reason=reason,
        message=message[:1024],
        type=type_,
        source=k8s.V1EventSource(component=EVENT_SOURCE),
        reporting_component=EVENT_SOURCE,
        first_timestamp=now,
        last_timestamp=now,
        count=1,
    )
    try:
        _call(lambda: kube.core_v1().create_namespaced_event(namespace, body))
    except ApiException as exc:
        if exc.status != 409:  # 409: already reported for this version
            log.warning(
                "could not post event %s on %s/%s: %s",
                reason,
                namespace,
                meta.get("name"),
                kube.describe(exc),
            )
    except Exception as exc:
        log.warning(
            "could not post event %s on %s/%s: %s", reason, namespace, meta.get("name"), kube.describe(exc)
        )


def current_issues() -> list[dict[str, Any]]:
    """Invalid cluster objects seen by the latest passes (for the dashboard); [] if Redis is down."""
    try:
        return list((cache.get(ISSUES_CACHE_KEY) or {}).values())
    except Exception:
        return []


def _store_issues(update: Callable[[dict[str, Any]], None]) -> None:
    try:
        issues = cache.get(ISSUES_CACHE_KEY) or {}
        update(issues)
        cache.set(ISSUES_CACHE_KEY, issues, timeout=None)
    except Exception as exc:  # Redis down must not stop the sync
        log.warning("could not store sync issues: %s", exc)


def _issue_key(group: str, key: Key) -> str:
    return f"{group}/{key[0]}/{key[1]}"


def _report_invalid(obj: Mapping[str, Any], group: str, key: Key, message: str, report: SyncReport) -> None:
    log.warning("skipping invalid AppGroup %s (%s): %s", _label(key), group, message)
    report.invalid.append(_label(key))
    _event(obj, reason="InvalidAppGroup", message=f"netaware cannot import this AppGroup: {message}")
    issue = {
        "group": group,
        "namespace": key[0],
        "name": key[1],
        "resourceVersion": (obj.get("metadata") or {}).get("resourceVersion"),
        "message": message,
        "seenAt": _now_rfc3339(),
    }
    _store_issues(lambda issues: issues.__setitem__(_issue_key(group, key), issue))
    AppGroup.objects.filter(namespace=key[0], name=key[1]).exclude(sync_error=f"invalid: {message}").update(
        sync_error=f"invalid: {message}"
    )


def _clear_issue(group: str, key: Key) -> None:
    if any(i.get("group") == group and (i.get("namespace"), i.get("name")) == key for i in current_issues()):
        _store_issues(lambda issues: issues.pop(_issue_key(group, key), None))


# --- spec helpers ---------------------------------------------------------------------------


def _describe(exc: documents.DocumentError) -> str:
    """Every problem of a document on one line (Events, issues, ``sync_error``): ``path: message; ...``."""
    return "; ".join(f"{path}: {message}" if path else message
                     for path, messages in exc.errors.items() for message in messages) or str(exc)


def _parse(obj: Mapping[str, Any]) -> AppGroupSpec:
    """The CR read by the one validator of AppGroup documents (the same as the API's and the editors')."""
    try:
        return documents.spec_from_document(
            obj, default_namespace=(obj.get("metadata") or {}).get("namespace") or "default"
        )
    except documents.DocumentError as exc:
        raise InvalidResource(_describe(exc)) from exc


def _db_spec(appgroup: AppGroup) -> AppGroupSpec:
    return selectors.appgroup_spec(appgroup=appgroup)


def _import(spec: AppGroupSpec, *, rv: str, uid: str = "", origin: str = Origin.CLUSTER) -> AppGroup:
    """Upsert the row from the cluster's spec and record the sync bookkeeping (no write-back)."""
    try:
        appgroup = services.upsert_appgroup_from_spec(spec=spec, origin=origin, notify_cluster=False)
    except documents.DocumentError as exc:
        raise InvalidResource(_describe(exc)) from exc
    fields: dict[str, Any] = {"resource_version": rv, "last_synced_at": timezone.now(), "sync_error": ""}
    if uid:
        fields["resource_uid"] = uid
    AppGroup.objects.filter(pk=appgroup.pk).update(**fields)
    appgroup.refresh_from_db()
    return appgroup


def _mark_synced(appgroup: AppGroup, *, rv: str, error: str | None = None, uid: str = "") -> None:
    fields: dict[str, Any] = {"resource_version": rv, "last_synced_at": timezone.now()}
    if uid:
        fields["resource_uid"] = uid
    if error is not None:
        fields["sync_error"] = error
    elif appgroup.sync_error and not appgroup.sync_error.startswith(CONFLICT_PREFIX):
        fields["sync_error"] = ""
    AppGroup.objects.filter(pk=appgroup.pk).update(**fields)


def _desired_body(spec: AppGroupSpec, *, base: Mapping[str, Any] | None, managed: bool) -> dict[str, Any]:
    """Our CR for ``spec``: keeps the live object's labels/annotations, stamps the synced hash."""
    doc = documents.document_from_spec(spec, flavor="netaware")
    meta = doc["metadata"]
    live_meta = (base or {}).get("metadata") or {}
    labels = dict(live_meta.get("labels") or {})
    if managed:
        labels[MANAGED_BY_LABEL] = MANAGED_BY_VALUE
    annotations = dict(live_meta.get("annotations") or {})
    annotations.update(meta.get("annotations") or {})
    annotations[SYNCED_HASH_ANNOTATION] = documents.spec_hash(spec)
    meta["labels"], meta["annotations"] = labels, annotations
    if base is not None:
        meta["resourceVersion"] = live_meta.get("resourceVersion")
    return doc


def _write_annotation(obj: dict[str, Any], value: str) -> dict[str, Any]:
    """Record the agreed spec hash on the live object (metadata only: generation unchanged)."""
    body = json.loads(json.dumps(obj))
    body.setdefault("metadata", {}).setdefault("annotations", {})[SYNCED_HASH_ANNOTATION] = value
    key = (body["metadata"]["namespace"], body["metadata"]["name"])
    return cast("dict[str, Any]", kube.custom_objects().replace_namespaced_custom_object(
        GROUP, VERSION, key[0], PLURAL, key[1], body
    ))


# --- reconciliation of one key --------------------------------------------------------------


class _Retry(Exception):
    """The cluster object changed under us (409): re-read and decide again."""


_UNKNOWN: Any = object()


def reconcile(
    key: Key,
    *,
    cr: dict[str, Any] | None = None,
    fetched: bool = False,
    report: SyncReport | None = None,
    diktyo: Any = _UNKNOWN,
    as_of: datetime | None = None,
) -> SyncReport:
    """Make one AppGroup agree on both sides. ``cr`` is the live object when the caller has it
    (``fetched=True`` with ``cr=None`` means "known to be absent"), read at ``as_of`` (default: now).
    Errors are contained: a retryable failure lands in ``report.errors`` and the row's
    ``sync_error``; nothing raises."""
    report = report or SyncReport()
    for attempt in range(ATTEMPTS):
        try:
            if attempt or not fetched:
                as_of = timezone.now()
                cr = _get(GROUP, key)
            _reconcile_once(
                key, cr, report, diktyo if not attempt else _UNKNOWN, as_of=as_of or timezone.now()
            )
            return report
        except _Retry:
            continue
        except InvalidResource as exc:
            _report_invalid(cr or {}, GROUP, key, exc.message, report)
            return report
        except Exception as exc:
            if isinstance(exc, ApiException) and exc.status == 409 and attempt < ATTEMPTS - 1:
                continue
            message = kube.describe(exc)
            log.warning("sync of AppGroup %s failed, will retry on the next pass: %s", _label(key), message)
            report.errors.append(f"{_label(key)}: {message}")
            AppGroup.objects.filter(namespace=key[0], name=key[1]).exclude(
                sync_error__startswith=CONFLICT_PREFIX
            ).update(sync_error=f"pending: {message}")
            return report
    report.errors.append(f"{_label(key)}: still conflicting after {ATTEMPTS} attempts")
    return report


def _reconcile_once(
    key: Key, cr: dict[str, Any] | None, report: SyncReport, diktyo: Any = _UNKNOWN, *, as_of: datetime
) -> None:
    appgroup = AppGroup.objects.filter(namespace=key[0], name=key[1]).first()
    if cr is None:
        _reconcile_missing_cr(key, appgroup, report, diktyo, as_of=as_of)
        return
    meta = cr.get("metadata") or {}
    rv = str(meta.get("resourceVersion") or "")
    uid = str(meta.get("uid") or "")
    annotations = meta.get("annotations") or {}
    base = annotations.get(SYNCED_HASH_ANNOTATION, "")
    managed = (meta.get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE
    spec = _parse(cr)
    cluster_hash = documents.spec_hash(spec)
    _clear_issue(GROUP, key)

    if appgroup is None:
        tombstone = AppGroupTombstone.objects.filter(namespace=key[0], name=key[1]).first()
        unchanged = bool(base) and base == cluster_hash
        if tombstone is not None and managed and unchanged and _tombstone_names(tombstone, uid):
            # Deleted in netaware, created by netaware and unchanged in the cluster since: delete it.
            try:
                _call(
                    lambda: kube.custom_objects().delete_namespaced_custom_object(
                        GROUP,
                        VERSION,
                        key[0],
                        PLURAL,
                        key[1],
                        body={"preconditions": {"resourceVersion": rv}},  # type: ignore[arg-type]  # the client sends a dict as is
                    )
                )
            except ApiException as exc:
                if exc.status == 404:
                    tombstone.delete()
                    return
                if exc.status == 409:
                    raise _Retry() from exc
                raise
            tombstone.delete()
            report.deleted_in_cluster.append(_label(key))
            return
        # No tombstone: created with kubectl, or ours but netaware's database is empty/restored/
        # behind — adopt it, never delete. A tombstone that does not apply (edited with kubectl
        # since, not ours, or a different object of the same name): the cluster keeps it.
        if tombstone is not None:
            log.info(
                "AppGroup %s was deleted in netaware but the cluster keeps it (%s): re-imported",
                _label(key),
                "not created by netaware"
                if not managed
                else "edited in the cluster since the last sync"
                if not unchanged
                else "a different object of that name",
            )
        appgroup = _import(
            spec, rv=rv, uid=uid, origin=Origin.NETAWARE if managed and unchanged else Origin.CLUSTER
        )
        if tombstone is not None:
            AppGroupTombstone.objects.filter(pk=tombstone.pk).delete()
        report.imported.append(_label(key))
        if base != cluster_hash:
            cr = _put(lambda: _write_annotation(cr, cluster_hash))  # type: ignore[arg-type]  # not None: narrowed above
            _mark_synced(appgroup, rv=cr["metadata"]["resourceVersion"])
        _write_status(appgroup, cr, report)
        return

    if uid and appgroup.resource_uid != uid:
        AppGroup.objects.filter(pk=appgroup.pk).update(resource_uid=uid)
        appgroup.resource_uid = uid
    db_spec = _db_spec(appgroup)
    db_hash = documents.spec_hash(db_spec)
    if db_hash == cluster_hash:
        if base != cluster_hash:
            cr = _put(lambda: _write_annotation(cr, cluster_hash))  # type: ignore[arg-type]  # not None: narrowed above
        if appgroup.resource_version != cr["metadata"]["resourceVersion"] or (
            appgroup.sync_error and not appgroup.sync_error.startswith(CONFLICT_PREFIX)
        ):
            _mark_synced(appgroup, rv=cr["metadata"]["resourceVersion"])
        _write_status(appgroup, cr, report)
        return

    netaware_changed = db_hash != base
    cluster_changed = cluster_hash != base
    if netaware_changed and not cluster_changed:
        body = _desired_body(db_spec, base=cr, managed=managed)
        cr = _put(
            lambda: kube.custom_objects().replace_namespaced_custom_object(
                GROUP, VERSION, key[0], PLURAL, key[1], body
            )
        )
        report.updated.append(_label(key))
        # A new netaware edit settles an old conflict record.
        _mark_synced(appgroup, rv=cr["metadata"]["resourceVersion"], error="")
        _write_status(appgroup, cr, report)
        return

    conflict = netaware_changed and cluster_changed
    losing = json.dumps(documents.spec_document(db_spec), sort_keys=True) if conflict else ""
    appgroup = _import(spec, rv=rv)
    report.imported.append(_label(key))
    if conflict:
        message = (
            f"{CONFLICT_PREFIX}AppGroup {_label(key)} was edited in netaware and in the cluster since the last "
            f"sync; the cluster's version (generation {meta.get('generation')}) won. Discarded netaware spec: {losing}"
        )
        log.warning("%s", message)
        report.conflicts.append(_label(key))
        metrics.increment("netaware_sync_conflicts_total")
        _mark_synced(appgroup, rv=rv, error=message)
        _event(cr, reason="SyncConflict", message=message[:1024])
    cr = _put(lambda: _write_annotation(cr, cluster_hash))  # type: ignore[arg-type]  # not None: narrowed above
    _mark_synced(appgroup, rv=cr["metadata"]["resourceVersion"], error=None if conflict else "")
    _write_status(appgroup, cr, report)


def _put(fn: Callable[[], object]) -> dict[str, Any]:
    """A resourceVersion-guarded write: 409 means someone else wrote first — decide again."""
    try:
        return _call_once_or_transient(fn)
    except ApiException as exc:
        if exc.status == 409:
            raise _Retry() from exc
        raise


def _call_once_or_transient(fn: Callable[[], object]) -> dict[str, Any]:
    # 409 must not be retried blindly with the same (stale) body: only transient errors are.
    # The custom-objects API returns the decoded JSON object.
    return cast("dict[str, Any]", kube.retry(
        fn,
        attempts=ATTEMPTS,
        base_delay=BASE_DELAY,
        retry_on=lambda e: kube.is_retryable(e) and kube.status_of(e) != 409,
    ))


def _tombstone_names(tombstone: AppGroupTombstone, uid: str) -> bool:
    """The tombstone is for this very object (when both uids are known), not a later re-creation."""
    return not tombstone.resource_uid or not uid or tombstone.resource_uid == uid


def _reconcile_missing_cr(
    key: Key, appgroup: AppGroup | None, report: SyncReport, diktyo: Any = _UNKNOWN, *, as_of: datetime
) -> None:
    if appgroup is None:
        # Nothing of ours left to delete. Only tombstones older than our read are settled: a
        # deletion recorded after it may concern a CR created meanwhile.
        AppGroupTombstone.objects.filter(namespace=key[0], name=key[1], deleted_at__lt=as_of).delete()
    if diktyo is _UNKNOWN:
        diktyo = _get_optional_diktyo(key)
    is_mirror = appgroup is not None and appgroup.resource_version.startswith(DIKTYO_RV_PREFIX)
    if is_mirror or (appgroup is None and diktyo is not None):
        _reconcile_diktyo(key, appgroup, diktyo, report)
        return
    if appgroup is None:
        return
    if appgroup.resource_version and appgroup.origin == Origin.CLUSTER:
        # Last authored in the cluster and its CR is gone: deleted with kubectl.
        services.delete_appgroup(appgroup=appgroup, notify_cluster=False)
        report.deleted_in_netaware.append(_label(key))
        return
    # Never synced, or netaware is its author and the CR disappeared: (re)create it.
    spec = _db_spec(appgroup)
    body = _desired_body(spec, base=None, managed=True)
    try:
        created = _call_once_or_transient(
            lambda: kube.custom_objects().create_namespaced_custom_object(
                GROUP, VERSION, key[0], PLURAL, body
            )
        )
    except ApiException as exc:
        if exc.status == 409:  # created meanwhile (kubectl or another pass): decide again
            raise _Retry() from exc
        raise
    report.created.append(_label(key))
    _mark_synced(
        appgroup, rv=created["metadata"]["resourceVersion"], uid=str(created["metadata"].get("uid") or "")
    )
    _write_status(appgroup, created, report)


def _get_optional_diktyo(key: Key) -> dict[str, Any] | None:
    api = kube.custom_objects()
    try:
        return _call(
            lambda: api.get_namespaced_custom_object(DIKTYO_GROUP, DIKTYO_VERSION, key[0], PLURAL, key[1])
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _reconcile_diktyo(
    key: Key, appgroup: AppGroup | None, diktyo: dict[str, Any] | None, report: SyncReport
) -> None:
    """Read-only import of a scheduler-plugins AppGroup: the cluster always wins, nothing is written."""
    if diktyo is None:
        if appgroup is not None:
            services.delete_appgroup(appgroup=appgroup, notify_cluster=False)
            report.deleted_in_netaware.append(_label(key))
        return
    rv = DIKTYO_RV_PREFIX + str(diktyo["metadata"].get("resourceVersion") or "")
    try:
        spec = _parse(diktyo)
    except InvalidResource as exc:
        _report_invalid(diktyo, DIKTYO_GROUP, key, exc.message, report)
        return
    _clear_issue(DIKTYO_GROUP, key)
    if appgroup is not None and documents.spec_hash(_db_spec(appgroup)) == documents.spec_hash(spec):
        if appgroup.resource_version != rv:
            _mark_synced(appgroup, rv=rv)
        return
    try:
        _import(spec, rv=rv)
    except InvalidResource as exc:
        _report_invalid(diktyo, DIKTYO_GROUP, key, exc.message, report)
        return
    report.imported.append(_label(key))


# --- status -----------------------------------------------------------------------------------


def desired_status(appgroup: AppGroup, *, generation: int | None) -> dict[str, Any]:
    spec = _db_spec(appgroup)
    placements = selectors.appgroup_placements(appgroup=appgroup)
    return documents.status_document(
        spec, flavor="netaware", placements=placements, observed_generation=generation
    )


def _write_status(appgroup: AppGroup, cr: dict[str, Any], report: SyncReport) -> None:
    desired = desired_status(appgroup, generation=(cr.get("metadata") or {}).get("generation"))
    rebalance = (cr.get("status") or {}).get("rebalance")
    if rebalance is not None:  # the rebalancer's part of the status (docs/rebalancer.md): not ours to drop
        desired["rebalance"] = rebalance
    if cr.get("status") == desired:
        return
    body = json.loads(json.dumps(cr))
    body["status"] = desired
    meta = body["metadata"]
    written = _put(
        lambda: kube.custom_objects().replace_namespaced_custom_object_status(
            GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], body
        )
    )
    AppGroup.objects.filter(pk=appgroup.pk).update(resource_version=written["metadata"]["resourceVersion"])
    report.status_written.append(_label((meta["namespace"], meta["name"])))


# --- passes -------------------------------------------------------------------------------


def sync_once() -> SyncReport:
    """One full level-triggered pass over every AppGroup on both sides."""
    report = SyncReport()
    started = timezone.now()
    try:
        ours, rv = _list(GROUP, optional=False)
        diktyo, _ = _list(DIKTYO_GROUP, optional=True)
    except ConfigException:
        raise  # no API server configured at all: not a transient failure, let the caller say so
    except Exception as exc:  # API down: nothing is changed, the next pass re-applies everything
        message = kube.describe(exc)
        log.warning("AppGroup sync pass skipped, cannot list the cluster: %s", message)
        report.errors.append(f"list: {message}")
        return report
    report.resource_version = rv
    report.tombstones_expired = expire_tombstones()
    keys = sorted(
        set(ours)
        | set(diktyo)
        | set(AppGroup.objects.values_list("namespace", "name"))
        | set(AppGroupTombstone.objects.values_list("namespace", "name"))
    )
    for key in keys:
        if key in ours:
            reconcile(key, cr=ours[key], fetched=True, report=report, as_of=started)
        else:
            reconcile(key, cr=None, fetched=True, report=report, diktyo=diktyo.get(key), as_of=started)
    # Issues of objects that no longer exist are dropped.
    live = {_issue_key(GROUP, k) for k in ours} | {_issue_key(DIKTYO_GROUP, k) for k in diktyo}

    def drop_gone(issues: dict[str, Any]) -> None:
        for gone in [k for k in issues if k not in live]:
            issues.pop(gone)

    _store_issues(drop_gone)
    if any(
        report.summary().get(k)
        for k in (
            "created",
            "updated",
            "imported",
            "deleted_in_cluster",
            "deleted_in_netaware",
            "conflicts",
            "invalid",
            "tombstones_expired",
            "errors",
        )
    ):
        log.info("AppGroup sync pass: %s", report.summary())
    return report


def tombstone_retention() -> timedelta:
    days = settings.NETAWARE["APPGROUP_TOMBSTONE_RETENTION_DAYS"]
    return timedelta(days=float(days))


def expire_tombstones(*, now: datetime | None = None) -> int:
    """Forget deletions older than the retention period (their CR, if still there, is then adopted)."""
    cutoff = (now or timezone.now()) - tombstone_retention()
    expired = list(
        AppGroupTombstone.objects.filter(deleted_at__lt=cutoff).values_list("namespace", "name", "deleted_at")
    )
    if not expired:
        return 0
    AppGroupTombstone.objects.filter(deleted_at__lt=cutoff).delete()
    for namespace, name, deleted_at in expired:
        log.warning(
            "tombstone of AppGroup %s/%s (deleted in netaware %s) expired before the cluster could be told; "
            "a managed CR of that name, if any, will be imported again",
            namespace,
            name,
            deleted_at.isoformat(),
        )
    return len(expired)


def sync_appgroup(*, namespace: str, name: str) -> SyncReport:
    """Reconcile one AppGroup now (after an edit in netaware; safe to call any time)."""
    return reconcile((namespace, name))


def watch(
    *,
    stop: threading.Event | None = None,
    watch_timeout: int = 30,
    resync_seconds: float = 60.0,
    on_pass: Callable[[SyncReport], None] | None = None,
) -> None:
    """List + watch our AppGroup CRs until ``stop`` is set, with a full pass every ``resync_seconds``.

    Resumes from the last seen resourceVersion; a 410 Gone (history compacted) or any error
    re-lists through a full pass (after backoff when the API server is unreachable).
    """
    try:
        _watch_loop(stop or threading.Event(), watch_timeout, resync_seconds, on_pass)
    finally:
        connection.close()  # the watcher usually runs in its own thread: leave no session behind


def _watch_loop(
    stop: threading.Event,
    watch_timeout: int,
    resync_seconds: float,
    on_pass: Callable[[SyncReport], None] | None,
) -> None:
    def full_pass() -> str:
        close_old_connections()
        report = sync_once()
        if on_pass:
            on_pass(report)
        if not report.resource_version:  # the list failed: back off and try again
            raise RuntimeError(f"AppGroup sync pass could not list the cluster: {report.summary()}")
        return report.resource_version

    def on_event(etype: str, obj: dict[str, Any]) -> None:
        close_old_connections()
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if etype == "DELETED":
            reconcile(key, cr=None, fetched=True)
        elif etype in {"ADDED", "MODIFIED"}:
            reconcile(key, cr=obj, fetched=True)

    ListWatch(f"/apis/{GROUP}/{VERSION}/{PLURAL}", list_with=full_pass, on_event=on_event, stop=stop,
              watch_timeout=watch_timeout, resync_seconds=resync_seconds).run()
