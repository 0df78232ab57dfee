"""Shared pieces of the benchmarks: a dedicated database, synthetic clusters, server processes.

Every benchmark refuses to touch a database whose name lacks "bench" (it wipes tables).
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

if TYPE_CHECKING:
    from apps.topology.topomath import Topology

APPGROUP_FILE = Path(__file__).resolve().parent.parent / "scenarios" / "online-boutique-appgroup.yaml"
SCHEDULER_NAME = "netaware-scheduler"
ROOT = Path(__file__).resolve().parent.parent


def with_database(url: str, database: str) -> str:
    """``url`` naming another database, credentials kept."""
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def bench_database_url(database: str) -> str:
    """``DATABASE_URL`` as given, else the tests' credentials (the CREATEDB role ``netaware_test`` that
    scripts/test.sh sets up, its URL in ``DATABASE_URL_FILE`` or var/secrets/test-database-url) naming
    ``database``: Debian's PostgreSQL has no password-less login over TCP to fall back on."""
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    state = Path(os.environ.get("NETAWARE_STATE_DIR") or ROOT / "var")
    for source in (os.environ.get("DATABASE_URL_FILE"), state / "secrets" / "test-database-url"):
        if source and Path(source).is_file() and (url := Path(source).read_text().strip()):
            return with_database(url, database)
    sys.exit("no database for the benchmark: set DATABASE_URL to a PostgreSQL URL whose user may create "
             "databases, or run bash scripts/test.sh once (it sets up the role netaware_test)")


def setup_environment(*, database: str = "netaware_bench", redis_db: int = 9) -> None:
    """Point Django at the benchmark's own database and Redis db before it is imported."""
    sys.path.insert(0, str(ROOT))
    os.environ["DATABASE_URL"] = bench_database_url(database)
    os.environ.pop("DATABASE_URL_FILE", None)
    os.environ.setdefault("REDIS_URL", f"redis://127.0.0.1:6379/{redis_db}")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")
    os.environ["DEBUG"] = "false"  # DEBUG keeps every SQL query in memory
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def ensure_database() -> None:
    import dj_database_url
    import psycopg

    url = os.environ["DATABASE_URL"]
    name = dj_database_url.parse(url)["NAME"]
    if "bench" not in name:
        sys.exit(f"refusing to wipe database {name!r}: its name must contain 'bench'")
    # The same credentials (password included), connected to the maintenance database.
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def synthetic_topology(n_regions: int, zones_per_region: int, nodes_per_zone: int, rng: np.random.Generator) -> Topology:
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
    import psycopg

    from apps.topology import services as topology_services
    from apps.topology.models import TopologySnapshot

    payload = TopologySnapshot.encode_payload(topology)
    original = TopologySnapshot.encode_payload
    TopologySnapshot.encode_payload = staticmethod(lambda t: b"")  # type: ignore[method-assign, assignment]
    try:
        snapshot = topology_services._store(topology=topology, source="imported", quantile=0.9, data_until=None)
    finally:
        TopologySnapshot.encode_payload = original  # type: ignore[method-assign]
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(f"UPDATE {TopologySnapshot._meta.db_table} SET payload = %b WHERE id = %s",
                     [payload, snapshot.pk])




