"""Node cache and versioned NetworkTopology snapshots.

A snapshot stores the derived dense arrays as one binary payload (float32 values, bit-packed flags,
fixed offsets, in zstd-compressed chunks; see ``snapshot_format``), written and read as a binary bytea
parameter and read back in slices, so 5,000 nodes (25M pairs, 306 MB before compression) store and
load without hex text copies.
The newest version is the current one; older versions are pruned to
``NETAWARE["TOPOLOGY_KEEP_SNAPSHOTS"]``.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import psycopg
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address
from django.db import connection, models

from .choices import NodeSource, SnapshotSource
from .snapshot_format import (
    decode_snapshot,
    decode_snapshot_arrays,
    is_legacy_snapshot,
    open_payload,
    parse_snapshot_header,
    snapshot_header_bytes,
    snapshot_payload,
)
from .topomath import EXTREMA_FIELDS, Topology

_DECIMALS = 4


class Node(models.Model):
    """Cluster node cache: written by scenario loading, the cluster watcher, metrics and imports."""

    name = models.CharField(max_length=253, unique=True)
    zone = models.CharField(max_length=253, blank=True, default="")
    region = models.CharField(max_length=253, blank=True, default="")
    labels = models.JSONField(default=dict, blank=True)
    address = models.CharField(max_length=45, blank=True, default="", help_text="InternalIP (IPv4 or IPv6)")
    allocatable_cpu_millicores = models.PositiveBigIntegerField(default=0)
    allocatable_memory_bytes = models.PositiveBigIntegerField(default=0)
    ready = models.BooleanField(default=True)
    source = models.CharField(max_length=16, choices=NodeSource.choices, default=NodeSource.CLUSTER)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["zone"], name="node_zone"), models.Index(fields=["region"], name="node_region")]
        constraints = [models.CheckConstraint(condition=~models.Q(name=""), name="node_name_not_empty")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.address:
            try:
                validate_ipv46_address(self.address)
            except ValidationError as exc:
                raise ValidationError({"address": exc.messages}) from exc
        if not isinstance(self.labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.labels.items()
        ):
            raise ValidationError({"labels": "must be a mapping of string keys to string values"})


class TopologySnapshotQuerySet(models.QuerySet["TopologySnapshot"]):
    def current(self) -> TopologySnapshot | None:
        return self.defer("payload").order_by("-version").first()


class TopologySnapshot(models.Model):
    version = models.PositiveIntegerField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=16, choices=SnapshotSource.choices)
    latency_quantile = models.FloatField(default=0.9)
    node_count = models.PositiveIntegerField(default=0)
    measured_pairs = models.PositiveIntegerField(default=0)
    inferred_pairs = models.PositiveIntegerField(default=0)
    stale_pairs = models.PositiveIntegerField(default=0)
    stale = models.BooleanField(default=False)
    stale_reason = models.TextField(blank=True, default="")
    # Newest sample time the snapshot was derived from: a rebuild that sees no newer data keeps
    # a stale flag set by the pipeline (Prometheus down) instead of silently clearing it.
    data_until = models.DateTimeField(null=True, blank=True)
    min_latency = models.FloatField(null=True, blank=True)
    max_latency = models.FloatField(null=True, blank=True)
    min_bandwidth = models.FloatField(null=True, blank=True)
    max_bandwidth = models.FloatField(null=True, blank=True)
    min_lossrate = models.FloatField(null=True, blank=True)
    max_lossrate = models.FloatField(null=True, blank=True)
    cost_unit_ms = models.FloatField(default=1.0)
    # {"A": {"B": 2.0}}: directed shortest-path costs (zones within a region / between regions).
    zone_costs = models.JSONField(default=dict, blank=True)
    region_costs = models.JSONField(default=dict, blank=True)
    # User-defined edge costs an import supplied (kept so the document round-trips).
    cost_overrides = models.JSONField(default=dict, blank=True)
    # Hash of what shaped a measured rebuild; an identical rebuild returns the current snapshot.
    fingerprint = models.CharField(max_length=64, blank=True, default="")
    # Storage format 3 (format 2 in zstd chunks; snapshot_format); written/read in binary by
    # write_payload/to_topology. The column is STORAGE EXTERNAL (migration 0003): no pglz on top of our
    # chunks, so slices are cheap to read. Formats 1 and 2 (older rows) still load.
    payload = models.BinaryField(
        help_text="snapshot payload, format 3: zstd-compressed chunks of the header, float32 arrays and bit-packed flags")

    objects = TopologySnapshotQuerySet.as_manager()

    class Meta:
        ordering = ["-version"]
        get_latest_by = "version"
        constraints = [
            models.CheckConstraint(condition=models.Q(version__gte=1), name="snapshot_version_positive"),
            models.CheckConstraint(
                condition=models.Q(latency_quantile__gt=0) & models.Q(latency_quantile__lt=1),
                name="snapshot_quantile_open_unit",
            ),
            models.CheckConstraint(
                condition=models.Q(stale=False) | ~models.Q(stale_reason=""), name="snapshot_stale_needs_reason"
            ),
            models.CheckConstraint(
                condition=models.Q(min_latency__isnull=True) | models.Q(max_latency__isnull=True)
                | models.Q(min_latency__lte=models.F("max_latency")),
                name="snapshot_latency_extrema_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"topology v{self.version} ({self.node_count} nodes{', stale' if self.stale else ''})"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.stale and not self.stale_reason:
            errors["stale_reason"] = "a stale snapshot needs a reason"
        for lo, hi in zip(EXTREMA_FIELDS[::2], EXTREMA_FIELDS[1::2], strict=True):
            a, b = getattr(self, lo), getattr(self, hi)
            if a is not None and b is not None and a > b:
                errors[lo] = f"must be <= {hi}"
        if not 0 < self.latency_quantile < 1:
            errors["latency_quantile"] = "must be between 0 and 1 (exclusive)"
        if errors:
            raise ValidationError(errors)

    # --- payload -------------------------------------------------------------------------------

    @staticmethod
    def encode_payload(topology: Topology) -> bytearray:
        """Storage format 3 (see ``snapshot_format.snapshot_payload``): format 2 in zstd chunks."""
        return snapshot_payload(topology)

    @staticmethod
    def extrema_fields(topology: Topology) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name in EXTREMA_FIELDS:
            value = float(getattr(topology, name))
            out[name] = None if math.isnan(value) else round(value, _DECIMALS)
        return out

    def write_payload(self, payload: bytes | bytearray) -> None:
        """Write the payload as a *binary* bytea parameter.

        Django's psycopg backend binds parameters client-side, i.e. a bytea travels hex-encoded
        inside the SQL text (2x the size plus copies; over 1 GiB fails in Postgres for 5,000 nodes).
        """
        with _raw_cursor() as cursor:
            cursor.execute(f"UPDATE {self._meta.db_table} SET payload = %b WHERE id = %s", [payload, self.pk])
        self.__dict__.pop("payload", None)  # deferred: to_topology() reads it back in slices

    def to_topology(self) -> Topology:
        """The stored Topology. Reads the payload from the database in binary slices unless this
        instance already holds it in memory (e.g. built by hand from ``encode_payload``)."""
        if "payload" in self.__dict__ and (self.payload or self.pk is None):
            payload = self.payload
            if is_legacy_snapshot(payload):
                return self._from_arrays(*_decode_legacy(payload))
            layout, arrays = decode_snapshot(payload)
            return self._from_arrays(layout.nodes, layout.zones, layout.regions, arrays)
        return self._from_arrays(*_load_from_db(self.pk))

    def _from_arrays(
        self, nodes: tuple[str, ...], zones: tuple[str, ...], regions: tuple[str, ...], arrays: dict[str, np.ndarray]
    ) -> Topology:
        kwargs: dict[str, Any] = {"nodes": nodes, "zones": zones, "regions": regions, **arrays}
        for name in EXTREMA_FIELDS:
            value = getattr(self, name)
            kwargs[name] = float("nan") if value is None else float(value)
        return Topology(
            **kwargs,
            zone_costs=_flatten(self.zone_costs),
            region_costs=_flatten(self.region_costs),
            version=self.version,
            stale_reason=self.stale_reason if self.stale else "",
            cost_unit_ms=self.cost_unit_ms,
        )


class SnapshotGone(LookupError):
    """The snapshot row disappeared (pruned) while its payload was being read."""


def _raw_cursor() -> psycopg.Cursor:
    """A server-side-binding psycopg cursor on Django's connection (same transaction)."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def _decode_legacy(payload: Any) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], dict[str, np.ndarray]]:
    """Storage format 1 (``np.savez`` zip), written before 2026-11-22; still readable."""
    with np.load(io.BytesIO(payload), allow_pickle=False) as data:
        nodes = tuple(data["nodes"].tolist())
        n = len(nodes)
        arrays = {
            key: np.round(data[key].astype(np.float64), _DECIMALS).reshape(n, n)
            for key in ("latency_ms", "bandwidth_mbps", "loss_pct")
        }
        for key in ("inferred", "stale"):
            arrays[key] = np.unpackbits(data[key], count=n * n).astype(bool).reshape(n, n)
        return nodes, tuple(data["zones"].tolist()), tuple(data["regions"].tolist()), arrays


