"""Reads of the topology app.

``current_topology`` is called by the scheduler extender on every request: it costs one indexed
query (newest version and its stale flag) and reloads the arrays only when the version changed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import QuerySet

from .documents import API_VERSION, KIND
from .freshness import Freshness, assess
from .models import Node, SnapshotGone, TopologySnapshot
from .topomath import Topology, nested_maps

_lock = threading.Lock()
_cached: dict[str, Any] = {"key": None, "topology": None}
_doc_cache: dict[tuple[int, int, bool, str], dict[str, Any]] = {}


def current_snapshot() -> TopologySnapshot | None:
    """The newest snapshot (the current one), or None before the first rebuild/import."""
    return TopologySnapshot.objects.defer("payload").order_by("-version").first()


def snapshot_of_version(*, version: int) -> TopologySnapshot | None:
    """The stored snapshot of one version (the API's history), or None."""
    return TopologySnapshot.objects.defer("payload").filter(version=version).first()


def snapshots() -> QuerySet[TopologySnapshot]:
    return TopologySnapshot.objects.defer("payload").order_by("-version")


def nodes() -> QuerySet[Node]:
    return Node.objects.order_by("name")


def _freshness(
    *, created_at: datetime, data_until: datetime | None, source: str, stale: bool, stale_reason: str,
    now: float | None = None,
) -> Freshness:
    return assess(
        now=time.time() if now is None else now,
        created_at=created_at.timestamp(),
        data_until=data_until.timestamp() if data_until is not None else None,
        source=source,
        flagged_reason=(stale_reason or "stale") if stale else "",
        stale_after_seconds=float(settings.NETAWARE["STALE_AFTER_SECONDS"]),
    )


def freshness(*, snapshot: TopologySnapshot, now: float | None = None) -> Freshness:
    """Read-time staleness of ``snapshot`` (see apps/topology/freshness.py)."""
    return _freshness(created_at=snapshot.created_at, data_until=snapshot.data_until, source=snapshot.source,
                      stale=snapshot.stale, stale_reason=snapshot.stale_reason, now=now)


def _current() -> tuple[tuple[int, int], Topology] | None:
    for _attempt in range(5):
        head = TopologySnapshot.objects.order_by("-version").values_list(
            "pk", "version", "stale", "stale_reason", "created_at", "data_until", "source").first()
        if head is None:
            return None
        pk, version, stale, reason, created_at, data_until, source = head
        # Staleness at read time: a pipeline that stopped leaves an old snapshot behind.
        reason = _freshness(created_at=created_at, data_until=data_until, source=source, stale=stale,
                            stale_reason=reason).reason
        with _lock:
            # Keyed by primary key too: ids come from a sequence and are never reused, even when a
            # rolled-back transaction (tests) or a reset database hands out the same version again.
            topology: Topology | None = _cached["topology"]
            if topology is None or _cached["key"] != (pk, version):
                # Drop our reference to the old arrays first: at 5,000 nodes each version is ~650 MB.
                _cached.update(key=None, topology=None)
                topology = None
                row = TopologySnapshot.objects.defer("payload").filter(pk=pk).first()
                if row is None:  # pruned between the two queries: a newer one exists
                    continue
                try:
                    topology = row.to_topology()  # binary, in slices (models._load_from_db)
                except SnapshotGone:
                    continue
                _cached.update(key=(pk, version), topology=topology)
            if topology.stale_reason != reason:
                topology = replace(topology, stale_reason=reason)
                _cached["topology"] = topology
            return (pk, version), topology
    raise SnapshotGone("topology snapshots were pruned faster than they could be read")


def current_topology() -> Topology | None:
    """The current Topology, cached in-process by snapshot version (cheap to call per request).

    ``stale_reason`` is non-empty when the whole snapshot is stale: flagged (services.mark_stale) or
    older than ``STALE_AFTER_SECONDS`` at the time of this call (``freshness``).
    """
    current = _current()
    return None if current is None else current[1]


def topology_for(*, snapshot: TopologySnapshot) -> Topology:
    current = _current()
    if current is not None and current[0] == (snapshot.pk, snapshot.version):
        return current[1]
    return TopologySnapshot.objects.defer("payload").get(pk=snapshot.pk).to_topology()


def _pairs_by_source(topology: Topology, mask: np.ndarray) -> dict[str, list[str]]:
    names = np.asarray(topology.nodes, dtype=object)
    out: dict[str, list[str]] = {}
    for i in np.flatnonzero(mask.any(axis=1)).tolist():
        out[str(names[i])] = names[np.flatnonzero(mask[i])].tolist()
    return out


def topology_document(*, snapshot: TopologySnapshot) -> dict[str, Any]:
    """The snapshot in the paper's NetworkTopology shape (see docs/topology.md).

    The document is cached per version; its staleness (``status.stale``, ``staleReason``,
    ``ageSeconds``) is computed for every call (``freshness``)."""
    key = (snapshot.pk, snapshot.version, snapshot.stale, snapshot.stale_reason)
    cached = _doc_cache.get(key)
    if cached is None:
        cached = _build_document(snapshot, key)
    fresh = freshness(snapshot=snapshot)
    status = {**cached["status"], "stale": fresh.stale, "staleReason": fresh.reason,
              "ageSeconds": round(fresh.age_seconds, 3)}
    return {**cached, "status": status}


def _build_document(snapshot: TopologySnapshot, key: tuple[int, int, bool, str]) -> dict[str, Any]:
    topology = topology_for(snapshot=snapshot)
    spec: dict[str, Any] = nested_maps(topology)
    zones: dict[str, dict[str, Any]] = {}
    regions: dict[str, list[str]] = {}
    for name, zone, region in zip(topology.nodes, topology.zones, topology.regions, strict=True):
        if zone:
            entry = zones.setdefault(zone, {"name": zone, "region": region, "nodes": []})
            entry["nodes"].append(name)
            if region and zone not in regions.setdefault(region, []):
                regions[region].append(zone)
    spec["nodes"] = list(topology.nodes)
    spec["zones"] = list(zones.values())
    spec["regions"] = [{"name": name, "zones": members} for name, members in regions.items()]
    spec["costs"] = {
        "unitMs": round(snapshot.cost_unit_ms, 6),
        "zones": snapshot.zone_costs,
        "regions": snapshot.region_costs,
    }
    document = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": "netaware",
            "generation": snapshot.version,
            "creationTimestamp": snapshot.created_at.isoformat().replace("+00:00", "Z"),
        },
        "spec": spec,
        "status": {
            "version": snapshot.version,
            "source": snapshot.source,
            "latencyQuantile": snapshot.latency_quantile,
            "stale": snapshot.stale,
            "staleReason": snapshot.stale_reason,
            "dataUntil": snapshot.data_until.isoformat().replace("+00:00", "Z") if snapshot.data_until else None,
            "measuredPairs": snapshot.measured_pairs,
            "inferredPairs": snapshot.inferred_pairs,
            "stalePairs": snapshot.stale_pairs,
            "inferred": _pairs_by_source(topology, topology.inferred),
            "stalePairList": _pairs_by_source(topology, topology.stale),
            "costOverrides": snapshot.cost_overrides,
        },
    }
    if len(_doc_cache) > 8:
        _doc_cache.clear()
    _doc_cache[key] = document
    return document
