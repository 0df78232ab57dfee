"""Measured node utilisation over the load-aware windows, read from the probes' node series (pure: no Django).

It lives with the probes that measure it so the scheduler's ClusterState can carry it without the
probes app importing the scheduler (imports point one way: docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeUsage:
    """Measured utilisation (0..1) from Prometheus over the load-aware windows; None = unknown."""

    cpu_15m: float | None = None
    cpu_1h: float | None = None
    cpu_1d: float | None = None
    mem_15m: float | None = None
    mem_1h: float | None = None
    mem_1d: float | None = None
    cpu_stddev_1h: float | None = None
    mem_stddev_1h: float | None = None
    # Bandwidth use (bits/s) mean and stddev for CheckRiskNodeBandwidth, and NIC capacity.
    net_used_bps_mean: float | None = None
    net_used_bps_stddev: float | None = None
    net_capacity_bps: float | None = None
    stale: bool = False
