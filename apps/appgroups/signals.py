"""Every change of an AppGroup row, whichever path made it (services, API, dashboard, admin,
bulk delete), is reported to the cluster sync here.

* A deletion records a tombstone (``AppGroupTombstone``): the only thing that lets the sync delete
  a managed CR. Without it a managed CR with no row is imported, so an empty or restored database
  never deletes cluster data.
* A rename records a tombstone for the old namespace/name (its CR is netaware's to delete).
* A row created under a tombstoned name supersedes the tombstone.
* After the transaction commits, ``tasks.enqueue_sync`` asks a worker to reconcile the key now.

Writes made by the sync loop itself (importing from or deleting because of the cluster) set
``NOTIFY_ATTR`` to False on the instance: they record no tombstone and enqueue nothing.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone

from .models import AppGroup, AppGroupTombstone

NOTIFY_ATTR = "_netaware_notify_cluster"
_RENAMED_ATTR = "_netaware_renamed_from"
DIKTYO_RV_PREFIX = "diktyo:"  # read-only scheduler-plugins import: no CR of ours to delete


def _notify(instance: AppGroup) -> bool:
    return bool(getattr(instance, NOTIFY_ATTR, True))


def record_tombstone(
    *, namespace: str, name: str, resource_version: str = "", resource_uid: str = ""
) -> None:
    if resource_version.startswith(DIKTYO_RV_PREFIX):
        return
    AppGroupTombstone.objects.update_or_create(
        namespace=namespace,
        name=name,
        defaults={
            "resource_version": resource_version,
            "resource_uid": resource_uid,
            "deleted_at": timezone.now(),
        },
    )


def _enqueue(namespace: str, name: str) -> None:
    from .tasks import enqueue_sync  # tasks imports sync, which imports services: import late

    enqueue_sync(namespace=namespace, name=name)


@receiver(pre_save, sender=AppGroup, dispatch_uid="appgroups.remember_old_key")
def _remember_old_key(sender: type[AppGroup], instance: AppGroup, raw: bool = False, **kwargs: Any) -> None:
    if raw or instance.pk is None:
        return
    old = (
        AppGroup.objects.filter(pk=instance.pk)
        .values_list("namespace", "name", "resource_version", "resource_uid")
        .first()
    )
    if old is not None and (old[0], old[1]) != (instance.namespace, instance.name):
        setattr(instance, _RENAMED_ATTR, old)
        # The row no longer describes the old CR: under its new name it has never been synced.
        instance.resource_version = ""
        instance.resource_uid = ""


@receiver(post_save, sender=AppGroup, dispatch_uid="appgroups.after_save")
def _after_save(
    sender: type[AppGroup], instance: AppGroup, created: bool = False, raw: bool = False, **kwargs: Any
) -> None:
    if raw:
        return
    renamed = getattr(instance, _RENAMED_ATTR, None)
    if created or renamed:
        AppGroupTombstone.objects.filter(namespace=instance.namespace, name=instance.name).delete()
    if renamed:
        delattr(instance, _RENAMED_ATTR)
        namespace, name, resource_version, resource_uid = renamed
        record_tombstone(
            namespace=namespace, name=name, resource_version=resource_version, resource_uid=resource_uid
        )
        if _notify(instance):
            _enqueue(namespace, name)
    if _notify(instance):
        _enqueue(instance.namespace, instance.name)


@receiver(post_delete, sender=AppGroup, dispatch_uid="appgroups.after_delete")
def _after_delete(sender: type[AppGroup], instance: AppGroup, **kwargs: Any) -> None:
    if not _notify(instance):
        return
    record_tombstone(
        namespace=instance.namespace,
        name=instance.name,
        resource_version=instance.resource_version,
        resource_uid=instance.resource_uid,
    )
    _enqueue(instance.namespace, instance.name)
