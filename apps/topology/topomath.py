"""Framework-free NetworkTopology maths.

``Topology`` is the contract every scorer and the evaluation harness read: dense (n x n) arrays
indexed by node position, NaN where a metric is unknown. Arrays are made read-only so a shared
snapshot can never be altered by one consumer behind another's back.

The derivation (zone/region fill-in, extrema, shortest-path costs, staleness) is implemented in
this module as ``derive_topology``; see docs/topology.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

# Cost units of the KEP's NetworkOverhead when nothing better is known.
SAME_NODE_COST = 0.0
SAME_ZONE_COST = 1.0
UNKNOWN_COST = 100.0


@dataclass(frozen=True, eq=False)
class Topology:
    nodes: tuple[str, ...]
    zones: tuple[str, ...]
    regions: tuple[str, ...]
    latency_ms: np.ndarray  # (n, n) float64, NaN = unknown, diagonal 0
    bandwidth_mbps: np.ndarray  # (n, n) float64, NaN = unknown
    loss_pct: np.ndarray  # (n, n) float64 in [0, 100], NaN = unknown
    inferred: np.ndarray  # (n, n) bool: value filled from a zone-/region-pair aggregate
    stale: np.ndarray  # (n, n) bool: newest measurement older than the staleness limit (dropped)
    min_latency: float = float("nan")
    max_latency: float = float("nan")
    min_bandwidth: float = float("nan")
    max_bandwidth: float = float("nan")
    min_lossrate: float = float("nan")
    max_lossrate: float = float("nan")
    # Directed network costs between zones (same region) and between regions, from shortest paths.
    zone_costs: Mapping[tuple[str, str], float] = field(default_factory=dict)
    region_costs: Mapping[tuple[str, str], float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("latency_ms", "bandwidth_mbps", "loss_pct", "inferred", "stale"):
            array = getattr(self, name)
            if array.shape != (len(self.nodes), len(self.nodes)):
                raise ValueError(f"{name} has shape {array.shape}, expected {(len(self.nodes),) * 2}")
            array.setflags(write=False)

    @cached_property
    def index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.nodes)}

    @property
    def size(self) -> int:
        return len(self.nodes)