def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} (log: {log})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{what} did not listen on {port} within {timeout:.0f}s (log: {log})")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    out = [pid]
    for child in _children(pid):
        out.extend(process_tree(child))
    return out


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for task in tasks:
        try:
            kids.extend(int(p) for p in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        except OSError:
            continue
    return kids


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of the processes (all their threads), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / ticks


def rss_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of one process in MiB."""
    text = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) / 1024  # type: ignore[union-attr]
    hwm = int(re.search(r"VmHWM:\s+(\d+)", text).group(1)) / 1024  # type: ignore[union-attr]
    return rss, hwm


# --- a cluster for the extender benchmarks (demo API, database, processes) --------------------


def cluster_shape(nodes: int) -> tuple[int, int, int]:
    """(regions, zones per region, nodes per zone) giving exactly ``nodes`` nodes."""
    per_zone = 50 if nodes < 2000 else 100
    if nodes % per_zone:
        raise SystemExit(f"--nodes must be a multiple of {per_zone}")
    zones = nodes // per_zone
    regions = 5 if zones % 5 == 0 else 1
    return regions, zones // regions, per_zone


def seed_database(topology: Any, appgroup_doc: dict[str, Any]) -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.db import connection

    from apps.appgroups import documents
    from apps.appgroups.models import AppGroup
    from apps.appgroups.services import save_appgroup
    from apps.scheduler.models import Decision, ObservedPod
    from apps.topology.models import Node, TopologySnapshot

    for model in (Decision, ObservedPod, AppGroup, Node, TopologySnapshot):
        model.objects.all().delete()
    store_large_topology(topology)
    save_appgroup(spec=documents.spec_from_document(appgroup_doc), origin="netaware")
    connection.close()


def cluster_objects(topology: Any, appgroup_doc: dict[str, Any], pods: int, seed: int,
                    profile: str = "") -> list[dict[str, Any]]:
    """Ready nodes and pending pods; ``profile`` names the scheduler profile the pods ask for (annotation)."""
    from apps.demo.rollout import shuffled  # after setup_environment: imports Django
    from apps.scheduler.scoring.engine import PROFILE_ANNOTATION

    namespace = appgroup_doc["metadata"].get("namespace") or "default"
    objects: list[dict[str, Any]] = []
    for name, zone, region in zip(topology.nodes, topology.zones, topology.regions, strict=True):
        objects.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "topology.kubernetes.io/zone": zone,
                                                  "topology.kubernetes.io/region": region}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]},
        })
    workloads = appgroup_doc["spec"]["workloads"]
    made = []
    for i in range(pods):
        w = workloads[i % len(workloads)]
        app = w["selector"]["matchLabels"]["app"]
        res = w.get("resources") or {}
        made.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{app}-{i:05d}", "namespace": namespace,
                         "labels": {"app": app, "pod-template-hash": "7d9f6c5b8"},
                         **({"annotations": {PROFILE_ANNOTATION: profile}} if profile else {})},
            "spec": {"schedulerName": SCHEDULER_NAME, "containers": [{
                "name": "server", "image": f"microservices-demo/{app}:v0.10.1",
                "resources": {"requests": {"cpu": res.get("cpu", "100m"), "memory": res.get("memory", "64Mi")}}}]},
            "status": {"phase": "Pending"},
        })
    return objects + shuffled(made, seed)


class Procs:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs = Path(tempfile.mkdtemp(prefix="bench_rollout_"))

    def start(self, name: str, argv: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
        log = self.logs / f"{name}.log"
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True, stdout=log.open("ab"),
                                stderr=subprocess.STDOUT)
        self.procs.append(proc)
        wait_for_port(port, proc, name, log)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def start_api(procs: Procs, objects: list[dict[str, Any]], name: str) -> str:
    seed_file = procs.logs / f"{name}-seed.json"
    seed_file.write_bytes(orjson.dumps(objects))
    port = free_port()
    procs.start(name, [sys.executable, "-m", "apps.demo.kubeapi", "--port", str(port), "--seed", str(seed_file)],
                dict(os.environ), port)
    return f"http://127.0.0.1:{port}"


def wait_ready(health_port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 180.0) -> None:

    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the extender exited (log: {log})")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", health_port, timeout=2)
            conn.request("GET", "/readyz")
            resp = conn.getresponse()
            last = resp.read().decode()
            if resp.status == 200:
                return
        except OSError as exc:
            last = str(exc)
        time.sleep(0.2)
    raise RuntimeError(f"the extender was not ready within {timeout:.0f}s: {last} (log: {log})")


