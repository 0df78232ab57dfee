"""Placement quality of one final placement: the paper's network scores, zones, modelled latency.

Network score (the paper "Network Aware Scheduler for Kubernetes", section 7.2), made precise: a workload's score is the mean, over its pods,
of Algorithm 2 (the extender's own network Score, 0..100, slips fixed) at the pod's node given the
*final* placement of every pod; the average network score is the importance-weighted mean of the
workload scores, the total network score their plain sum. A workload with no dependency and no
dependent has no score (Algorithm 2 divides by zero) and is left out of both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from apps.appgroups.graph import AppGroupSpec
from apps.scheduler.scoring.state import ClusterState
from apps.topology.topomath import Topology

from .adapter import network_scores_at


@dataclass(frozen=True)
class NetworkMetrics:
    average: float  # importance-weighted mean of the workload scores (0..100)
    total: float  # sum of the workload scores
    per_workload: Mapping[str, float]  # "workload" (or "group/workload" with several groups) -> 0..100
    worst_workload: str
    worst_score: float


def workload_key(group: AppGroupSpec, workload: str, several: bool) -> str:
    return f"{group.namespace}/{group.name}/{workload}" if several else workload


def network_metrics(state: ClusterState, groups: Sequence[AppGroupSpec]) -> NetworkMetrics:
    several = len(groups) > 1
    scores: dict[str, float] = {}
    weights: dict[str, float] = {}
    for group in groups:
        for workload in group.workloads:
            nodes = state.placements.get((group.namespace, group.name, workload.name), ())
            if not nodes:
                continue
            values = network_scores_at(state, group, workload.name, nodes)
            if values is None:
                continue
            key = workload_key(group, workload.name, several)
            scores[key] = float(np.mean(values))
            weights[key] = workload.weight
    if not scores:
        return NetworkMetrics(float("nan"), 0.0, {}, "", float("nan"))
    total_weight = sum(weights.values())
    average = (sum(weights[k] * scores[k] for k in scores) / total_weight if total_weight > 0
               else float(np.mean(list(scores.values()))))
    worst = min(scores, key=lambda k: (scores[k], k))
    return NetworkMetrics(average, float(sum(scores.values())), scores, worst, scores[worst])


def pods_per_zone(state: ClusterState, zones: Sequence[str]) -> dict[str, int]:
    counts = {zone: 0 for zone in zones}
    for nodes in state.placements.values():
        for node in nodes:
            zone = state.nodes[node].zone if node in state.nodes else ""
            counts[zone] = counts.get(zone, 0) + 1
    return counts


# --------------------------------------------------------------------------- routing

# How a Service spreads a caller's requests over the callee's pods: uniformly (kube-proxy's default), or
# ``prefer-close``: to the callee's pods in the caller's zone when there are any (Kubernetes'
# ``trafficDistribution: PreferClose`` / topology-aware routing), else uniformly.
ROUTINGS = ("uniform", "prefer-close")


def pair_weights(state: ClusterState, src: Sequence[str], dst: Sequence[str], routing: str = "uniform") -> np.ndarray:
    """Share of a call's requests on each (caller pod, callee pod) pair (len(src), len(dst)), summing to 1."""
    if routing not in ROUTINGS:
        raise ValueError(f"routing: must be one of {', '.join(ROUTINGS)}, got {routing!r}")
    ns, nd = len(src), len(dst)
    weights = np.full((ns, nd), 1.0 / max(ns * nd, 1))
    if routing == "prefer-close" and ns and nd:
        def zone(node: str) -> str:
            res = state.nodes.get(node)
            return res.zone if res is not None else ""

        dz = np.array([zone(b) for b in dst], dtype=object)
        for i, a in enumerate(src):
            same = (dz == zone(a)) & (dz != "")
            if same.any():
                weights[i] = np.where(same, 1.0 / (ns * int(same.sum())), 0.0)
    return weights


# --------------------------------------------------------------------------- latency model


