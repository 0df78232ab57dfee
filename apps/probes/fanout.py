"""Bounded probe fan-out: which peers each node probes, deterministic from the node list (docs/scale.md).

Every agent, the emulator and the tests call the same pure functions, so each agent computes its own
part of the cluster-wide fan-out without coordination, and the emulated cluster exports exactly the
series a real cluster of that size would. No Django, no module-level state.

The fan-out of a node in zone A (``n_A`` nodes) of ``Z`` zones, with at most ``K`` peers:

* **Allocation.** ``q_min = ceil(m (Z-1) / (n_A - 1))`` other-zone slots per node guarantee ``m``
  measured node pairs for every directed zone pair, even mid-rotation (slots are spread evenly, see
  below; rotations are staggered, see ``node_epoch``); other zones are
  offered up to ``min(Z-1, K // 2)`` slots (one per zone when the budget allows), the own zone gets
  the rest (all of it when few), and slots the own zone cannot use go back to the other zones.
* **Own zone.** Offsets ``1 .. n_A-1`` around the zone's sorted member ring; epoch ``e`` takes the
  window of ``own`` consecutive offsets starting at ``e * own``. Every member is probed by exactly
  ``own`` others, and every same-zone pair comes round within ``ceil((n_A-1)/own)`` epochs.
* **Other zones.** An endless interleaved sequence whose position ``p`` names zone
  ``others[p mod (Z-1)]`` and, inside it, member ``(p div (Z-1) + rank) mod n_B``; node ``rank`` takes
  ``q`` consecutive positions starting at ``(rank + e + zone index) * q``. The ``n_A`` nodes of a zone together
  cover ``n_A * q`` consecutive positions, i.e. every other zone ``floor`` or ``ceil`` of
  ``n_A q / (Z-1)`` times, and as ``e`` grows each node walks through every other-zone node.
* ``K = 0`` (or ``K >= N-1``) is the full mesh.

A node whose zone is unknown (``""``) is its own zone, as in the topology derivation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# The agents', the emulator's and settings.py's (PROBE_MAX_PEERS) K: one default, here.
DEFAULT_MAX_PEERS = 24
DEFAULT_MIN_PAIRS = 3
DEFAULT_ROTATION_SECONDS = 6 * 3600
# Bandwidth tests follow the same fan-out with a smaller K: each series costs as much as an RTT one and
# an agent tests one peer every 30 s, so more peers would only make each value older.
DEFAULT_BANDWIDTH_PEERS = 8


class FanoutError(ValueError):
    """Bad fan-out input; the message names the parameter."""


@dataclass(frozen=True)
class FanoutNode:
    name: str
    zone: str = ""
    region: str = ""


@dataclass(frozen=True)
class FanoutSettings:
    max_peers: int = DEFAULT_MAX_PEERS  # K; 0 = full mesh
    min_pairs: int = DEFAULT_MIN_PAIRS  # m
    rotation_seconds: float = DEFAULT_ROTATION_SECONDS

    def __post_init__(self) -> None:
        if self.max_peers < 0:
            raise FanoutError(f"max_peers: must be >= 0 (0 = full mesh), got {self.max_peers}")
        if self.min_pairs < 1:
            raise FanoutError(f"min_pairs: must be >= 1, got {self.min_pairs}")
        if not self.rotation_seconds > 0:
            raise FanoutError(f"rotation_seconds: must be > 0, got {self.rotation_seconds}")

    def epoch(self, now: float) -> int:
        """Rotation epoch of Unix time ``now`` (cluster-wide); agents agree on it through their clocks."""
        return math.floor(now / self.rotation_seconds)


@dataclass(frozen=True)
class _Zone:
    key: tuple[str, str]
    members: tuple[str, ...]  # sorted


@dataclass(frozen=True)
class Layout:
    """The node list grouped by zone; build once per node list and reuse for every node's fan-out."""

    zones: tuple[_Zone, ...]
    zone_of: Mapping[str, int] = field(repr=False)
    rank_of: Mapping[str, int] = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.zone_of)


def _zone_key(node: FanoutNode) -> tuple[str, str]:
    # An unknown zone is a zone of its own (as apps/topology/topomath.py treats it).
    return (node.region, node.zone) if node.zone else ("\x00", node.name)


