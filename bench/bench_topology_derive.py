"""Benchmark: derive the NetworkTopology of 1,000 nodes (issue 2: <= 2 s and <= 1 GiB RSS).

10 regions x 10 zones x 10 nodes; 70 % of the 999,000 directed pairs measured (fresh), 2 % of
those stale, the rest filled from zone-/region-pair medians; Dijkstra costs over 100 zones and
10 regions. Prints a markdown table: median wall time of the runs and peak RSS of the process.

Run: ``.venv/bin/python bench/bench_topology_derive.py [--runs 7] [--nodes-per-zone 10]``
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apps.topology.topomath import NodeMeta, PairArrays, derive_topology, nested_maps


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def build_input(regions: int, zones: int, per_zone: int, measured_share: float, seed: int = 7
                ) -> tuple[list[NodeMeta], PairArrays, float]:
    rng = np.random.default_rng(seed)
    nodes = [
        NodeMeta(name=f"r{r}-z{z}-n{k}", zone=f"r{r}-z{z}", region=f"r{r}")
        for r in range(regions) for z in range(zones) for k in range(per_zone)
    ]
    n = len(nodes)
    src, tgt = np.nonzero(~np.eye(n, dtype=bool))
    keep = rng.random(src.size) < measured_share
    src, tgt = src[keep], tgt[keep]
    zone = np.repeat(np.arange(regions * zones), per_zone)
    region = np.repeat(np.arange(regions), zones * per_zone)
    base = np.where(zone[src] == zone[tgt], 0.5, np.where(region[src] == region[tgt], 2.0, 40.0))
    now = 1_800_000_000.0
    ts = np.full(src.size, now - 30.0)
    ts[rng.random(src.size) < 0.02] = now - 3600.0  # stale
    pairs = PairArrays(
        source=src, target=tgt,
        latency_ms=base * rng.lognormal(0.0, 0.1, src.size),
        bandwidth_mbps=1000.0 / base * rng.lognormal(0.0, 0.1, src.size),
        loss_pct=np.clip(base / 10.0 * rng.random(src.size), 0, 100),
        latency_ts=ts, bandwidth_ts=ts, loss_ts=ts,
    )
    return nodes, pairs, now


def snapshot_round_trip(topology) -> tuple[float, float, float]:
    """Encode/decode the stored payload (no database round trip: that is one bytea row)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
    import django

    django.setup()
    from apps.topology.models import TopologySnapshot

    start = time.perf_counter()
    blob = TopologySnapshot.encode_payload(topology)
    encode_s = time.perf_counter() - start
    row = TopologySnapshot(version=1, payload=blob)
    start = time.perf_counter()
    loaded = row.to_topology()
    decode_s = time.perf_counter() - start
    assert loaded.size == topology.size
    return encode_s, decode_s, len(blob) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--regions", type=int, default=10)
    parser.add_argument("--zones", type=int, default=10, help="zones per region")
    parser.add_argument("--nodes-per-zone", type=int, default=10)
    parser.add_argument("--measured", type=float, default=0.7)
    args = parser.parse_args()

    nodes, pairs, now = build_input(args.regions, args.zones, args.nodes_per_zone, args.measured)
    rss_inputs = peak_rss_mib()
    times = []
    topology = None
    for _ in range(args.runs):
        start = time.perf_counter()
        topology = derive_topology(nodes=nodes, pairs=pairs, now=now, stale_after_s=600.0)
        times.append(time.perf_counter() - start)
    assert topology is not None
    start = time.perf_counter()
    maps = nested_maps(topology)
    nested_s = time.perf_counter() - start
    encode_s, decode_s, blob_mib = snapshot_round_trip(topology)
    rss_peak = peak_rss_mib()
    n = len(nodes)
    inferred = int(topology.inferred.sum())
    stale = int(topology.stale.sum())
    print(f"### Topology derivation ({n} nodes, {n * (n - 1):,} directed pairs)\n")
    print(f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}; {args.runs} runs.\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| derive_topology median wall time | {statistics.median(times):.3f} s "
          f"(min {min(times):.3f}, max {max(times):.3f}) | <= 2 s |")
    print(f"| ratio to target | {statistics.median(times) / 2.0:.2f} | <= 1 |")
    print(f"| peak RSS of the process (inputs alone: {rss_inputs:.0f} MiB) | {rss_peak:.0f} MiB | <= 1024 MiB |")
    print(f"| measured / inferred / stale pairs | {int(topology.measured.sum()):,} / {inferred:,} / {stale:,} | |")
    print(f"| zone costs / region costs | {len(topology.zone_costs)} / {len(topology.region_costs)} | |")
    print(f"| nested_maps (API shape) wall time | {nested_s:.3f} s | |")
    print(f"| snapshot payload encode / decode (np.savez blob of {blob_mib:.1f} MiB) | "
          f"{encode_s:.3f} s / {decode_s:.3f} s | |")
    print(f"| extrema latency ms | {maps['minLatency']} .. {maps['maxLatency']} | |")


if __name__ == "__main__":
    main()
