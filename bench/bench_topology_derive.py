"""Benchmark: derive the NetworkTopology of 1,000 nodes (issue 2: <= 2 s and <= 1 GiB RSS).

10 regions x 10 zones x 10 nodes; 70 % of the 999,000 directed pairs measured (fresh), 2 % of
those stale, the rest filled from zone-/region-pair medians; Dijkstra costs over 100 zones and
10 regions. Prints a markdown table: median wall time of the runs and peak RSS of the process.

Run: ``.venv/bin/python bench/bench_topology_derive.py [--runs 7] [--nodes-per-zone 10]``

``--storage-nodes 5000`` instead measures snapshot storage through the real services and database
(DATABASE_URL; its snapshots are deleted): store and load of a synthetic 5,000-node topology, each in
a fresh subprocess (time and VmHWM from /proc/self/status), format 2 (binary parameters, slices) vs
format 1 (np.savez through the ORM, the code before 2026-11-22).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from apps.topology.topomath import Topology

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


def snapshot_round_trip(topology: Topology) -> tuple[float, float, float]:
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


# --- snapshot storage at scale ----------------------------------------------------------------


def proc_status_mib(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024.0
    raise KeyError(key)


def synthetic_topology(n: int, per_zone: int = 100, seed: int = 7) -> Topology:
    """Like a derived topology: 70 % measured (zone-/region-based value with noise), the rest
    inferred (exactly the base value), 2 % stale."""
    from apps.topology.topomath import Topology

    rng = np.random.default_rng(seed)
    zone = np.arange(n) // per_zone
    region = zone // 10
    lat = np.empty((n, n))
    for i in range(0, n, 500):  # in row blocks: keeps the generator's temporaries small
        zi, ri = zone[i:i + 500, None], region[i:i + 500, None]
        lat[i:i + 500] = np.where(zi == zone[None, :], 0.5, np.where(ri == region[None, :], 2.0, 40.0))
    inferred = rng.random((n, n), dtype=np.float32) < 0.3
    noise = rng.lognormal(0.0, 0.1, (n, n)).astype(np.float32)
    bw = 1000.0 / lat
    loss = lat / 10.0
    lat *= np.where(inferred, 1.0, noise)
    bw *= np.where(inferred, 1.0, noise)
    del noise
    np.round(lat, 4, out=lat)
    np.round(bw, 4, out=bw)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(loss, 0.0)
    np.fill_diagonal(bw, np.nan)
    np.fill_diagonal(inferred, False)
    stale = rng.random((n, n), dtype=np.float32) < 0.02
    names = tuple(f"node-{i:05d}" for i in range(n))
    return Topology(nodes=names, zones=tuple(f"z{z}" for z in zone), regions=tuple(f"r{r}" for r in region),
                    latency_ms=lat, bandwidth_mbps=bw, loss_pct=loss, inferred=inferred, stale=stale,
                    min_latency=0.4, max_latency=60.0, min_bandwidth=10.0, max_bandwidth=3000.0,
                    min_lossrate=0.05, max_lossrate=4.0)


def legacy_payload(topology: Topology) -> bytes:  # storage format 1, as written before 2026-11-22
    buffer = io.BytesIO()
    np.savez(buffer, nodes=np.asarray(topology.nodes, dtype=str), zones=np.asarray(topology.zones, dtype=str),
             regions=np.asarray(topology.regions, dtype=str),
             latency_ms=topology.latency_ms.astype(np.float32),
             bandwidth_mbps=topology.bandwidth_mbps.astype(np.float32),
             loss_pct=topology.loss_pct.astype(np.float32),
             inferred=np.packbits(topology.inferred, axis=None), stale=np.packbits(topology.stale, axis=None))
    return buffer.getvalue()


def storage_child(mode: str, n: int) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
    import django

    django.setup()
    import psycopg
    from django.db import connection, transaction

    from apps.topology import selectors, services
    from apps.topology.models import TopologySnapshot, _decode_legacy

    out: dict = {"mode": mode}
    if mode.startswith("store"):
        topology: Any = synthetic_topology(n)  # later the loaded topology, or format 1's arrays
        out["rss_before_mib"] = proc_status_mib("VmRSS")
        start = time.perf_counter()
        if mode == "store":
            snapshot = services.store_topology(topology=topology, source="imported")
        else:  # format 1 through the ORM (client-side binding: hex text in the SQL)
            blob = legacy_payload(topology)
            out["payload_mib"] = len(blob) / 2**20
            version = (TopologySnapshot.objects.order_by("-version").values_list("version", flat=True).first() or 0) + 1
            try:
                with transaction.atomic():
                    TopologySnapshot(version=version, source="imported", node_count=n, payload=blob).save()
                out["error"] = ""
            except Exception as exc:  # the failure is the measurement
                out["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:90]}"
            out["seconds"] = time.perf_counter() - start
            out["hwm_mib"] = proc_status_mib("VmHWM")
            if not out["error"]:
                return out
            # Store it anyway (binary parameter) so the format-1 load can be measured.
            snapshot = TopologySnapshot.objects.create(version=version, source="imported", node_count=n, payload=b"")
            connection.ensure_connection()
            with psycopg.Cursor(connection.connection) as cursor:
                cursor.execute("UPDATE topology_topologysnapshot SET payload = %b WHERE id = %s", [blob, snapshot.pk])
            return out
        out["seconds"] = time.perf_counter() - start
        out["hwm_mib"] = proc_status_mib("VmHWM")
        with connection.cursor() as cursor:
            cursor.execute("SELECT octet_length(payload) FROM topology_topologysnapshot WHERE id = %s", [snapshot.pk])
            out["payload_mib"] = cursor.fetchone()[0] / 2**20
        return out
    # load: a fresh worker process after Django set-up and the scorers' imports
    import apps.scheduler.scoring.engine  # noqa: F401

    connection.ensure_connection()
    out["rss_before_mib"] = proc_status_mib("VmRSS")
    start = time.perf_counter()
    if mode == "load":
        topology = selectors.current_topology()
    else:  # format 1: the ORM reads the bytea as hex text, then np.load copies and widens
        row = TopologySnapshot.objects.order_by("-version").first()
        legacy = _decode_legacy(bytes(row.payload))  # type: ignore[union-attr]  # the child seeded one
        del row
        topology = legacy
    out["seconds"] = time.perf_counter() - start
    out["hwm_mib"] = proc_status_mib("VmHWM")
    out["rss_after_mib"] = proc_status_mib("VmRSS")
    del topology
    return out


def run_child(mode: str, n: int) -> dict:
    result = subprocess.run([sys.executable, __file__, "--storage-child", mode, "--storage-nodes", str(n)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def storage_main(n: int, runs: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
    import zlib

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from apps.topology.models import TopologySnapshot
    from apps.topology.snapshot_format import encode_snapshot

    TopologySnapshot.objects.all().delete()
    old_store = run_child("store-old", n)
    old_loads = [run_child("load-old", n) for _ in range(runs)]
    new_stores = [run_child("store", n) for _ in range(runs)]
    new_loads = [run_child("load", n) for _ in range(runs)]
    topology = synthetic_topology(n)
    blob = encode_snapshot(topology)
    start = time.perf_counter()
    packed = zlib.compress(blob, 1)
    zlib_s = time.perf_counter() - start
    start = time.perf_counter()
    zlib.decompress(packed)
    unzlib_s = time.perf_counter() - start
    TopologySnapshot.objects.all().delete()

    def med(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    def top(rows: list[dict], key: str) -> float:
        return max(r[key] for r in rows)

    print(f"### Snapshot storage at {n:,} nodes ({n * n:,} pairs)\n")
    print(f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
          f"PostgreSQL on localhost; every figure from a fresh subprocess; {runs} runs, medians (peak: max).\n")
    print("| measure | format 1 (before: np.savez via the ORM) | format 2 (after: binary, slices) | ratio |")
    print("|---|---|---|---|")
    print(f"| payload size | {old_store['payload_mib']:.1f} MiB | {med(new_stores, 'payload_mib'):.1f} MiB | "
          f"{med(new_stores, 'payload_mib') / old_store['payload_mib']:.2f} |")
    old_cell = (f"fails after {old_store['seconds']:.1f} s: {old_store['error']}" if old_store["error"]
                else f"{old_store['seconds']:.2f} s")
    print(f"| store (services) | {old_cell} | "
          f"{med(new_stores, 'seconds'):.2f} s | |")
    print(f"| store peak RSS (the topology alone: {med(new_stores, 'rss_before_mib'):.0f} MiB) | "
          f"{old_store['hwm_mib']:.0f} MiB | {top(new_stores, 'hwm_mib'):.0f} MiB | "
          f"{top(new_stores, 'hwm_mib') / old_store['hwm_mib']:.2f} |")
    print(f"| load (current_topology) wall time | {med(old_loads, 'seconds'):.2f} s | "
          f"{med(new_loads, 'seconds'):.2f} s | {med(new_loads, 'seconds') / med(old_loads, 'seconds'):.2f} |")
    print(f"| load peak RSS, VmHWM (worker before loading: {med(new_loads, 'rss_before_mib'):.0f} MiB) | "
          f"{top(old_loads, 'hwm_mib'):.0f} MiB | {top(new_loads, 'hwm_mib'):.0f} MiB (target <= 1024) | "
          f"{top(new_loads, 'hwm_mib') / top(old_loads, 'hwm_mib'):.2f} |")
    print(f"| RSS after loading (arrays held) | {med(old_loads, 'rss_after_mib'):.0f} MiB | "
          f"{med(new_loads, 'rss_after_mib'):.0f} MiB | |")
    print(f"| zlib level 1 on the format-2 payload (not used) | | {len(packed) / 2**20:.1f} MiB "
          f"({len(packed) / len(blob):.2f}×), {zlib_s:.2f} s to compress, {unzlib_s:.2f} s to decompress | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--storage-nodes", type=int, default=0, help="measure snapshot storage at this size")
    parser.add_argument("--storage-child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--regions", type=int, default=10)
    parser.add_argument("--zones", type=int, default=10, help="zones per region")
    parser.add_argument("--nodes-per-zone", type=int, default=10)
    parser.add_argument("--measured", type=float, default=0.7)
    args = parser.parse_args()
    if args.storage_child:
        print(json.dumps(storage_child(args.storage_child, args.storage_nodes)))
        return
    if args.storage_nodes:
        storage_main(args.storage_nodes, max(1, min(args.runs, 3)))
        return

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
    print(f"| snapshot payload encode / decode (format-2 blob of {blob_mib:.1f} MiB) | "
          f"{encode_s:.3f} s / {decode_s:.3f} s | |")
    print(f"| extrema latency ms | {maps['minLatency']} .. {maps['maxLatency']} | |")


if __name__ == "__main__":
    main()