def layout(nodes: Iterable[FanoutNode]) -> Layout:
    """Group ``nodes`` by (region, zone); names must be unique."""
    by_zone: dict[tuple[str, str], list[str]] = {}
    seen: set[str] = set()
    for node in nodes:
        if not node.name:
            raise FanoutError("nodes: a node has an empty name")
        if node.name in seen:
            raise FanoutError(f"nodes: duplicate node {node.name!r}")
        seen.add(node.name)
        by_zone.setdefault(_zone_key(node), []).append(node.name)
    zones = tuple(_Zone(key, tuple(sorted(names))) for key, names in sorted(by_zone.items()))
    zone_of = {name: i for i, zone in enumerate(zones) for name in zone.members}
    rank_of = {name: r for zone in zones for r, name in enumerate(zone.members)}
    return Layout(zones=zones, zone_of=zone_of, rank_of=rank_of)


def allocation(n_zone: int, n_total: int, n_zones: int, settings: FanoutSettings) -> tuple[int, int]:
    """(own-zone slots, other-zone slots) per node of a zone with ``n_zone`` of ``n_total`` nodes."""
    own_max, others = n_zone - 1, n_total - n_zone
    k = settings.max_peers
    if k == 0 or k >= n_total - 1:
        return own_max, others
    m = settings.min_pairs
    # n_zone - 1 blocks of q positions are always covered (staggered rotation): (n_zone - 1) q >= m (Z - 1)
    q_min = min(others, math.ceil(m * (n_zones - 1) / max(n_zone - 1, 1))) if n_zones > 1 else 0
    own_min = min(own_max, math.ceil(m / n_zone))
    if own_min + q_min > k:  # K too small for the coverage guarantee: coverage() reports the shortfall
        own = min(own_min, k)
        return own, min(others, k - own)
    q_pref = min(others, max(q_min, min(n_zones - 1, k // 2)))
    own = min(own_max, max(own_min, k - q_pref))
    return own, min(others, k - own)


def peers_of(lay: Layout, node: str, settings: FanoutSettings, epoch: int) -> tuple[str, ...]:
    """The peers ``node`` probes during rotation ``epoch`` (own zone first, then the others)."""
    try:
        zi = lay.zone_of[node]
    except KeyError:
        raise FanoutError(f"node: {node!r} is not in the node list") from None
    zone = lay.zones[zi]
    n_zone, rank = len(zone.members), lay.rank_of[node]
    own, q = allocation(n_zone, lay.size, len(lay.zones), settings)
    out: list[str] = []
    if own:
        start = (epoch * own) % (n_zone - 1)
        for j in range(own):
            offset = (start + j) % (n_zone - 1) + 1
            out.append(zone.members[(rank + offset) % n_zone])
    if q:
        others = [z for i, z in enumerate(lay.zones) if i != zi]
        if q >= lay.size - n_zone:
            out.extend(name for z in others for name in z.members)
        else:
            out.extend(_other_zone_peers(others, rank, q, epoch, zi))
    return tuple(out)


def _other_zone_peers(others: Sequence[_Zone], rank: int, q: int, epoch: int, zone_index: int) -> list[str]:
    width = len(others)
    chosen: dict[str, None] = {}
    # Shifted per zone so single-node zones (unknown zones) do not all start at the same position.
    p = (rank + epoch + zone_index) * q
    # Small zones repeat inside a window; skip repeats and walk on (bounded: q < other nodes).
    limit = p + q * width + sum(len(z.members) for z in others) * width
    while len(chosen) < q and p < limit:
        zone = others[p % width]
        member = zone.members[(p // width + rank) % len(zone.members)]
        chosen.setdefault(member, None)
        p += 1
    return list(chosen)


def node_epoch(lay: Layout, node: str, settings: FanoutSettings, now: float) -> int:
    """The epoch ``node`` is in at Unix time ``now``: rotations are staggered by rank inside a zone.

    Node ``rank`` of an ``n``-node zone moves to its next window ``rank / n`` of a period after the
    zone's first node, so a zone's series churn evenly instead of all at one boundary (a Prometheus
    head would otherwise hold twice the series until its next compaction). Mid-rotation the zone's
    other-zone windows still cover ``n - 1`` consecutive blocks (one block counted twice): the
    allocation reserves for that, so the ``m`` guarantee holds at every instant.
    """
    try:
        zone = lay.zones[lay.zone_of[node]]
    except KeyError:
        raise FanoutError(f"node: {node!r} is not in the node list") from None
    return math.floor(now / settings.rotation_seconds - lay.rank_of[node] / len(zone.members))


def peers_at(lay: Layout, node: str, settings: FanoutSettings, now: float) -> tuple[str, ...]:
    """The peers ``node`` probes at Unix time ``now`` (its staggered epoch)."""
    return peers_of(lay, node, settings, node_epoch(lay, node, settings, now))


def cluster_fanout_at(nodes: Iterable[FanoutNode], settings: FanoutSettings, now: float) -> dict[str, tuple[str, ...]]:
    """Every node's peers at Unix time ``now``: what all agents together probe at that instant."""
    lay = layout(nodes)
    return {name: peers_at(lay, name, settings, now) for zone in lay.zones for name in zone.members}


def cluster_fanout(nodes: Iterable[FanoutNode], settings: FanoutSettings, epoch: int) -> dict[str, tuple[str, ...]]:
    """Every node's peers for ``epoch``: what all agents together probe."""
    lay = layout(nodes)
    return {name: peers_of(lay, name, settings, epoch) for zone in lay.zones for name in zone.members}


@dataclass(frozen=True)
class Coverage:
    pairs: int  # directed node pairs probed
    zone_pairs: Mapping[tuple[str, str], int]  # directed (zone label, zone label) -> measured node pairs
    shortfall: Mapping[tuple[str, str], int]  # zone pairs under min(m, possible pairs): -> measured
    max_in_degree: int  # most sources probing one node (echo and lease load)


def zone_label(key: tuple[str, str]) -> str:
    return key[1] if key[0] != "\x00" else f"(node {key[1]})"


def coverage(nodes: Sequence[FanoutNode], peers: Mapping[str, Sequence[str]], min_pairs: int) -> Coverage:
    """How many node pairs of every directed zone pair ``peers`` (node -> probed peers) measures, and where it falls short of m."""
    lay = layout(nodes)
    counts: dict[tuple[int, int], int] = {}
    indeg: dict[str, int] = {}
    total = 0
    for source, targets in peers.items():
        zs = lay.zone_of[source]
        for target in targets:
            key = (zs, lay.zone_of[target])
            counts[key] = counts.get(key, 0) + 1
            indeg[target] = indeg.get(target, 0) + 1
            total += 1
    zone_pairs: dict[tuple[str, str], int] = {}
    shortfall: dict[tuple[str, str], int] = {}
    for a, za in enumerate(lay.zones):
        for b, zb in enumerate(lay.zones):
            possible = len(za.members) * (len(zb.members) - (1 if a == b else 0))
            if possible == 0:
                continue
            label = (zone_label(za.key), zone_label(zb.key))
            got = counts.get((a, b), 0)
            zone_pairs[label] = got
            if got < min(min_pairs, possible):
                shortfall[label] = got
    return Coverage(pairs=total, zone_pairs=zone_pairs, shortfall=shortfall,
                    max_in_degree=max(indeg.values(), default=0))


def epochs_to_cover_all(lay: Layout, node: str, settings: FanoutSettings, *, limit: int = 100_000) -> int | None:
    """Epochs until ``node`` has probed every other node at least once (None beyond ``limit``)."""
    remaining = set(lay.zone_of) - {node}
    for epoch in range(limit):
        remaining.difference_update(peers_of(lay, node, settings, epoch))
        if not remaining:
            return epoch + 1
    return None


# --- series budget ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SeriesCost:
    """Series one agent exports: per probed peer, per bandwidth-tested peer, and per agent."""

    per_peer: int
    per_bandwidth_peer: int
    per_agent: int


def series_per_node(cost: SeriesCost, peers: int, bandwidth_peers: int) -> int:
    return cost.per_agent + cost.per_peer * peers + cost.per_bandwidth_peer * bandwidth_peers


def head_series(exposed: float, churned_per_hour: float, head_hours: float) -> float:
    """Series a Prometheus head holds: the exposed ones plus those rotated out within ``head_hours``.

    A series that stops receiving samples stays in the TSDB head until the next head compaction
    (every 2 h, keeping the newest hour or so): on average about 2 h, at most 3 h.
    """
    return exposed + churned_per_hour * head_hours


def as_fanout_nodes(triples: Iterable[tuple[str, str, str]]) -> list[FanoutNode]:
    """``(name, zone, region)`` triples to fan-out nodes."""
    return [FanoutNode(name=name, zone=zone or "", region=region or "") for name, zone, region in triples]


__all__ = [
    "DEFAULT_BANDWIDTH_PEERS",
    "DEFAULT_MAX_PEERS",
    "DEFAULT_MIN_PAIRS",
    "DEFAULT_ROTATION_SECONDS",
    "Coverage",
    "FanoutError",
    "FanoutNode",
    "FanoutSettings",
    "Layout",
    "SeriesCost",
    "allocation",
    "as_fanout_nodes",
    "cluster_fanout",
    "cluster_fanout_at",
    "coverage",
    "epochs_to_cover_all",
    "head_series",
    "layout",
    "node_epoch",
    "peers_at",
    "peers_of",
    "series_per_node",
]
