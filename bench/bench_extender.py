#!/usr/bin/env python
"""Extender latency and throughput through the production server (gunicorn) over loopback.

Seeds a dedicated database (default ``netaware_bench``; refuses any database whose name lacks
"bench") with a 5,000-node cluster (5 regions × 10 zones × 100 nodes, dense synthetic topology),
the Online Boutique AppGroup (11 workloads) and 200 placed pods, starts
``gunicorn netaware_site.wsgi -w 2 --threads 1`` on a free 127.0.0.1 port and measures, with
request bodies shaped as kube-scheduler sends them:

* 500 candidate NodeNames: filter + prioritize back to back, p50/p99 (targets 2 ms / 5 ms);
* sustained requests/s with ``wrk`` (Debian package; separate process, Lua body) or, without
  wrk, a multi-process Python client (target ≥ 500/s on 2 cores);
* 5,000 candidate NodeNames prioritize p99 (≤ 10 ms);
* 500 full Node objects (nodeCacheCapable false) filter and prioritize p99 (≤ 50 ms);
* RSS per worker with the 5,000-node topology loaded (≤ 1 GiB).

Before/after in the same run: unless ``--no-compare``, a second gunicorn configured as before the
extender's latency work (``NETAWARE_LEAN_EXTENDER=false``: every call through Django's middleware
and URL resolver; ``NETAWARE_STATE_VERSION_CHECK_SECONDS=0``: one Redis version read per request)
is measured in alternating blocks with the tuned one, so both see the same machine load.

Prints a markdown table. ``--quick`` uses fewer samples.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/netaware_bench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
os.environ["DEBUG"] = "false"  # DEBUG keeps every SQL query in memory

import numpy as np  # noqa: E402
import orjson  # noqa: E402

NAMESPACE = "bench"


def ensure_database() -> None:
    import dj_database_url
    import psycopg

    cfg = dj_database_url.parse(os.environ["DATABASE_URL"])
    name = cfg["NAME"]
    if "bench" not in name:
        sys.exit(f"refusing to wipe database {name!r}: its name must contain 'bench'")
    conninfo = f"host={cfg['HOST'] or '127.0.0.1'} port={cfg['PORT'] or 5432} user={cfg['USER'] or 'postgres'} dbname=postgres"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def synthetic_topology(n_regions: int, zones_per_region: int, nodes_per_zone: int, rng: np.random.Generator):
    from apps.topology.topomath import Topology

    n_zones = n_regions * zones_per_region
    n = n_zones * nodes_per_zone
    zone_of = np.repeat(np.arange(n_zones), nodes_per_zone)
    region_of_zone = np.arange(n_zones) // zones_per_region
    zl = np.empty((n_zones, n_zones))
    zb = np.empty((n_zones, n_zones))
    for a in range(n_zones):
        for b in range(n_zones):
            if a == b:
                zl[a, b], zb[a, b] = 0.3, 10000.0
            elif region_of_zone[a] == region_of_zone[b]:
                zl[a, b], zb[a, b] = 1.0 + 4.0 * rng.random(), 1000.0 + 4000.0 * rng.random()
            else:
                zl[a, b], zb[a, b] = 20.0 + 60.0 * rng.random(), 100.0 + 400.0 * rng.random()
    zl = (zl + zl.T) / 2
    zb = (zb + zb.T) / 2
    noise = (0.9 + 0.2 * rng.random((n, n), dtype=np.float32)).astype(np.float64)
    latency = zl[zone_of[:, None], zone_of[None, :]] * noise
    bandwidth = zb[zone_of[:, None], zone_of[None, :]] / noise
    del noise
    loss = (rng.random((n, n), dtype=np.float32) * 0.5).astype(np.float64)
    diag = np.arange(n)
    latency[diag, diag] = 0.0
    bandwidth[diag, diag] = np.nan
    loss[diag, diag] = np.nan
    off = ~np.eye(n, dtype=bool)
    zone_names = [f"r{r}-z{z}" for r in range(n_regions) for z in range(zones_per_region)]
    region_names = [f"r{r}" for r in range(n_regions)]
    zone_costs = {
        (zone_names[a], zone_names[b]): round(float(zl[a, b]), 3)
        for a in range(n_zones) for b in range(n_zones)
        if a != b and region_of_zone[a] == region_of_zone[b]
    }
    region_costs = {}
    for ra in range(n_regions):
        for rb in range(n_regions):
            if ra != rb:
                za, zb_ = ra * zones_per_region, rb * zones_per_region
                region_costs[(region_names[ra], region_names[rb])] = round(float(zl[za, zb_]), 3)
    names = tuple(f"node-{i:05d}" for i in range(n))
    topology = Topology(
        nodes=names,
        zones=tuple(zone_names[z] for z in zone_of),
        regions=tuple(region_names[region_of_zone[z]] for z in zone_of),
        latency_ms=latency,
        bandwidth_mbps=bandwidth,
        loss_pct=loss,
        inferred=np.zeros((n, n), dtype=bool),
        stale=np.zeros((n, n), dtype=bool),
        min_latency=float(latency[off].min()),
        max_latency=float(latency[off].max()),
        min_bandwidth=float(np.nanmin(bandwidth[off])),
        max_bandwidth=float(np.nanmax(bandwidth[off])),
        min_lossrate=float(np.nanmin(loss[off])),
        max_lossrate=float(np.nanmax(loss[off])),
        zone_costs=zone_costs,
        region_costs=region_costs,
    )
    return topology


def store_large_topology(topology: Any) -> None:
    """Store a snapshot whose payload (~300 MB for 5,000 nodes) is too large for Django's
    client-side (text/hex) parameter binding ("invalid memory alloc request size 1073741824"):
    the row is written by the topology service with an empty payload, then the payload is
    written as a binary parameter."""
    import dj_database_url
    import psycopg

    from apps.topology import services as topology_services
    from apps.topology.models import TopologySnapshot

    payload = TopologySnapshot.encode_payload(topology)
    original = TopologySnapshot.encode_payload
    TopologySnapshot.encode_payload = staticmethod(lambda t: b"")  # type: ignore[method-assign]
    try:
        snapshot = topology_services._store(topology=topology, source="imported", quantile=0.9, data_until=None)
    finally:
        TopologySnapshot.encode_payload = original  # type: ignore[method-assign]
    cfg = dj_database_url.parse(os.environ["DATABASE_URL"])
    conninfo = (f"host={cfg['HOST'] or '127.0.0.1'} port={cfg['PORT'] or 5432} user={cfg['USER'] or 'postgres'} "
                f"dbname={cfg['NAME']}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"UPDATE {TopologySnapshot._meta.db_table} SET payload = %b WHERE id = %s",
                     [payload, snapshot.pk])


def seed(*, n_regions: int, zones_per_region: int, nodes_per_zone: int, placed: int, rng_seed: int) -> list[str]:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from apps.appgroups.models import AppGroup
    from apps.appgroups.services import record_placement, save_appgroup
    from apps.scheduler.models import Decision, ObservedPod
    from apps.topology.models import Node, TopologySnapshot
    from tests.support.extender_wire import BOUTIQUE_EDGES, boutique_spec

    rng = np.random.default_rng(rng_seed)
    Decision.objects.all().delete()
    ObservedPod.objects.all().delete()
    AppGroup.objects.all().delete()
    Node.objects.all().delete()
    TopologySnapshot.objects.all().delete()

    topology = synthetic_topology(n_regions, zones_per_region, nodes_per_zone, rng)
    Node.objects.bulk_create(
        [
            Node(name=name, zone=zone, region=region, source="cluster", ready=True,
                 labels={"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
                         "topology.kubernetes.io/region": region},
                 allocatable_cpu_millicores=8000, allocatable_memory_bytes=32 * 2**30)
            for name, zone, region in zip(topology.nodes, topology.zones, topology.regions, strict=True)
        ],
        batch_size=1000,
    )
    store_large_topology(topology)
    names = list(topology.nodes)
    del topology

    save_appgroup(spec=boutique_spec(NAMESPACE), origin="netaware")
    workloads = list(BOUTIQUE_EDGES)
    pods = []
    for i in range(placed):
        workload = workloads[i % len(workloads)]
        node = names[int(rng.integers(len(names)))]
        name = f"{workload}-{i:04d}"
        record_placement(pod_namespace=NAMESPACE, pod_name=name, pod_uid=f"uid-{i}", node_name=node,
                         labels={"app": workload}, source="watcher")
        pods.append(ObservedPod(namespace=NAMESPACE, name=name, uid=f"uid-{i}", node_name=node, phase="Running",
                                labels={"app": workload}, cpu_request_millicores=100,
                                memory_request_bytes=64 * 2**20))
    ObservedPod.objects.bulk_create(pods)
    from django.db import connection

    connection.close()
    return names


def reuse_seed(args: argparse.Namespace) -> list[str] | None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from apps.appgroups.models import Placement
    from apps.scheduler.models import Decision
    from apps.topology.models import Node, TopologySnapshot

    expected = args.regions * args.zones * args.nodes_per_zone
    if Node.objects.count() != expected or not TopologySnapshot.objects.exists() or Placement.objects.count() != 200:
        return None
    Decision.objects.all().delete()
    return list(Node.objects.order_by("name").values_list("name", flat=True))


# --- server -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(port: int, workers: int, worker_class: str = "sync",
                   extra_env: dict[str, str] | None = None, root: Path | None = None) -> subprocess.Popen:
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    # One BLAS thread per worker (docs/scoring.md): two workers on two cores must not each fan out.
    env = {**os.environ, "DEBUG": "false", "ALLOWED_HOSTS": "*", "LOG_LEVEL": "WARNING",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **(extra_env or {})}
    # The workers' log (errors, tracebacks) goes to a file, named on failure and in the output.
    log_path = Path(tempfile.gettempdir()) / f"bench_extender_gunicorn_{port}.log"
    proc = subprocess.Popen(
        # One request at a time per process (no GIL sharing). sync closes every connection;
        # gthread with one thread keeps connections alive (as kube-scheduler's Go client wants).
        [gunicorn, "netaware_site.wsgi", "-w", str(workers), "-k", worker_class, "--threads", "1",
         "--keep-alive", "30", "-b", f"127.0.0.1:{port}", "--timeout", "300", "--log-level", "warning"],
        cwd=root or ROOT, env=env, start_new_session=True, stdout=log_path.open("ab"), stderr=subprocess.STDOUT,
    )
    print(f"gunicorn on port {port}: log in {log_path}", file=sys.stderr)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"gunicorn did not start (see {log_path})")


def worker_pids(master: int) -> list[int]:
    try:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    except OSError:
        return []
    return [int(p) for p in children]


def rss_mib(pid: int) -> tuple[float, float]:
    text = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) / 1024  # type: ignore[union-attr]
    hwm = int(re.search(r"VmHWM:\s+(\d+)", text).group(1)) / 1024  # type: ignore[union-attr]
    return rss, hwm


_conns: dict[int, http.client.HTTPConnection] = {}


def post(port: int, path: str, body: bytes) -> bytes:
    """POST (the sync worker closes each connection; http.client reconnects as Go's client does)."""
    for attempt in range(2):
        conn = _conns.get(port)
        if conn is None:
            conn = _conns[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            _conns.pop(port, None)
            if attempt:
                raise
            continue
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}: {data[:200]!r}")
        return data
    raise AssertionError("unreachable")


def get_status(port: int, path: str) -> int:
    """A GET on the kept-alive connection (the extender answers 405 without touching any state)."""
    conn = _conns.get(port)
    if conn is None:
        conn = _conns[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    response = conn.getresponse()
    response.read()
    return response.status


def timed_get(port: int, path: str, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        get_status(port, path)
        out.append((time.perf_counter() - started) * 1000.0)
    return out


def timed(port: int, calls: list[tuple[str, bytes]], repeats: int) -> list[float]:
    """Wall time (ms) of the calls made back to back, ``repeats`` times."""
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        for path, body in calls:
            post(port, path, body)
        out.append((time.perf_counter() - started) * 1000.0)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100.0 * (len(ordered) - 1)))]


