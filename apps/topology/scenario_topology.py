"""Build a ``Topology`` straight from a scenario's nominal link values (no probes, no database).

Used by the acceptance tests, the benchmark and the evaluation harness, where the topology is the
scenario's design rather than a measurement. Extrema are taken over all off-diagonal pairs (the
diagonal is the node itself, never measured: latency 0, bandwidth and loss unknown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np

from apps.probes.scenario import Scenario

from .topomath import NodeMeta, PairArrays, Topology, derive_topology, metric_extrema


def topology_from_scenario(scenario: Scenario, *,
                           zone_costs: Mapping[tuple[str, str], float] | None = None,
                           region_costs: Mapping[tuple[str, str], float] | None = None) -> Topology:
    """Dense nominal Topology of a scenario; unreachable pairs are NaN in all three metrics."""
    names = scenario.node_names
    n = len(names)
    zone_of = {node.name: node.zone for node in scenario.nodes}
    zone_list = scenario.zones()
    zpos = {z: i for i, z in enumerate(zone_list)}
    nz = len(zone_list)
    # Zone-pair matrices, then broadcast to nodes; node links and unreachable pairs patched after.
    zl = np.full((nz, nz, 3), np.nan)
    for (a, b), link in scenario.zone_links.items():
        zl[zpos[a], zpos[b]] = (link.latency_ms, link.bandwidth_mbps, link.loss_pct)
    node_zone = np.array([zpos[zone_of[name]] for name in names], dtype=np.int64)
    full = zl[node_zone[:, None], node_zone[None, :]]  # (n, n, 3)
    index = {name: i for i, name in enumerate(names)}
    for (a, b), link in scenario.node_links.items():
        full[index[a], index[b]] = (link.latency_ms, link.bandwidth_mbps, link.loss_pct)
    for a, b in scenario.unreachable:
        full[index[a], index[b]] = np.nan
    latency = np.ascontiguousarray(full[:, :, 0])
    bandwidth = np.ascontiguousarray(full[:, :, 1])
    loss = np.ascontiguousarray(full[:, :, 2])
    diag = np.arange(n)
    latency[diag, diag] = 0.0
    bandwidth[diag, diag] = np.nan
    loss[diag, diag] = np.nan
    return Topology(
        names,
        tuple(node.zone for node in scenario.nodes),
        tuple(node.region for node in scenario.nodes),
        latency,
        bandwidth,
        loss,
        np.zeros((n, n), dtype=bool),  # inferred
        np.zeros((n, n), dtype=bool),  # stale
        *metric_extrema(latency, bandwidth, loss),
        zone_costs=dict(zone_costs or {}),
        region_costs=dict(region_costs or {}),
    )


def measured_topology_from_scenario(scenario: Scenario, *, stale_after_s: float = 300.0) -> Topology:
    """What netaware's topology would say of the scenario long after its start: the ``unmeasured`` pairs
    and the ``stale`` ones (their last measurement older than ``stale_after_s``) filled the way the
    topology app's own ``derive_topology`` fills them (zone / region medians of what the agents
    measure) and flagged ``inferred`` / ``stale``; every other pair, unreachable ones included, exactly
    as in the nominal topology, so a scenario with and without gaps differ only where the gaps are.
    The evaluation schedules on this view and scores on the nominal one."""
    nominal = topology_from_scenario(scenario)
    n = nominal.size
    index = {name: i for i, name in enumerate(scenario.node_names)}
    src, tgt = np.nonzero(~np.eye(n, dtype=bool))

    def keys(pairs: Iterable[tuple[str, str]]) -> np.ndarray:
        return np.fromiter((index[a] * n + index[b] for a, b in pairs), dtype=np.int64)

    keep = ~np.isin(src * n + tgt, keys(scenario.unmeasured))
    src, tgt = src[keep], tgt[keep]
    latency = nominal.latency_ms[src, tgt]
    bandwidth = nominal.bandwidth_mbps[src, tgt]
    loss = nominal.loss_pct[src, tgt].copy()
    loss[np.isnan(latency)] = 100.0  # unreachable: probes counted as sent, none answered
    now = 10.0 * stale_after_s
    ts = np.where(np.isin(src * n + tgt, keys(scenario.stale)), 0.0, now)
    pairs = PairArrays(source=src.astype(np.int64), target=tgt.astype(np.int64), latency_ms=latency,
                       bandwidth_mbps=bandwidth, loss_pct=loss, latency_ts=ts, bandwidth_ts=ts.copy(), loss_ts=ts.copy())
    nodes = [NodeMeta(node.name, node.zone, node.region) for node in scenario.nodes]
    derived = derive_topology(nodes=nodes, pairs=pairs, now=now, stale_after_s=stale_after_s)
    hidden = np.zeros((n, n), dtype=bool)
    for pair_set in (scenario.unmeasured, scenario.stale):
        flat = keys(pair_set)
        hidden.reshape(-1)[flat] = True
    matrices = []
    for name in ("latency_ms", "bandwidth_mbps", "loss_pct"):
        matrix = getattr(nominal, name).copy()
        matrix[hidden] = getattr(derived, name)[hidden]
        matrices.append(matrix)
    lat_lo, lat_hi, bw_lo, bw_hi, loss_lo, loss_hi = metric_extrema(*matrices)
    return replace(
        nominal, latency_ms=matrices[0], bandwidth_mbps=matrices[1], loss_pct=matrices[2],
        inferred=derived.inferred & hidden, stale=derived.stale & hidden, min_latency=lat_lo, max_latency=lat_hi,
        min_bandwidth=bw_lo, max_bandwidth=bw_hi, min_lossrate=loss_lo, max_lossrate=loss_hi,
    )
