"""Node cache and versioned NetworkTopology snapshots.

A snapshot stores the derived dense arrays as one ``np.savez`` blob (float32 values, bool flags, no
pickle): loading the current topology of 1,000 nodes is one row read and a few memcpy's instead of
a million JSON values. The newest version is the current one; older versions are pruned to
``NETAWARE["TOPOLOGY_KEEP_SNAPSHOTS"]``.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address
from django.db import models

from .choices import NodeSource, SnapshotSource
from .topomath import Topology

_EXTREMA = ("min_latency", "max_latency", "min_bandwidth", "max_bandwidth", "min_lossrate", "max_lossrate")
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


class TopologySnapshotQuerySet(models.QuerySet):
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
    payload = models.BinaryField(help_text="np.savez of nodes, zones, regions and the dense arrays")

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
        for lo, hi in (("min_latency", "max_latency"), ("min_bandwidth", "max_bandwidth"),
                       ("min_lossrate", "max_lossrate")):
            a, b = getattr(self, lo), getattr(self, hi)
            if a is not None and b is not None and a > b:
                errors[lo] = f"must be <= {hi}"
        if not 0 < self.latency_quantile < 1:
            errors["latency_quantile"] = "must be between 0 and 1 (exclusive)"
        if errors:
            raise ValidationError(errors)

    # --- payload -------------------------------------------------------------------------------

    @staticmethod
    def encode_payload(topology: Topology) -> bytes:
        buffer = io.BytesIO()
        np.savez(
            buffer,
            nodes=np.asarray(topology.nodes, dtype=str),
            zones=np.asarray(topology.zones, dtype=str),
            regions=np.asarray(topology.regions, dtype=str),
            latency_ms=topology.latency_ms.astype(np.float32),
            bandwidth_mbps=topology.bandwidth_mbps.astype(np.float32),
            loss_pct=topology.loss_pct.astype(np.float32),
            inferred=np.packbits(topology.inferred, axis=None),
            stale=np.packbits(topology.stale, axis=None),
        )
        return buffer.getvalue()

    @staticmethod
    def extrema_fields(topology: Topology) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name in _EXTREMA:
            value = float(getattr(topology, name))
            out[name] = None if math.isnan(value) else round(value, _DECIMALS)
        return out

    def to_topology(self) -> Topology:
        with np.load(io.BytesIO(bytes(self.payload)), allow_pickle=False) as data:
            nodes = tuple(data["nodes"].tolist())
            n = len(nodes)

            def values(key: str) -> np.ndarray:
                return np.round(data[key].astype(np.float64), _DECIMALS).reshape(n, n)

            def flags(key: str) -> np.ndarray:
                return np.unpackbits(data[key], count=n * n).astype(bool).reshape(n, n)

            kwargs: dict[str, Any] = {
                "nodes": nodes,
                "zones": tuple(data["zones"].tolist()),
                "regions": tuple(data["regions"].tolist()),
                "latency_ms": values("latency_ms"),
                "bandwidth_mbps": values("bandwidth_mbps"),
                "loss_pct": values("loss_pct"),
                "inferred": flags("inferred"),
                "stale": flags("stale"),
            }
        for name in _EXTREMA:
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


def nest_costs(costs: Any) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for (a, b), cost in costs.items():
        out.setdefault(a, {})[b] = float(cost)
    return out


def _flatten(nested: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
    return {(a, b): float(cost) for a, row in (nested or {}).items() for b, cost in row.items()}