def _load_from_db(pk: int) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], dict[str, np.ndarray]]:
    """Read a payload in binary slices (``substring`` on an uncompressed EXTERNAL bytea column), so
    neither a hex text copy nor the whole blob is ever held next to the float64 arrays."""
    table = TopologySnapshot._meta.db_table
    with _raw_cursor() as cursor:

        def read(offset: int, length: int) -> bytes:
            cursor.execute(f"SELECT substring(payload FROM %s FOR %s) FROM {table} WHERE id = %s",
                           [offset + 1, length, pk], binary=True)
            row = cursor.fetchone()
            if row is None:
                raise SnapshotGone(f"topology snapshot id={pk} no longer exists")
            data: bytes = row[0]
            if len(data) != length:
                raise ValueError(f"topology snapshot id={pk}: payload truncated at byte {offset + len(data)}")
            return data

        cursor.execute(f"SELECT substring(payload FROM 1 FOR 65536), octet_length(payload) FROM {table} WHERE id = %s",
                       [pk], binary=True)
        row = cursor.fetchone()
        if row is None:
            raise SnapshotGone(f"topology snapshot id={pk} no longer exists")
        head, size = row
        if is_legacy_snapshot(head):
            return _decode_legacy(read(0, size))
        try:
            read, size = open_payload(head, read, size)  # type: ignore[assignment]  # format 3: decompresses chunk by chunk
        except ValueError as exc:
            raise ValueError(f"topology snapshot id={pk}: {exc}") from exc
        head = read(0, min(size, len(head)))
        needed = snapshot_header_bytes(head)
        layout = parse_snapshot_header(head if needed <= len(head) else read(0, needed))
        if layout.total_bytes != size:
            raise ValueError(f"topology snapshot id={pk}: payload has {size} bytes, header says {layout.total_bytes}")
        arrays = decode_snapshot_arrays(layout, read)
        return layout.nodes, layout.zones, layout.regions, arrays


def nest_costs(costs: Any) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for (a, b), cost in costs.items():
        out.setdefault(a, {})[b] = float(cost)
    return out


def _flatten(nested: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
    return {(a, b): float(cost) for a, row in (nested or {}).items() for b, cost in row.items()}