# --- throughput ---------------------------------------------------------------------------------

LUA = """
local f = io.open(os.getenv("NETAWARE_BENCH_BODY"), "rb")
local body = f:read("*a")
f:close()
local n = 0
request = function()
  n = n + 1
  local path = (n % 2 == 1) and "/scheduler/filter" or "/scheduler/prioritize"
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end
"""


def throughput_wrk(port: int, body: bytes, seconds: int, connections: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(body)
        script = Path(tmp) / "post.lua"
        script.write_text(LUA)
        out = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script),
             f"http://127.0.0.1:{port}"],
            env={**os.environ, "NETAWARE_BENCH_BODY": str(body_file)}, capture_output=True, text=True, check=True,
        ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99_ms = None
    if p99:
        value, unit = float(p99.group(1)), p99.group(2)
        p99_ms = value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
    return {"rps": rps, "non2xx": int(non2xx.group(1)) if non2xx else 0, "p99_ms": p99_ms, "client": "wrk"}


def _py_client(port: int, body: bytes, until: float, counter: Any) -> None:
    _conns.clear()  # forked: never share the parent's sockets
    n = 0
    paths = ("/scheduler/filter", "/scheduler/prioritize")
    while time.monotonic() < until:
        post(port, paths[n % 2], body)
        n += 1
    with counter.get_lock():
        counter.value += n


