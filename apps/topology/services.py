"""Writes of the topology app: the node cache and versioned NetworkTopology snapshots.

Every write is keyword-only and typed; the Celery task, the API views and the management commands
only call these. Snapshot versions are allocated under a transaction-scoped advisory lock so two
concurrent rebuilds can never claim the same version or leave a half-written snapshot.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from apps.probes.choices import PairSeries
from apps.probes.scenario import Scenario, load_scenario
from apps.probes.selectors import latest_pair_values

from . import documents
from .choices import NodeSource, SnapshotSource
from .models import Node, TopologySnapshot, nest_costs
from .topomath import NodeMeta, PairArrays, Topology, derive_topology, topology_from_nested

logger = logging.getLogger(__name__)

_LOCK_KEY = 0x6E657461  # "neta": serialises snapshot version allocation
_QUANTILE_SERIES = {0.5: PairSeries.RTT_P50.value, 0.9: PairSeries.RTT_P90.value, 0.99: PairSeries.RTT_P99.value}


def _config(name: str) -> Any:
    """A NETAWARE setting; its default lives in settings.py only."""
    return settings.NETAWARE[name]


# --- nodes -----------------------------------------------------------------------------------------


def upsert_node(
    *,
    name: str,
    zone: str = "",
    region: str = "",
    labels: dict | None = None,
    address: str = "",
    allocatable_cpu_millicores: int | None = None,
    allocatable_memory_bytes: int | None = None,
    ready: bool = True,
    source: str,
) -> Node:
    """Create or update one node; ``None`` (labels, allocatable) keeps what is stored."""
    if source not in NodeSource.values:
        raise ValidationError({"source": f"must be one of {sorted(NodeSource.values)}, got {source!r}"})
    node = Node.objects.filter(name=name).first() or Node(name=name)
    node.zone = zone or ""
    node.region = region or ""
    node.address = address or ""
    node.ready = ready
    node.source = source
    if labels is not None:
        node.labels = dict(labels)
    if allocatable_cpu_millicores is not None:
        node.allocatable_cpu_millicores = allocatable_cpu_millicores
    if allocatable_memory_bytes is not None:
        node.allocatable_memory_bytes = allocatable_memory_bytes
    node.full_clean(validate_unique=False)
    node.save()
    return node


def upsert_nodes_from_metrics(*, nodes: Iterable[tuple[str, str, str]]) -> int:
    """Record (name, zone, region) seen in probe metrics; returns how many rows were created or changed.

    A blank zone/region never overwrites a known one, and an existing node keeps its source.
    """
    wanted: dict[str, tuple[str, str]] = {}
    for name, zone, region in nodes:
        if name:
            wanted[name] = (zone or "", region or "")
    if not wanted:
        return 0
    now = timezone.now()
    with transaction.atomic():
        existing = {node.name: node for node in Node.objects.select_for_update().filter(name__in=list(wanted))}
        created = [
            Node(name=name, zone=zone, region=region, source=NodeSource.METRICS, updated_at=now)
            for name, (zone, region) in wanted.items()
            if name not in existing
        ]
        changed: list[Node] = []
        for name, node in existing.items():
            zone, region = wanted[name]
            new_zone, new_region = zone or node.zone, region or node.region
            if (new_zone, new_region) != (node.zone, node.region):
                node.zone, node.region, node.updated_at = new_zone, new_region, now
                changed.append(node)
        Node.objects.bulk_create(created, ignore_conflicts=True)
        if changed:
            Node.objects.bulk_update(changed, ["zone", "region", "updated_at"])
    return len(created) + len(changed)


def load_nodes_from_scenario(*, scenario: Scenario | str | Path) -> int:
    """Upsert every node of a scenario (file path or parsed) into the node cache; returns the count."""
    parsed = scenario if isinstance(scenario, Scenario) else load_scenario(Path(scenario))
    addresses = dict(Node.objects.filter(name__in=parsed.node_names).values_list("name", "address"))
    with transaction.atomic():
        for spec in parsed.nodes:
            upsert_node(
                name=spec.name,
                address=addresses.get(spec.name, ""),  # a scenario has no addresses: keep known ones
                zone=spec.zone,
                region=spec.region,
                labels=dict(spec.labels),
                allocatable_cpu_millicores=spec.cpu_millicores,
                allocatable_memory_bytes=spec.memory_bytes,
                ready=True,
                source=NodeSource.SCENARIO,
            )
    return len(parsed.nodes)


# --- snapshots -----------------------------------------------------------------------------------


def latency_series(quantile: float) -> str:
    for known, series in _QUANTILE_SERIES.items():
        if math.isclose(quantile, known):
            return series
    raise ValueError(f"NETAWARE_LATENCY_QUANTILE must be one of {sorted(_QUANTILE_SERIES)}, got {quantile}")


def store_topology(
    *,
    topology: Topology,
    source: str,
    quantile: float = 0.9,
    data_until: datetime | None = None,
    stale_reason: str = "",
) -> TopologySnapshot:
    """Store an already-derived Topology as the new current version (tests, evaluation, fixtures)."""
    if source not in SnapshotSource.values:
        raise ValidationError({"source": f"must be one of {sorted(SnapshotSource.values)}, got {source!r}"})
    return _store(topology=topology, source=source, quantile=quantile, data_until=data_until,
                  stale_reason=stale_reason)


def _store(
    *,
    topology: Topology,
    source: str,
    quantile: float,
    data_until: datetime | None,
    stale_reason: str = "",
    cost_overrides: Mapping[str, Any] | None = None,
    fingerprint: str = "",
) -> TopologySnapshot:
    keep = max(1, int(_config("TOPOLOGY_KEEP_SNAPSHOTS")))
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        version = (TopologySnapshot.objects.aggregate(v=Max("version"))["v"] or 0) + 1
        snapshot = TopologySnapshot(
            version=version,
            source=source,
            latency_quantile=quantile,
            node_count=topology.size,
            measured_pairs=int(topology.measured.sum()),
            inferred_pairs=int(topology.inferred.sum()),
            stale_pairs=int(topology.stale.sum()),
            stale=bool(stale_reason),
            stale_reason=stale_reason,
            data_until=data_until,
            cost_unit_ms=topology.cost_unit_ms,
            zone_costs=nest_costs(topology.zone_costs),
            region_costs=nest_costs(topology.region_costs),
            cost_overrides=dict(cost_overrides or {}),
            fingerprint=fingerprint,
            payload=b"",
            **TopologySnapshot.extrema_fields(topology),
        )
        snapshot.full_clean(exclude=["payload", "created_at"], validate_unique=False)
        snapshot.save()
        # Written separately as a binary parameter: the ORM would send it hex-encoded in the SQL.
        snapshot.write_payload(TopologySnapshot.encode_payload(topology))
        # Deferred: post_delete listeners make Django fetch the rows first, and never the payload.
        TopologySnapshot.objects.filter(version__lte=version - keep).defer("payload").delete()
    return snapshot


def _node_metas(extra_names: Iterable[str] = ()) -> list[NodeMeta]:
    known = {name: NodeMeta(name=name, zone=zone, region=region)
             for name, zone, region in Node.objects.values_list("name", "zone", "region")}
    for name in extra_names:
        if name not in known:
            known[name] = NodeMeta(name=name)
    return [known[name] for name in sorted(known)]


def rebuild_topology(*, now: datetime | None = None) -> TopologySnapshot | None:
    """Derive the topology from the newest samples and store it as a new version.

    Returns the current snapshot unchanged when nothing that shapes the result changed (same
    nodes, same newest sample, same stale pairs), and keeps an imported topology current until a
    newer measurement arrives. Returns None when there are neither nodes nor samples.
    """

    now = now or timezone.now()
    quantile = float(_config("LATENCY_QUANTILE"))
    stale_after = float(_config("STALE_AFTER_SECONDS"))
    lookback = max(3 * stale_after, 3600.0)
    series = [latency_series(quantile), PairSeries.BANDWIDTH.value, PairSeries.LOSS.value]
    data = latest_pair_values(series=series, since=now - timedelta(seconds=lookback))
    now_epoch = now.timestamp()

    columns = {}
    newest = -math.inf
    names: set[str] = set()
    for name, scale in zip(series, (1000.0, 1e-6, 100.0), strict=True):
        sources, targets, values, stamps = data[name]
        keep = stamps <= now_epoch
        sources = [s for s, k in zip(sources, keep, strict=True) if k] if not keep.all() else sources
        targets = [t for t, k in zip(targets, keep, strict=True) if k] if not keep.all() else targets
        values, stamps = values[keep] * scale, stamps[keep]
        if name == PairSeries.LOSS.value:
            values = np.clip(values, 0.0, 100.0)
        columns[name] = (sources, targets, values, stamps)
        names.update(sources)
        names.update(targets)
        if stamps.size:
            newest = max(newest, float(stamps.max()))
    data_until = datetime.fromtimestamp(newest, tz=UTC) if newest > -math.inf else None
    metas = _node_metas(names)
    current = TopologySnapshot.objects.current()
    if not metas:
        return current
    if current is not None and current.source == SnapshotSource.IMPORTED and (
        data_until is None or data_until <= current.created_at
    ):
        return current
    pairs = PairArrays.from_series(
        nodes=[m.name for m in metas],
        latency=columns[series[0]], bandwidth=columns[series[1]], loss=columns[series[2]],
    )
    topology = derive_topology(nodes=metas, pairs=pairs, now=now_epoch, stale_after_s=stale_after)

    stale_reason = ""
    if current is not None and current.stale and current.source == SnapshotSource.MEASURED and (
        current.data_until == data_until
    ):
        stale_reason = current.stale_reason  # no newer data since the pipeline flagged it
    elif topology.size > 1 and not topology.measured.any():
        stale_reason = f"no measurement newer than {stale_after:g} s"
    digest = hashlib.sha256(repr((
        [(m.name, m.zone, m.region) for m in metas], quantile, data_until, int(topology.stale.sum()), stale_reason,
    )).encode()).hexdigest()[:32]
    if current is not None and current.fingerprint == digest:
        return current
    return _store(topology=topology, source=SnapshotSource.MEASURED, quantile=quantile, data_until=data_until,
                  stale_reason=stale_reason, fingerprint=digest)


def mark_stale(*, reason: str) -> None:
    """Flag the current snapshot stale (e.g. Prometheus unreachable); a no-op when none exists."""
    reason = reason.strip() or "marked stale"
    current = TopologySnapshot.objects.current()
    if current is not None:
        current.stale, current.stale_reason = True, reason[:2000]
        current.save(update_fields=["stale", "stale_reason"])  # a save, so post_save listeners see it
        logger.warning("topology v%s marked stale: %s", current.version, reason)


# --- import --------------------------------------------------------------------------------------


def import_topology(*, document: Any) -> TopologySnapshot:
    """Store a user-defined NetworkTopology (full document or bare spec) as the new current snapshot.

    The document is read by ``documents.read_import`` (the CRD's schema plus the semantic step); a
    ``TopologyDocumentError`` (``.errors``: field path -> messages) stores nothing. Nodes the document
    names that the cache lacks are added (source import); named but undeclared nodes keep their cached
    zone and region.
    """
    imported = documents.read_import(document)
    cached = {name: NodeMeta(name=name, zone=zone, region=region)
              for name, zone, region in Node.objects.values_list("name", "zone", "region")}
    metas = [*imported.nodes, *(cached.get(name, NodeMeta(name=name)) for name in imported.named)]
    now = timezone.now()
    try:
        topology = topology_from_nested(imported.spec, nodes=metas, now=now.timestamp(),
                                        zone_cost_overrides=imported.zone_costs,
                                        region_cost_overrides=imported.region_costs)
    except ValueError as exc:  # a cost override between zones (regions) no node is in
        raise documents.TopologyDocumentError(errors={f"{imported.path}.costs".lstrip("."): [str(exc)]}) from exc
    overrides = {"zones": nest_costs(imported.zone_costs), "regions": nest_costs(imported.region_costs)}
    with transaction.atomic():
        missing = [m for m in metas if m.name not in cached]
        Node.objects.bulk_create(
            [Node(name=m.name, zone=m.zone, region=m.region, source=NodeSource.IMPORT) for m in missing],
            ignore_conflicts=True,
        )
        return _store(topology=topology, source=SnapshotSource.IMPORTED,
                      quantile=float(_config("LATENCY_QUANTILE")), data_until=now,
                      cost_overrides=overrides)
