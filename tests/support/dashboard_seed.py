"""Seed data for the dashboard tests: a small measured topology, the Online Boutique AppGroup and
placements, all written through the real services (no fixtures of our own components)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BOUTIQUE = ROOT / "scenarios" / "online-boutique-appgroup.yaml"

# Zone A (a1, a2), zone B (b1), zone FAR (f1); a2 -> f1 is left out so it is inferred.
LATENCY = {
    "a1": {"a2": 0.5, "b1": 2.0, "f1": 20.0},
    "a2": {"a1": 0.5, "b1": 2.2},
    "b1": {"a1": 2.0, "a2": 2.2, "f1": 21.0},
    "f1": {"a1": 20.0, "a2": 20.5, "b1": 21.0},
}
TOPOLOGY = {
    "apiVersion": "netaware.io/v1alpha1",
    "kind": "NetworkTopology",
    "metadata": {"name": "dashboard-test"},
    "spec": {
        "zones": [
            {"name": "A", "region": "lab", "nodes": ["a1", "a2"]},
            {"name": "B", "region": "lab", "nodes": ["b1"]},
            {"name": "FAR", "region": "lab", "nodes": ["f1"]},
        ],
        "latency": LATENCY,
        "bandwidth": {s: {d: (1000.0 if v < 1 else 300.0 if v < 5 else 20.0) for d, v in row.items()}
                      for s, row in LATENCY.items()},
        "lossrate": {s: {d: (0.0 if v < 5 else 3.0) for d, v in row.items()} for s, row in LATENCY.items()},
    },
}


def seed_topology():
    from apps.topology import services

    return services.import_topology(document=TOPOLOGY)


def boutique_document() -> dict:
    return yaml.safe_load(BOUTIQUE.read_text())


def seed_boutique():
    from apps.appgroups import services

    return services.import_document(document=boutique_document())


def place(workload: str, node: str, *, pod: str | None = None):
    """Record a placement for a pod of ``workload`` (labelled like upstream's manifests) on ``node``."""
    from apps.appgroups import services
    from tests.support.scoring_fixtures import UPSTREAM_APP_LABELS

    return services.record_placement(
        pod_namespace="default", pod_name=pod or f"{workload}-0", pod_uid="", node_name=node,
        labels={"app": UPSTREAM_APP_LABELS.get(workload, workload)}, source="extender",
    )


def seed_measured_topology_with_stale_pair():
    """A measured snapshot (through the real derivation) where a1 -> b1 was last measured an hour
    ago: that pair is stale (dropped, then inferred from the zone median)."""
    import time

    import numpy as np

    from apps.topology import services
    from apps.topology.topomath import NodeMeta, PairArrays, derive_topology

    metas = [NodeMeta("a1", "A", "lab"), NodeMeta("a2", "A", "lab"), NodeMeta("b1", "B", "lab"),
             NodeMeta("f1", "FAR", "lab")]
    now = time.time()
    src, dst, val, ts = [], [], [], []
    for s, row in LATENCY.items():
        for d, v in row.items():
            src.append(s)
            dst.append(d)
            val.append(v)
            ts.append(now - 3600 if (s, d) == ("a1", "b1") else now - 10)
    pairs = PairArrays.from_series(nodes=[m.name for m in metas],
                                   latency=(src, dst, np.asarray(val, dtype=float), np.asarray(ts, dtype=float)))
    topology = derive_topology(nodes=metas, pairs=pairs, now=now, stale_after_s=600)
    for meta in metas:
        services.upsert_node(name=meta.name, zone=meta.zone, region=meta.region, source="metrics")
    return services.store_topology(topology=topology, source="measured")


# Seven nodes in three zones for the triage views: RTT quantiles, loss and bandwidth stored as
# samples through the probes service, the snapshot derived from them by the real derivation.
TRIAGE_ZONES = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "f1": "FAR", "f2": "FAR"}