def throughput_python(port: int, body: bytes, seconds: int, processes: int) -> dict[str, Any]:
    counter = multiprocessing.Value("q", 0)
    until = time.monotonic() + seconds
    procs = [multiprocessing.Process(target=_py_client, args=(port, body, until, counter)) for _ in range(processes)]
    started = time.monotonic()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return {"rps": counter.value / (time.monotonic() - started), "non2xx": 0, "p99_ms": None,
            "client": f"python x{processes}"}


# --- before / after in one run --------------------------------------------------------------------

BASELINE_ENV = {"NETAWARE_LEAN_EXTENDER": "false", "NETAWARE_STATE_VERSION_CHECK_SECONDS": "0"}


def compare_with_baseline(args: argparse.Namespace, port: int, body: bytes, floor: bytes,
                          samples: int) -> dict[str, Any]:
    """The same filter + prioritize pair against a second gunicorn configured as before this
    work (every request through Django's middleware and URL resolver, one Redis version read per
    request), measured in alternating blocks with the tuned server so both see the same load."""
    base_port = free_port()
    base = start_gunicorn(base_port, args.workers, args.worker_class, extra_env=BASELINE_ENV)
    calls = [("/scheduler/filter", body), ("/scheduler/prioritize", body)]
    floor_calls = [("/scheduler/filter", floor), ("/scheduler/prioritize", floor)]
    out: dict[str, list[float]] = {key: [] for key in ("tuned", "baseline", "tuned_floor", "baseline_floor",
                                                       "tuned_get", "baseline_get")}
    try:
        pool = [multiprocessing.Process(target=post, args=(base_port, "/scheduler/prioritize", body))
                for _ in range(args.workers * 3)]
        for p in pool:
            p.start()
        for p in pool:
            p.join()
        for _ in range(50):
            timed(base_port, calls, 1)
        block = 50
        for _ in range(max(1, samples // block)):
            for tag, p in (("tuned", port), ("baseline", base_port)):
                out[tag] += timed(p, calls, block)
                out[f"{tag}_floor"] += timed(p, floor_calls, block // 2)
                out[f"{tag}_get"] += timed_get(p, "/scheduler/filter", block // 2)
    finally:
        os.killpg(base.pid, signal.SIGTERM)
        base.wait(30)
    return out


# --- engine memo on / off (--memo-compare) -------------------------------------------------------

MEMO_OFF_ENV = {"NETAWARE_ENGINE_MEMO": "0"}


def compare_memo(args: argparse.Namespace, port: int, same: bytes, fresh: list[bytes], samples: int
                 ) -> dict[str, list[float]]:
    """Filter + prioritize with the engine's per-pod memo (``port``) against a second gunicorn with
    ``NETAWARE_ENGINE_MEMO=0``, alternating blocks of 50. "new" pairs use a new pod (name and uid)
    every time, so only the filter -> prioritize reuse can help; "same" repeats one pod on an
    unchanged state (kube-scheduler retrying), which the memo answers whole."""
    off_port = free_port()
    root = Path(args.memo_baseline_root).resolve() if args.memo_baseline_root else None
    off = start_gunicorn(off_port, args.workers, args.worker_class, extra_env=MEMO_OFF_ENV, root=root)
    out: dict[str, list[float]] = {key: [] for key in ("on_new", "off_new", "on_same", "off_same")}
    try:
        pool = [multiprocessing.Process(target=post, args=(off_port, "/scheduler/prioritize", same))
                for _ in range(args.workers * 3)]
        for p in pool:
            p.start()
        for p in pool:
            p.join()
        for _ in range(50):
            timed(off_port, [("/scheduler/filter", same), ("/scheduler/prioritize", same)], 1)
        block = 50
        used = 0
        for _ in range(max(1, samples // block)):
            bodies = fresh[used:used + block]
            used += block
            for tag, p in (("on", port), ("off", off_port)):
                for body in bodies:
                    out[f"{tag}_new"] += timed(p, [("/scheduler/filter", body), ("/scheduler/prioritize", body)], 1)
                out[f"{tag}_same"] += timed(p, [("/scheduler/filter", same), ("/scheduler/prioritize", same)], block)
    finally:
        os.killpg(off.pid, signal.SIGTERM)
        off.wait(30)
    return out


def print_memo_compare(out: dict[str, list[float]], load: str, baseline: str) -> None:
    print(f"Engine memo on vs off{baseline} (alternating blocks of 50; load average {load}):\n")
    print("| 500 NodeNames, filter + prioritize | memo off p50 / p99 | memo on p50 / p99 | ratio p50 / p99 | n |")
    print("|---|---:|---:|---:|---:|")
    for key, label in (("new", "new pod every pair"), ("same", "same pod repeated, unchanged state")):
        on, off = out[f"on_{key}"], out[f"off_{key}"]
        print(f"| {label} | {statistics.median(off):.2f} / {pct(off, 99):.2f} ms "
              f"| {statistics.median(on):.2f} / {pct(on, 99):.2f} ms "
              f"| ×{statistics.median(off) / statistics.median(on):.2f} / ×{pct(off, 99) / pct(on, 99):.2f} "
              f"| {len(on)} |")


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=10, help="throughput run length")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--regions", type=int, default=5)
    parser.add_argument("--zones", type=int, default=10, help="zones per region")
    parser.add_argument("--nodes-per-zone", type=int, default=100)
    parser.add_argument("--reuse", action="store_true", help="keep the seeded data of a previous run")
    parser.add_argument("--worker-class", default="gthread", choices=["sync", "gthread"])
    parser.add_argument("--no-compare", action="store_true",
                        help="skip the baseline server (everything through Django, Redis version read per request)")
    parser.add_argument("--memo-baseline-root", default="",
                        help="with --memo-compare: run the memo-off server from this copy of the project "
                             "(e.g. the code before the engine work) instead of this tree")
    parser.add_argument("--memo-compare", action="store_true",
                        help="only compare filter + prioritize with the engine's per-pod memo on and off "
                             "(NETAWARE_ENGINE_MEMO=0), new pods and a repeated pod; skips the other measures")
    args = parser.parse_args()
    samples = 200 if args.quick else 1000

    ensure_database()
    load_before = f"{os.getloadavg()[0]:.2f}"
    t0 = time.monotonic()
    names = reuse_seed(args) if args.reuse else None
    if names is None:
        names = seed(n_regions=args.regions, zones_per_region=args.zones, nodes_per_zone=args.nodes_per_zone,
                     placed=200, rng_seed=7)
    seed_s = time.monotonic() - t0
    import redis as redis_lib

    redis_lib.Redis.from_url(os.environ["REDIS_URL"]).incr("netaware:scheduler:state-version")

    from tests.support.extender_wire import extender_args, k8s_node, k8s_pod

    rng = random.Random(11)
    def cart(tag: str) -> dict[str, Any]:
        return k8s_pod(f"cartservice-{tag}", namespace=NAMESPACE, labels={"app": "cartservice"})

    cand500 = sorted(rng.sample(names, 500))
    body500 = orjson.dumps(extender_args(cart("names500"), node_names=cand500))
    body5000 = orjson.dumps(extender_args(cart("names5000"), node_names=names[:5000]))
    from django.conf import settings  # noqa: F401  (django is set up by seed)

    from apps.topology.models import Node

    rows = {n.name: n for n in Node.objects.filter(name__in=cand500)}
    objects = [k8s_node(n, zone=rows[n].zone, region=rows[n].region, cpu="8", memory="32Gi") for n in cand500]
    body_objects = orjson.dumps(extender_args(cart("objects500"), nodes=objects))
    # The HTTP floor: a pod in no AppGroup with one candidate (parse, state check, no scoring).
    stranger = k8s_pod("batch-floor", namespace=NAMESPACE, labels={"app": "batch"})
    body_floor = orjson.dumps(extender_args(stranger, node_names=cand500[:1]))

    port = free_port()
    server = start_gunicorn(port, args.workers, args.worker_class)
    results: dict[str, Any] = {}
    try:
        # Warm both workers: the first request of a worker loads the 5,000-node topology.
        t1 = time.monotonic()
        pool = [multiprocessing.Process(target=post, args=(port, "/scheduler/prioritize", body500))
                for _ in range(args.workers * 3)]
        for p in pool:
            p.start()
        for p in pool:
            p.join()
        warm_s = time.monotonic() - t1
        check = orjson.loads(post(port, "/scheduler/prioritize", body500))
        assert len(check) == 500 and all(0 <= e["Score"] <= 10 for e in check), check[:3]
        spread = sorted({e["Score"] for e in check})
        if len(spread) < 2:  # all neutral: the extender is degraded (see the decision log)
            raise SystemExit(f"prioritize answered only {spread}: the extender state is degraded")
        for _ in range(50):
            timed(port, [("/scheduler/filter", body500), ("/scheduler/prioritize", body500)], 1)

        if args.memo_compare:
            fresh = [orjson.dumps(extender_args(k8s_pod(f"cartservice-memo{i}", namespace=NAMESPACE,
                                                        labels={"app": "cartservice"}, uid=f"memo-uid-{i}"),
                                                node_names=cand500))
                     for i in range(samples)]
            memo = compare_memo(args, port, body500, fresh, samples)
            print_memo_compare(memo, f"{load_before} before, {os.getloadavg()[0]:.2f} after",
                               f" (off: code in {args.memo_baseline_root})" if args.memo_baseline_root else "")
            return
        pair = timed(port, [("/scheduler/filter", body500), ("/scheduler/prioritize", body500)], samples)
        results["floor"] = timed(port, [("/scheduler/filter", body_floor), ("/scheduler/prioritize", body_floor)],
                                 samples // 2)
        filt = timed(port, [("/scheduler/filter", body500)], samples // 2)
        prio = timed(port, [("/scheduler/prioritize", body500)], samples // 2)
        results["pair"] = pair
        # The floor of a trivial request through gunicorn: GET /scheduler/filter answers 405 from
        # the WSGI dispatch without Django, state or scoring.
        results["trivial"] = timed_get(port, "/scheduler/filter", samples)
        results["filter"] = filt
        results["prioritize"] = prio
        if shutil.which("wrk"):
            results["tp"] = throughput_wrk(port, body500, args.seconds, args.connections)
        else:
            results["tp"] = throughput_python(port, body500, args.seconds, args.connections)
        results["p5000"] = timed(port, [("/scheduler/prioritize", body5000)], samples // 4)
        results["f5000"] = timed(port, [("/scheduler/filter", body5000)], samples // 10)
        results["obj_f"] = timed(port, [("/scheduler/filter", body_objects)], samples // 5)
        results["obj_p"] = timed(port, [("/scheduler/prioritize", body_objects)], samples // 5)
        workers = worker_pids(server.pid)
        results["rss"] = [rss_mib(pid) for pid in workers]
        if not args.no_compare:
            results["compare"] = compare_with_baseline(args, port, body500, body_floor, samples)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)

    from apps.scheduler import services
    from apps.scheduler.models import Decision

    drain_started = time.perf_counter()
    drained = services.flush_decisions()
    drain_s = time.perf_counter() - drain_started
    decisions = Decision.objects.count()

    def server(tag: str, verb: str) -> str:
        values = list(Decision.objects.filter(pod_name=f"cartservice-{tag}", verb=verb)
                      .values_list("duration_ms", flat=True))
        if not values:
            return "n/a"
        return f"{statistics.median(values):.2f} / {pct(values, 99):.2f} ms (n={len(values)})"

    p = results
    rows_out = [
        ("500 NodeNames: filter + prioritize, p50", f"{statistics.median(p['pair']):.2f} ms", "≤ 2 ms"),
        ("500 NodeNames: filter + prioritize, p99", f"{pct(p['pair'], 99):.2f} ms", "≤ 5 ms"),
        ("HTTP floor: the same pair for a pod in no AppGroup, 1 candidate, p50 / p99",
         f"{statistics.median(p['floor']):.2f} / {pct(p['floor'], 99):.2f} ms", ""),
        ("trivial request floor: GET /scheduler/filter → 405 (gunicorn + WSGI dispatch, no Django), p50 / p99",
         f"{statistics.median(p['trivial']):.2f} / {pct(p['trivial'], 99):.2f} ms", ""),
        ("500 NodeNames: filter alone p50 / p99",
         f"{statistics.median(p['filter']):.2f} / {pct(p['filter'], 99):.2f} ms", ""),
        ("500 NodeNames: prioritize alone p50 / p99",
         f"{statistics.median(p['prioritize']):.2f} / {pct(p['prioritize'], 99):.2f} ms", ""),
        (f"sustained requests/s ({p['tp']['client']}, {args.connections} connections, {args.seconds} s, "
         "filter/prioritize alternating)",
         f"{p['tp']['rps']:.0f}/s" + (f" (p99 {p['tp']['p99_ms']:.2f} ms)" if p["tp"]["p99_ms"] else ""), "≥ 500/s"),
        ("non-2xx responses during the run", str(p["tp"]["non2xx"]), "0"),
        ("5,000 NodeNames: prioritize p50 / p99",
         f"{statistics.median(p['p5000']):.2f} / {pct(p['p5000'], 99):.2f} ms", "p99 ≤ 10 ms"),
        ("5,000 NodeNames: filter p50 / p99",
         f"{statistics.median(p['f5000']):.2f} / {pct(p['f5000'], 99):.2f} ms", ""),
        ("500 full Node objects: filter p50 / p99",
         f"{statistics.median(p['obj_f']):.2f} / {pct(p['obj_f'], 99):.2f} ms", "p99 ≤ 50 ms"),
        ("500 full Node objects: prioritize p50 / p99",
         f"{statistics.median(p['obj_p']):.2f} / {pct(p['obj_p'], 99):.2f} ms", "p99 ≤ 50 ms"),
        ("server-side handling (view: parse, score, serialize), 500 names: filter p50 / p99",
         server("names500", "filter"), ""),
        ("server-side handling, 500 names: prioritize p50 / p99", server("names500", "prioritize"), ""),
        ("server-side handling, 5,000 names: prioritize p50 / p99", server("names5000", "prioritize"), ""),
        ("server-side handling, 500 Node objects: filter p50 / p99", server("objects500", "filter"), ""),
        ("server-side handling, 500 Node objects: prioritize p50 / p99", server("objects500", "prioritize"), ""),
        ("RSS per worker, 5,000-node topology loaded (now / peak)",
         ", ".join(f"{r:.0f} / {h:.0f} MiB" for r, h in p["rss"]), "≤ 1024 MiB"),
        ("decisions queued in Redis during the run, then drained into Postgres",
         f"{drained} in {drain_s:.1f} s ({drained / max(drain_s, 1e-9):.0f}/s); {decisions} kept "
         "(DECISION_RETENTION)", ""),
    ]
    if "compare" in p:
        c = p["compare"]
        compare_rows = []
        for key, label in (("", "500 NodeNames: filter + prioritize"),
                           ("_floor", "floor pair (pod in no AppGroup, 1 candidate)"),
                           ("_get", "trivial GET → 405")):
            tuned, base = c[f"tuned{key}"], c[f"baseline{key}"]
            compare_rows.append((
                f"before → after (alternating blocks of the two servers), {label}: p50 / p99",
                f"{statistics.median(base):.2f} / {pct(base, 99):.2f} ms → {statistics.median(tuned):.2f} / "
                f"{pct(tuned, 99):.2f} ms (×{statistics.median(base) / statistics.median(tuned):.2f} / "
                f"×{pct(base, 99) / pct(tuned, 99):.2f}; n={len(tuned)})",
                "≤ 2 / 5 ms" if not key else ""))
        rows_out[2:2] = compare_rows
    print(f"\ngunicorn -w {args.workers} -k {args.worker_class} --threads 1; load average before/after: "
          f"{load_before} / {os.getloadavg()[0]:.2f}. "
          f"Seeded {len(names)} nodes, 11 workloads, 200 placed pods in {seed_s:.1f} s; "
          f"workers warmed in {warm_s:.1f} s; prioritize scores seen for 500 candidates: {spread}; "
          f"request bodies: 500 names {len(body500) / 1024:.0f} KiB, 5,000 names {len(body5000) / 1024:.0f} KiB, "
          f"500 Node objects {len(body_objects) / 1024:.0f} KiB.\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    for name, value, target in rows_out:
        print(f"| {name} | {value} | {target} |")


if __name__ == "__main__":
    main()
