"""Publish the current topology snapshot as NetworkTopology custom resources (the documents come from
``apps.topology.documents``; this module does the server-side apply, the unchanged check and the deletes)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from kubernetes.client.exceptions import ApiException

from netaware_core import kube, metrics

from . import selectors
from .documents import (
    DIKTYO_GROUP,
    FIELD_MANAGER,
    GROUP,
    HASH_ANNOTATION,
    MANAGED_BY_LABEL,
    PART_BUDGET_BYTES,
    PARTS_ANNOTATION,
    PLURAL,
    VERSION,
    build_documents,
    content_hash,
    diktyo_networktopology_from_costs,
    document_bytes,
)
from .models import TopologySnapshot
from .topomath import Topology

log = logging.getLogger(__name__)


@dataclass
class PublishReport:
    name: str = ""
    namespace: str = ""
    version: int = 0
    applied: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: bool = False
    parts: int = 0
    largest_bytes: int = 0
    skipped: str = ""

    def summary(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ("", [], 0, False)}



def _apply(api: Any, group: str, namespace: str, doc: dict[str, Any]) -> None:
    body = {k: v for k, v in doc.items() if k != "status"}
    meta = doc["metadata"]
    kube.retry(
        lambda: api.patch_namespaced_custom_object(
            group,
            VERSION,
            namespace,
            PLURAL,
            meta["name"],
            body,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type="application/apply-patch+yaml",
        )
    )
    if "status" in doc:
        kube.retry(
            lambda: api.patch_namespaced_custom_object_status(
                group,
                VERSION,
                namespace,
                PLURAL,
                meta["name"],
                {"status": doc["status"]},
                _content_type="application/merge-patch+json",
            )
        )


def _get(api: Any, group: str, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return kube.retry(lambda: api.get_namespaced_custom_object(group, VERSION, namespace, PLURAL, name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def publish(
    *,
    topology: Topology | None = None,
    name: str = "netaware",
    namespace: str | None = None,
    diktyo: bool = True,
    budget_bytes: int = PART_BUDGET_BYTES,
) -> PublishReport:
    """Publish ``topology`` (default: the current snapshot); a no-op when it is already published."""
    namespace = namespace or settings.NETAWARE.get("KUBE_NAMESPACE") or "netaware-system"
    report = PublishReport(name=name, namespace=namespace)
    topology = topology if topology is not None else selectors.current_topology()
    if topology is None:
        report.skipped = "no topology snapshot yet"
        return report
    report.version = topology.version
    api = kube.custom_objects()
    docs = build_documents(topology, name=name, namespace=namespace, budget_bytes=budget_bytes)
    main = docs[-1]
    parts = docs[:-1]
    report.parts = len(parts)
    report.largest_bytes = max(document_bytes(d) for d in docs)

    live = _get(api, GROUP, namespace, name)
    live_annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
    if live_annotations.get(HASH_ANNOTATION) != main["metadata"]["annotations"][HASH_ANNOTATION]:
        for doc in parts:  # parts first: the main object's hash commits the whole set
            _apply(api, GROUP, namespace, doc)
            report.applied.append(doc["metadata"]["name"])
        _apply(api, GROUP, namespace, main)
        report.applied.append(name)
        try:
            previous = int(live_annotations.get(PARTS_ANNOTATION) or 0)
        except ValueError:
            previous = 0
        for index in range(len(parts), previous):
            stale = f"{name}-{index}"
            try:
                kube.retry(
                    lambda stale=stale: api.delete_namespaced_custom_object(  # type: ignore[misc]  # default-bound lambda
                        GROUP, VERSION, namespace, PLURAL, stale
                    )
                )
                report.deleted.append(stale)
            except ApiException as exc:
                if exc.status != 404:
                    raise
    else:
        report.unchanged = True

    if diktyo:
        doc = diktyo_networktopology_from_costs(
            name=name,
            namespace=namespace,
            zone_costs=topology.zone_costs,
            region_costs=topology.region_costs,
            node_count=topology.size,
        )
        doc.setdefault("metadata", {}).setdefault("labels", {})[MANAGED_BY_LABEL] = "netaware"
        digest = content_hash({"spec": doc["spec"], "nodeCount": topology.size})
        doc["metadata"].setdefault("annotations", {})[HASH_ANNOTATION] = digest
        try:
            current = _get(api, DIKTYO_GROUP, namespace, name)
            if ((current or {}).get("metadata") or {}).get("annotations", {}).get(HASH_ANNOTATION) != digest:
                _apply(api, DIKTYO_GROUP, namespace, doc)
                report.applied.append(f"{DIKTYO_GROUP}/{name}")
        except ApiException as exc:
            if exc.status != 404:  # the diktyo CRD is not installed: nothing to publish there
                raise
            log.info("diktyo NetworkTopology CRD not installed; published ours only")
    if report.applied:
        log.info("published NetworkTopology v%s: %s", topology.version, report.summary())
    return report


def record_published(*, version: int) -> None:
    """Tell /metrics which topology (and data time) the cluster now has: the publish lag."""
    try:
        data_until = TopologySnapshot.objects.filter(version=version).values_list("data_until", flat=True).first()
    except Exception:  # database trouble: publish lag is not updated this time
        return
    metrics.record_publish(version=version, data_until=data_until.timestamp() if data_until else None)