def triage_rtt_ms(source: str, target: str) -> float:
    """A spread of p90 RTTs: sub-ms within a zone, a few ms A<->B, 20-40 ms to FAR (all different)."""
    zs, zt = TRIAGE_ZONES[source], TRIAGE_ZONES[target]
    names = sorted(TRIAGE_ZONES)
    jitter = (names.index(source) * 7 + names.index(target) * 3) % 11 / 10
    if zs == zt:
        return 0.3 + jitter / 10
    if "FAR" in (zs, zt):
        return 20.0 + 2 * jitter * 10 * (1 if "f2" in (source, target) else 0.5)
    return 2.0 + jitter


def seed_triage(*, bandwidth_pairs: int = 10):
    """Samples of every series for every pair (bandwidth only for the first ``bandwidth_pairs``
    pairs: the rest are inferred for bandwidth, and so flagged inferred in the snapshot), and a
    snapshot with p90 latency derived from them. Returns (snapshot, pairs)."""
    import time
    from datetime import UTC, datetime

    import numpy as np

    from apps.probes import services as probes
    from apps.topology import services
    from apps.topology.topomath import NodeMeta, PairArrays, derive_topology

    now = time.time()
    ts = datetime.fromtimestamp(int(now) - 5, tz=UTC)
    pairs = [(s, d) for s in TRIAGE_ZONES for d in TRIAGE_ZONES if s != d]
    src, dst = [p[0] for p in pairs], [p[1] for p in pairs]
    p90 = np.asarray([triage_rtt_ms(s, d) for s, d in pairs])
    loss = np.asarray([(0.04 if "f2" in p else 0.01 if "f1" in p else 0.0) for p in pairs])
    bandwidth = np.asarray([1e9 / (1 + v) for v in p90])
    probes.ensure_partitions(start=ts)
    for series, values in (("rtt_p50", p90 * 0.6), ("rtt_p90", p90), ("rtt_p99", p90 * 1.8), ("loss_ratio", loss)):
        probes.store_pair_points(ts=ts, series=series, sources=src, targets=dst, values=values / 1000 if series.startswith("rtt") else values,
                                 unit_interval=series == "loss_ratio")
    k = bandwidth_pairs
    probes.store_pair_points(ts=ts, series="bandwidth_bps", sources=src[:k], targets=dst[:k], values=bandwidth[:k])
    metas = [NodeMeta(name, zone, "lab") for name, zone in TRIAGE_ZONES.items()]
    at = np.full(len(pairs), ts.timestamp())
    arrays = PairArrays.from_series(nodes=list(TRIAGE_ZONES), latency=(src, dst, p90, at),
                                    loss=(src, dst, loss * 100, at),
                                    bandwidth=(src[:k], dst[:k], bandwidth[:k] / 1e6, at[:k]))
    topology = derive_topology(nodes=metas, pairs=arrays, now=now, stale_after_s=600)
    for meta in metas:
        services.upsert_node(name=meta.name, zone=meta.zone, region=meta.region, source="metrics")
    return services.store_topology(topology=topology, source="measured", data_until=ts), pairs


# (caller, callee, requests/s, p99 seconds): fast, medium, slow and unknown latency.
OBSERVED_EDGES = [("frontend", "cartservice", 8.0, 0.02), ("cartservice", "redis-cart", 4.0, 0.1),
                  ("frontend", "adservice", 2.0, 0.4), ("frontend", "newservice", 1.0, float("nan"))]


def seed_observed(namespace: str = "default"):
    """Learned edge states of a small application (entry point ``frontend``) and its observed AppGroup,
    through the traffic services."""
    from django.utils import timezone

    from apps.traffic import services
    from apps.traffic.edges import Edge
    from apps.traffic.learning import EdgeState

    now = timezone.now().timestamp()
    states = {}
    for src, dst, rps, p99 in OBSERVED_EDGES:
        edge = Edge(namespace, src, namespace, dst)
        states[edge] = EdgeState(edge, "istio", rps, 0.01, 400 * rps, 1500 * rps, 0.004, p99, now - 600, now)
    services.save_states(states)
    return services.refresh_observed(states=states, at=timezone.now())