@dataclass(frozen=True)
class LatencyModel:
    """Expected time of one request through the AppGroup's call graph (see docs/evaluation.md).

    One call u -> v costs ``RTT + transfer + retransmissions``: the link's RTT (latency_ms), the
    nominal payload (request + response) at the link's bandwidth, and for each of the call's
    packets the loss probability times the retransmission timeout (TCP_RTO_MIN 200 ms: RPC
    messages are too short for fast retransmit). Pods on the same node talk over loopback.
    A workload's time is the slowest of its dependency calls, each followed by the callee's own
    time (calls fan out in parallel), so a request's latency is the critical path from the root
    workloads (those nobody depends on). With replicas, a call's cost is averaged over the
    (caller pod, callee pod) pairs its requests take (``pair_weights``: uniformly, or PreferClose).
    """

    payload_bytes: int = 4 * 1024
    mss_bytes: int = 1448
    rto_ms: float = 200.0
    loopback_rtt_ms: float = 0.05
    loopback_bandwidth_mbps: float = 10_000.0
    # Used for a pair the topology knows nothing about.
    unknown_rtt_ms: float = 100.0
    unknown_bandwidth_mbps: float = 1.0
    unknown_loss_pct: float = 10.0

    def call_ms_matrix(self, topology: Topology) -> np.ndarray:
        lat = np.where(np.isnan(topology.latency_ms), self.unknown_rtt_ms, topology.latency_ms)
        bw = np.where(np.isnan(topology.bandwidth_mbps), self.unknown_bandwidth_mbps, topology.bandwidth_mbps)
        loss = np.where(np.isnan(topology.loss_pct), self.unknown_loss_pct, topology.loss_pct) / 100.0
        n = topology.size
        diag = np.eye(n, dtype=bool)
        lat = np.where(diag, self.loopback_rtt_ms, lat)
        bw = np.where(diag, self.loopback_bandwidth_mbps, bw)
        loss = np.where(diag, 0.0, loss)
        packets = math.ceil(self.payload_bytes / self.mss_bytes) + 1  # + the request's own packet
        transfer_ms = self.payload_bytes * 8 / (bw * 1e6) * 1e3
        return lat + transfer_ms + packets * loss * self.rto_ms


def request_latency_ms(state: ClusterState, groups: Sequence[AppGroupSpec], call_ms: np.ndarray,
                       routing: str = "uniform") -> float:
    """Critical-path latency of one request (max over AppGroups and their root workloads)."""
    index = state.topology.index
    worst = 0.0
    for group in groups:
        memo: dict[str, float] = {}

        def nodes_of(workload: str, group: AppGroupSpec = group) -> list[str]:
            return [n for n in state.placements.get((group.namespace, group.name, workload), ()) if n in index]

        def time_of(workload: str, stack: tuple[str, ...] = (), group: AppGroupSpec = group,
                    memo: dict[str, float] = memo) -> float:
            if workload in memo:
                return memo[workload]
            if workload in stack:  # a cycle: do not recurse forever
                return 0.0
            src = nodes_of(workload)
            slowest = 0.0
            for dep in group.workload(workload).dependencies:
                dst = nodes_of(dep.target)
                if not src or not dst:
                    continue
                cost = call_ms[np.ix_([index[n] for n in src], [index[n] for n in dst])]
                call = float((cost * pair_weights(state, src, dst, routing)).sum())
                slowest = max(slowest, call + time_of(dep.target, (*stack, workload)))
            memo[workload] = slowest
            return slowest

        targets = {dep.target for w in group.workloads for dep in w.dependencies}
        roots = [w.name for w in group.workloads if w.name not in targets] or [group.workloads[0].name]
        for root in roots:
            worst = max(worst, time_of(root))
    return worst


# --------------------------------------------------------------------------- transfer cost


@dataclass(frozen=True)
class TransferModel:
    """What one user request's calls cost in cross-zone and cross-region traffic (docs/evaluation.md).

    Every dependency is called once per request with ``bytes_per_call`` (request + response); with
    replicas the bytes split over the (caller pod, callee pod) pairs as requests do (``pair_weights``).
    Bytes between two zones, or two regions, are billed per GB at the given prices. Defaults are
    *examples* of public-cloud list prices (AWS: data transfer between availability zones $0.01/GB in
    each direction, so $0.02/GB for a call's bytes; between regions from $0.02/GB) — set your own.
    """

    bytes_per_call: int = 4 * 1024
    cross_zone_usd_per_gb: float = 0.02
    cross_region_usd_per_gb: float = 0.02
    requests: int = 1_000_000  # costs are reported per this many requests


@dataclass(frozen=True)
class TransferCost:
    cross_zone_gb: float
    cross_region_gb: float
    usd: float


def transfer_cost(state: ClusterState, groups: Sequence[AppGroupSpec], model: TransferModel,
                  routing: str = "uniform") -> TransferCost:
    """Cross-zone and cross-region GB (and USD) per ``model.requests`` requests of the placement."""
    zone_gb = region_gb = 0.0
    gb_per_call = model.bytes_per_call * model.requests / 1e9
    for group in groups:
        for workload in group.workloads:
            src = state.placements.get((group.namespace, group.name, workload.name), ())
            if not src:
                continue
            for dep in workload.dependencies:
                dst = state.placements.get((group.namespace, group.name, dep.target), ())
                if not dst:
                    continue
                share = pair_weights(state, src, dst, routing)
                cross_zone = cross_region = 0.0
                for i, a in enumerate(src):
                    na = state.nodes.get(a)
                    for j, b in enumerate(dst):
                        nb = state.nodes.get(b)
                        if na is None or nb is None:
                            continue
                        if na.region != nb.region:
                            cross_region += share[i, j]
                        elif na.zone != nb.zone:
                            cross_zone += share[i, j]
                zone_gb += gb_per_call * cross_zone
                region_gb += gb_per_call * cross_region
    usd = zone_gb * model.cross_zone_usd_per_gb + region_gb * model.cross_region_usd_per_gb
    return TransferCost(zone_gb, region_gb, usd)
