#!/usr/bin/env python
"""Rollouts through a real kube-scheduler: netaware-scheduler (the shipped configuration) vs the default.

    NETAWARE_K8S_BIN=/path/to/bin bench/bench_kube_scheduler.py --nodes N --pods P [--reps 3] [--qps Q] [--json]
    NETAWARE_K8S_BIN=/path/to/bin bench/bench_kube_scheduler.py --quality [--orders 10]

``NETAWARE_K8S_BIN`` names a folder holding ``etcd``, ``kube-apiserver`` and ``kube-scheduler``
binaries (none can be installed from our registries; docs/benchmarks.md, "Rollouts through a real
kube-scheduler", says how to build them). On free ports of 127.0.0.1 the benchmark starts:

* etcd and kube-apiserver (self-signed serving certificate, a static admin token);
* the extender, ``manage.py run_extender`` with mutual TLS (``k8s/scheduler/make-certs.sh``), its
  own ``*bench*`` database (synthetic zone/region topology, or the paper testbed's for 19 nodes and
  ``--quality``) and its informers on that API server;
* per run, one kube-scheduler: the default one (``default-scheduler``) or the second one with
  ``k8s/scheduler/scheduler-config.yaml`` as shipped — only the extender's address, the kubeconfig,
  the certificate paths and, with ``--qps``, ``clientConnection.qps/burst`` (both schedulers) changed.

N fake Ready nodes (no kubelets: not-ready taint removed, capacity, allocatable and the Ready
condition written through the status subresource) carry zone and region labels the extender's
topology knows. A run creates P pending pods (Online Boutique's workloads, shuffled, named so that
the API's by-name listing is the arrival order) while no scheduler serves them, starts the scheduler
and times, through a watch, every pod getting ``spec.nodeName``: pods/s is (P - 1) / (last bind -
first bind) — the scheduler's throughput, without its start-up or the pods' creation. The two
schedulers alternate (which goes first alternates too); medians over ``--reps`` and the ratio of the
medians are reported, plus per run the extender's own histograms (``netaware_extender_request_duration_seconds``
p50/p99 by verb, from its /metrics, during that run) and kube-scheduler's
``scheduler_scheduling_attempt_duration_seconds`` and ``scheduler_framework_extension_point_duration_seconds``.

``--trivial`` adds a third scheduler per repetition: the shipped configuration without its bind verb,
pointed at ``bench/trivial_extender.py`` (fixed answers: every candidate kept, every score 0) served by
granian with the same mutual TLS: the floor of any Python extender over this protocol on this machine,
so ``netaware / trivial`` says what is ours and ``trivial / default`` what the protocol costs.

``--quality`` is the paper's experiment through the real kube-scheduler: the paper testbed's 19
nodes, Online Boutique's pods in ``--orders`` arrival orders (``evaluate``'s seeds), each order
scheduled by netaware-scheduler and by the default scheduler; the average network score (0-100, the
placement on the scenario's nominal topology) as ``manage.py evaluate`` and the demo rollout compute it.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import platform
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cluster

_cluster.setup_environment(database="netaware_bench_kube", redis_db=11)

import numpy as np  # noqa: E402
import orjson  # noqa: E402
import yaml  # noqa: E402

ROOT = _cluster.ROOT
SHIPPED_CONFIG = ROOT / "k8s" / "scheduler" / "scheduler-config.yaml"
SCENARIO = ROOT / "scenarios" / "paper-testbed.yaml"
NETAWARE = "netaware-scheduler"
TRIVIAL = "trivial-extender-scheduler"
DEFAULT = "default-scheduler"
NAMESPACE = "default"
BENCH_LABEL = "netaware.io/bench"
TOKEN = "netaware-bench-admin-token-0123456789abcdef"
METRICS_TOKEN = "netaware-bench-metrics-token-0123456789abcdef"
EXTENDER_SERVER_NAME = "netaware-extender.netaware-system.svc"


def binaries() -> Path:
    folder = os.environ.get("NETAWARE_K8S_BIN", "")
    if not folder:
        sys.exit("NETAWARE_K8S_BIN is not set: point it at a folder holding etcd, kube-apiserver and kube-scheduler "
                 "(docs/benchmarks.md, 'Rollouts through a real kube-scheduler', says how to build them)")
    path = Path(folder)
    missing = [b for b in ("etcd", "kube-apiserver", "kube-scheduler") if not os.access(path / b, os.X_OK)]
    if missing:
        sys.exit(f"NETAWARE_K8S_BIN={folder}: no executable {', '.join(missing)} there")
    return path


# === processes ====================================================================================


class Procs:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.work / f"{name}.log").open("ab")
        proc = subprocess.Popen(argv, cwd=ROOT, env=env or dict(os.environ), start_new_session=True,
                                stdout=log, stderr=subprocess.STDOUT)
        self.procs[name] = proc
        return proc

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name)

    def check(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode} (log: {self.work / f'{name}.log'})")


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_certs(work: Path) -> dict[str, Path]:
    """The API server's CA, serving certificate and service-account key; the extender's mTLS set
    from the shipped script."""
    pki = work / "pki"
    pki.mkdir()
    openssl("req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048", "-sha256", "-days", "2",
            "-subj", "/CN=bench-kube-ca", "-keyout", str(pki / "ca.key"), "-out", str(pki / "ca.crt"))
    openssl("req", "-new", "-nodes", "-newkey", "rsa:2048", "-sha256", "-subj", "/CN=kube-apiserver",
            "-keyout", str(pki / "apiserver.key"), "-out", str(pki / "apiserver.csr"))
    (pki / "apiserver.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes\n"
                                       "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(pki / "apiserver.csr"), "-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"),
            "-CAcreateserial", "-days", "2", "-sha256", "-extfile", str(pki / "apiserver.ext"),
            "-out", str(pki / "apiserver.crt"))
    openssl("genrsa", "-out", str(pki / "sa.key"), "2048")
    openssl("rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    tls = work / "extender-tls"
    subprocess.run(["bash", str(ROOT / "k8s" / "scheduler" / "make-certs.sh"), str(tls)], check=True, capture_output=True)
    return {"ca": pki / "ca.crt", "apiserver_crt": pki / "apiserver.crt", "apiserver_key": pki / "apiserver.key",
            "sa_key": pki / "sa.key", "sa_pub": pki / "sa.pub", "ext_ca": tls / "ca.crt",
            "ext_crt": tls / "extender.crt", "ext_key": tls / "extender.key",
            "sched_crt": tls / "scheduler.crt", "sched_key": tls / "scheduler.key"}


class Api:
    """The API server over HTTPS with the admin token; one kept-alive connection per thread."""

    def __init__(self, port: int, ca: Path) -> None:
        self.port = port
        self.ctx = ssl.create_default_context(cafile=str(ca))
        self.headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json",
                        "Content-Type": "application/json"}
        self.local = threading.local()

    def conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=60, context=self.ctx)
        return conn

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> tuple[int, Any]:
        payload = body if body is None or isinstance(body, bytes) else orjson.dumps(body)
        headers = {**self.headers, "Content-Type": content_type}
        for attempt in range(3):
            conn = self.conn()
            try:
                conn.request(method, path, body=payload, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.2)
        try:
            parsed = orjson.loads(data) if data else None
        except orjson.JSONDecodeError:
            parsed = data.decode("utf-8", "replace")
        return resp.status, parsed

    def ok(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
           allow: tuple[int, ...] = ()) -> Any:
        status, parsed = self.request(method, path, body, content_type)
        if not 200 <= status < 300 and status not in allow:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {str(parsed)[:300]}")
        return parsed


def wait_until(what: str, check: Any, timeout: float, procs: Procs | None = None, name: str = "") -> None:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        if procs is not None and name:
            procs.check(name)
        try:
            if check():
                return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.2)
    raise RuntimeError(f"{what} not ready within {timeout:.0f}s ({last})")


def start_control_plane(procs: Procs, bins: Path, certs: dict[str, Path]) -> Api:
    work = procs.work
    etcd_port, peer_port, api_port = _cluster.free_port(), _cluster.free_port(), _cluster.free_port()
    procs.start("etcd", [str(bins / "etcd"), "--data-dir", str(work / "etcd"),
                         "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                         "--listen-peer-urls", f"http://127.0.0.1:{peer_port}", "--unsafe-no-fsync"])
    _cluster.wait_for_port(etcd_port, procs.procs["etcd"], "etcd", work / "etcd.log")
    (work / "tokens.csv").write_text(f'{TOKEN},bench-admin,bench-admin,"system:masters"\n')
    procs.start("kube-apiserver", [
        str(bins / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
        f"--tls-cert-file={certs['apiserver_crt']}", f"--tls-private-key-file={certs['apiserver_key']}",
        f"--client-ca-file={certs['ca']}", f"--token-auth-file={work / 'tokens.csv'}",
        "--authorization-mode=Node,RBAC", f"--service-account-key-file={certs['sa_pub']}",
        f"--service-account-signing-key-file={certs['sa_key']}",
        "--service-account-issuer=https://kubernetes.default.svc", "--service-cluster-ip-range=10.96.0.0/16",
        f"--cert-dir={work / 'apiserver-certs'}", "--v=0",
    ])
    api = Api(api_port, certs["ca"])
    wait_until("kube-apiserver", lambda: api.request("GET", "/readyz")[0] == 200, 120, procs, "kube-apiserver")
    for ns in ("netaware-system",):
        api.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
               allow=(409,))
    # No controller-manager: the ServiceAccount admission plugin wants each namespace's "default" account.
    for ns in (NAMESPACE, "netaware-system"):
        wait_until(f"namespace {ns}", lambda ns=ns: api.request("GET", f"/api/v1/namespaces/{ns}")[0] == 200, 60)
        api.ok("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, allow=(409,))
    return api


def kubeconfig(work: Path, api: Api, ca: Path) -> Path:
    path = work / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "bench",
        "clusters": [{"name": "bench", "cluster": {"server": f"https://127.0.0.1:{api.port}",
                                                   "certificate-authority": str(ca)}}],
        "users": [{"name": "admin", "user": {"token": TOKEN}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "admin"}}],
    }))
    return path


def scheduler_config(work: Path, which: str, kubeconfig_path: Path, extender_port: int, certs: dict[str, Path],
                     qps: int, no_bind_verb: bool = False) -> Path:
    """The default scheduler's configuration, or the shipped one with addresses and paths changed."""
    connection: dict[str, Any] = {"kubeconfig": str(kubeconfig_path)}
    if qps:
        connection.update(qps=qps, burst=qps)
    if which == DEFAULT:
        config: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                  "leaderElection": {"leaderElect": False}}
    else:  # NETAWARE, or TRIVIAL: the same configuration pointed at the trivial extender (no bind verb)
        shipped = yaml.safe_load(SHIPPED_CONFIG.read_text())
        config = yaml.safe_load(shipped["data"]["scheduler-config.yaml"])
        (extender,) = config["extenders"]
        # The shipped Service address resolves in-cluster only; serverName (what the certificate names) is kept.
        extender["urlPrefix"] = f"https://127.0.0.1:{extender_port}/scheduler"
        if no_bind_verb or which == TRIVIAL:
            extender.pop("bindVerb", None)
        if which == TRIVIAL:
            (profile,) = config["profiles"]
            profile["schedulerName"] = TRIVIAL
        extender["tlsConfig"].update(certFile=str(certs["sched_crt"]), keyFile=str(certs["sched_key"]),
                                     caFile=str(certs["ext_ca"]))
    config["clientConnection"] = connection
    path = work / f"{which}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


# === cluster objects ===============================================================================


def node_specs(nodes: int, rng: np.random.Generator) -> tuple[Any, list[tuple[str, str, str, str, str]]]:
    """(topology, [(name, zone, region, cpu, memory)]): the paper testbed for 19 nodes, else synthetic."""
    if nodes == 19:
        from apps.probes.scenario import load_scenario
        from apps.scheduler.evaluation.adapter import topology_for_scenario

        topology = topology_for_scenario(load_scenario(SCENARIO))
    else:
        topology = _cluster.synthetic_topology(*_cluster.cluster_shape(nodes), rng)
    specs = [(n, z, r, "32", "128Gi") for n, z, r in zip(topology.nodes, topology.zones, topology.regions, strict=True)]
    return topology, specs


def create_nodes(api: Api, specs: list[tuple[str, str, str, str, str]]) -> None:
    def one(spec: tuple[str, str, str, str, str]) -> None:
        name, zone, region, cpu, memory = spec
        api.ok("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "topology.kubernetes.io/zone": zone,
                                                  "topology.kubernetes.io/region": region}},
        }, allow=(409,))
        # TaintNodesByCondition put node.kubernetes.io/not-ready on it; no node controller will lift it.
        api.ok("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}},
               content_type="application/merge-patch+json")
        resources = {"cpu": cpu, "memory": memory, "pods": "110"}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        api.ok("PATCH", f"/api/v1/nodes/{name}/status", {"status": {
            "capacity": resources, "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "bench",
                            "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "addresses": [{"type": "Hostname", "address": name}]}},
            content_type="application/merge-patch+json")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, specs))


def throughput_pods(topology: Any, appgroup_doc: dict[str, Any], pods: int, seed: int) -> list[dict[str, Any]]:
    """Online Boutique's workloads, shuffled; the name prefix makes the by-name listing the arrival order."""
    made = [o for o in _cluster.cluster_objects(topology, appgroup_doc, pods, seed) if o["kind"] == "Pod"]
    out = []
    for i, pod in enumerate(made):
        app = pod["metadata"]["labels"]["app"]
        pod["metadata"]["name"] = f"p{i:05d}-{app}"
        pod["metadata"]["labels"][BENCH_LABEL] = "1"
        pod.pop("status", None)
        out.append(pod)
    return out


def create_pods(api: Api, pods: list[dict[str, Any]], scheduler: str) -> None:
    def one(pod: dict[str, Any]) -> None:
        body = {**pod, "spec": {**pod["spec"], "schedulerName": scheduler}}
        api.ok("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, pods))


def delete_pods(api: Api) -> None:
    api.ok("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={BENCH_LABEL}%3D1",
           {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})

    def gone() -> bool:
        listed = api.ok("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={BENCH_LABEL}%3D1&limit=1")
        return not listed.get("items")

    wait_until("pods deleted", gone, 120)


class BindWatch:
    """A watch on the namespace's bench pods: when each was first seen with spec.nodeName. A broken
    watch is re-established after a fresh list (what the list shows bound is timed at the list)."""

    def __init__(self, api: Api, names: set[str]) -> None:
        self.api, self.names = api, names
        self.bound: dict[str, tuple[float, str]] = {}
        self.errors: list[str] = []
        self.done = threading.Event()
        self.conn: http.client.HTTPSConnection | None = None
        rv = self._list()
        self.thread = threading.Thread(target=self._run, args=(rv,), daemon=True)
        self.thread.start()

    def _list(self) -> str:
        listed = self.api.ok("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={BENCH_LABEL}%3D1")
        now = time.monotonic()
        for obj in listed.get("items") or []:
            self._seen(obj, now)
        return str(listed["metadata"]["resourceVersion"])

    def _seen(self, obj: dict[str, Any], now: float) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        node = (obj.get("spec") or {}).get("nodeName")
        if node and name in self.names and name not in self.bound:
            self.bound[name] = (now, node)
            if len(self.bound) == len(self.names):
                self.done.set()

    def _run(self, rv: str) -> None:
        while not self.done.is_set():
            try:
                self.conn = conn = http.client.HTTPSConnection("127.0.0.1", self.api.port, timeout=600,
                                                               context=self.api.ctx)
                conn.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?watch=1&labelSelector={BENCH_LABEL}%3D1"
                                    f"&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=600",
                             headers={"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"})
                resp = conn.getresponse()
                if resp.status != 200:
                    raise RuntimeError(f"watch: HTTP {resp.status}")
                while not self.done.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    now = time.monotonic()
                    event = orjson.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise RuntimeError(f"watch error event: {str(obj)[:200]}")
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    self._seen(obj, now)
            except Exception as exc:
                if self.done.is_set():
                    break
                self.errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.2)
                try:
                    rv = self._list()
                except Exception as again:
                    self.errors.append(f"relist: {type(again).__name__}: {again}")

    def close(self) -> None:
        self.done.set()
        if self.conn is not None:
            with contextlib.suppress(OSError, AttributeError):
                self.conn.sock.shutdown(2)
            self.conn.close()


# === metrics ===================================================================================


def scrape(url: str, token: str, insecure: bool = False) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme == "https":
        ctx = ssl._create_unverified_context() if insecure else ssl.create_default_context()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=30,
                                                                       context=ctx)
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    conn.request("GET", parts.path, headers={"Authorization": f"Bearer {token}"})
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    if resp.status != 200:
        raise RuntimeError(f"{url}: HTTP {resp.status}: {text[:200]}")
    return text


def buckets(text: str, metric: str, match: dict[str, str]) -> dict[float, float]:
    """Cumulative bucket counts of a histogram summed over the series whose labels match."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != metric:
            continue
        for sample in family.samples:
            if not sample.name.endswith("_bucket"):
                continue
            if any(sample.labels.get(k) != v for k, v in match.items()):
                continue
            le = float(sample.labels["le"])
            out[le] = out.get(le, 0.0) + sample.value
    return out


def quantiles(after: dict[float, float], before: dict[float, float] | None = None) -> dict[str, Any]:
    """count, p50 and p99 in ms (linear within a bucket, as histogram_quantile) of after - before. A
    quantile beyond the last finite bucket (kube-scheduler's extension points stop at 204.8 ms) is that
    bucket's bound, flagged ``p<q>_above_top_bucket``."""
    bounds = sorted(after)
    counts = [after[b] - (before or {}).get(b, 0.0) for b in bounds]
    total = counts[-1] if counts else 0.0
    out: dict[str, Any] = {"count": int(total)}
    for q in (50, 99):
        if not total:
            out[f"p{q}_ms"] = None
            continue
        rank = total * q / 100
        prev_bound, prev_count = 0.0, 0.0
        value = bounds[-1]
        for bound, count in zip(bounds, counts, strict=True):
            if count >= rank:
                if bound == float("inf"):
                    value = prev_bound  # beyond the histogram's last bucket: a lower bound only
                    out[f"p{q}_above_top_bucket"] = True
                else:
                    width = count - prev_count
                    value = prev_bound + (bound - prev_bound) * ((rank - prev_count) / width if width else 1.0)
                break
            prev_bound, prev_count = bound, count
        out[f"p{q}_ms"] = round(value * 1000, 2)
    return out


EXTENDER_METRIC = "netaware_extender_request_duration_seconds"


def extender_histograms(text: str, before: str) -> dict[str, Any]:
    return {verb: quantiles(buckets(text, EXTENDER_METRIC, {"verb": verb}), buckets(before, EXTENDER_METRIC, {"verb": verb}))
            for verb in ("filter", "prioritize", "bind")}


def scheduler_histograms(text: str, profile: str) -> dict[str, Any]:
    out = {"scheduling_attempt": quantiles(buckets(text, "scheduler_scheduling_attempt_duration_seconds",
                                                   {"profile": profile, "result": "scheduled"})),
           # the scheduling cycle's algorithm: the Filter and Score points plus the extender's round trips
           "scheduling_algorithm": quantiles(buckets(text, "scheduler_scheduling_algorithm_duration_seconds", {}))}
    for point in ("Filter", "Score", "Bind", "PreBind"):
        out[point] = quantiles(buckets(text, "scheduler_framework_extension_point_duration_seconds",
                                       {"profile": profile, "extension_point": point}))
    return out


# === one run ===================================================================================


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.bins = binaries()
        self.work = Path(tempfile.mkdtemp(prefix="bench_kube_scheduler_"))
        self.procs = Procs(self.work)
        self.api: Api
        self.extender_port = 0
        self.health_port = 0
        self.trivial_port = 0

    def start(self, topology: Any, appgroup_doc: dict[str, Any], specs: list[tuple[str, str, str, str, str]]) -> None:
        self.certs = make_certs(self.work)
        self.api = start_control_plane(self.procs, self.bins, self.certs)
        self.kubeconfig = kubeconfig(self.work, self.api, self.certs["ca"])
        started = time.monotonic()
        create_nodes(self.api, specs)
        self.nodes_seconds = time.monotonic() - started
        _cluster.ensure_database()
        _cluster.seed_database(topology, appgroup_doc)
        self.extender_port, self.health_port = _cluster.free_port(), _cluster.free_port()
        env = {**os.environ, "KUBE_API_URL": f"https://127.0.0.1:{self.api.port}", "KUBE_TOKEN": TOKEN,
               "KUBE_CA_FILE": str(self.certs["ca"]), "NETAWARE_EXTENDER_SOURCE": "kubernetes",
               "NETAWARE_SCHEDULER_NAMES": NETAWARE, "LOG_LEVEL": "WARNING",
               "NETAWARE_METRICS_TOKEN": METRICS_TOKEN,
               **dict(item.split("=", 1) for item in self.args.extender_env)}
        self.procs.start("extender", [sys.executable, "manage.py", "run_extender",
                                      "--bind", f"127.0.0.1:{self.extender_port}",
                                      "--health-bind", f"127.0.0.1:{self.health_port}",
                                      "--certfile", str(self.certs["ext_crt"]), "--keyfile", str(self.certs["ext_key"]),
                                      "--client-ca", str(self.certs["ext_ca"])], env)
        _cluster.wait_ready(self.health_port, self.procs.procs["extender"], self.work / "extender.log", timeout=600)

        def has_nodes() -> bool:
            conn = http.client.HTTPConnection("127.0.0.1", self.health_port, timeout=5)
            conn.request("GET", "/readyz")
            body = orjson.loads(conn.getresponse().read())
            return body.get("nodes") == len(specs) and bool(body.get("appgroups"))

        wait_until("extender cache with every node", has_nodes, 120, self.procs, "extender")
        if getattr(self.args, "trivial", False):
            self.trivial_port = _cluster.free_port()
            self.procs.start("trivial-extender", [
                sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1",
                "--port", str(self.trivial_port), "--workers", "1", "--log-level", "warning",
                "--ssl-certificate", str(self.certs["ext_crt"]), "--ssl-keyfile", str(self.certs["ext_key"]),
                "--ssl-ca", str(self.certs["ext_ca"]), "--ssl-client-verify", "bench.trivial_extender:application"])
            _cluster.wait_for_port(self.trivial_port, self.procs.procs["trivial-extender"], "trivial-extender",
                                   self.work / "trivial-extender.log")

    def cpu(self) -> dict[str, float]:
        """CPU seconds used so far by each process this benchmark started (with its children)."""
        return {name: _cluster.cpu_seconds(_cluster.process_tree(proc.pid))
                for name, proc in self.procs.procs.items() if proc.poll() is None}

    def extender_metrics(self) -> str:
        return scrape(f"http://127.0.0.1:{self.health_port}/metrics", METRICS_TOKEN)

    def run(self, which: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
        """Create the pods, start the scheduler, wait until every pod is bound, stop it, delete the pods."""
        api = self.api
        create_pods(api, pods, which)
        names = {p["metadata"]["name"] for p in pods}
        watch = BindWatch(api, names)
        if which != DEFAULT:  # a lease left by the previous run's process would delay the start by 15 s
            api.request("DELETE", "/apis/coordination.k8s.io/v1/namespaces/netaware-system/leases/netaware-scheduler")
        port = _cluster.free_port()
        config = scheduler_config(self.work, which, self.kubeconfig,
                                  self.trivial_port if which == TRIVIAL else self.extender_port, self.certs,
                                  self.args.qps, getattr(self.args, "no_bind_verb", False))
        ext_before = self.extender_metrics()
        load_before = os.getloadavg()[0]
        cpu_before = self.cpu()
        started = time.monotonic()
        self.procs.start(which, [
            str(self.bins / "kube-scheduler"), f"--config={config}", f"--secure-port={port}", "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", f"--cert-dir={self.work / 'sched-certs'}",
            "--v=1",
        ])
        deadline = started + self.args.timeout
        while not watch.done.wait(0.5):
            self.procs.check(which)
            if time.monotonic() > deadline:
                break
        ended = time.monotonic()
        cpu = {name: round((used - cpu_before.get(name, 0.0)) * 1000 / max(1, len(names)), 2)
               for name, used in self.cpu().items()}
        watch.close()
        load_after = os.getloadavg()[0]
        metrics_text = scrape(f"https://127.0.0.1:{port}/metrics", TOKEN, insecure=True)
        ext_after = self.extender_metrics()
        self.procs.stop(which)
        times = sorted(t for t, _ in watch.bound.values())
        result: dict[str, Any] = {
            "scheduler": which, "pods": len(names), "bound": len(times), "watch_errors": watch.errors[:5],
            "pods_per_s": round((len(times) - 1) / (times[-1] - times[0]), 1) if len(times) > 1 else 0.0,
            "first_bind_after_start_s": round(times[0] - started, 2) if times else None,
            "all_bound_after_start_s": round(ended - started, 2),
            "load": [round(load_before, 2), round(load_after, 2)],
            "cpu_ms_per_pod": cpu,
            "kube_scheduler": scheduler_histograms(metrics_text, which),
        }
        if which == NETAWARE:
            result["extender"] = extender_histograms(ext_after, ext_before)
        result["placement"] = {name: node for name, (_, node) in watch.bound.items()}
        delete_pods(api)
        time.sleep(1.0)  # the extender's pod informer sees the deletions
        return result


def median_of(runs: list[dict[str, Any]], *path: str) -> float | None:
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = (value or {}).get(key)
        if value is not None:
            values.append(float(value))
    return round(statistics.median(values), 2) if values else None


def throughput(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(args.seed)
    topology, specs = node_specs(args.nodes, rng)
    appgroup_doc = yaml.safe_load(_cluster.APPGROUP_FILE.read_text())
    pods = throughput_pods(topology, appgroup_doc, args.pods, args.seed)
    bench = Bench(args)
    out: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods, "reps": args.reps, "qps": args.qps or "default",
                           "extender_env": args.extender_env, "no_bind_verb": args.no_bind_verb,
                           "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                           "logs": str(bench.work)}
    schedulers = (DEFAULT, NETAWARE, TRIVIAL) if args.trivial else (DEFAULT, NETAWARE)
    runs: dict[str, list[dict[str, Any]]] = {which: [] for which in schedulers}
    try:
        bench.start(topology, appgroup_doc, specs)
        del topology
        out["nodes_created_s"] = round(bench.nodes_seconds, 1)
        for rep in range(args.reps):
            shift = rep % len(schedulers)  # which goes first rotates
            for which in schedulers[shift:] + schedulers[:shift]:
                result = bench.run(which, pods)
                result.pop("placement")
                runs[which].append(result)
                print(orjson.dumps({"rep": rep, **result}).decode(), file=sys.stderr, flush=True)
    finally:
        bench.procs.stop_all()
    keys = ((DEFAULT, "default"), (NETAWARE, "netaware"), (TRIVIAL, "trivial"))
    for which, key in keys:
        if which in runs:
            out[f"{key}_pods_per_s"] = median_of(runs[which], "pods_per_s")
            out[f"{key}_runs_pods_per_s"] = [r["pods_per_s"] for r in runs[which]]
    out["ratio"] = (round(out["netaware_pods_per_s"] / out["default_pods_per_s"], 3)
                    if out["default_pods_per_s"] else None)
    out["ratios_per_rep"] = [round(n["pods_per_s"] / d["pods_per_s"], 3) if d["pods_per_s"] else None
                             for d, n in zip(runs[DEFAULT], runs[NETAWARE], strict=True)]
    if args.trivial and out["default_pods_per_s"] and out["trivial_pods_per_s"]:
        # what the protocol itself costs (any Python extender), and what is ours on top of it
        out["trivial_ratio"] = round(out["trivial_pods_per_s"] / out["default_pods_per_s"], 3)
        out["netaware_over_trivial"] = round(out["netaware_pods_per_s"] / out["trivial_pods_per_s"], 3)
    for verb in ("filter", "prioritize", "bind"):
        for q in ("p50_ms", "p99_ms"):
            out[f"extender_{verb}_{q}"] = median_of(runs[NETAWARE], "extender", verb, q)
    for which, key in keys:
        if which not in runs:
            continue
        for point in ("scheduling_attempt", "scheduling_algorithm", "Filter", "Score", "Bind"):
            for q in ("p50_ms", "p99_ms"):
                out[f"{key}_{point}_{q}"] = median_of(runs[which], "kube_scheduler", point, q)
    out["load"] = [r["load"] for which in schedulers for r in runs[which]]
    out["runs"] = runs
    return out


def quality(args: argparse.Namespace) -> dict[str, Any]:
    """The paper's experiment: 19 nodes, Online Boutique, ``--orders`` arrival orders, both schedulers."""
    from dataclasses import replace

    from apps.appgroups import documents
    from apps.demo.cluster import pod_objects
    from apps.probes.scenario import load_scenario
    from apps.scheduler.evaluation.adapter import topology_for_scenario
    from apps.scheduler.evaluation.metrics import network_metrics
    from apps.scheduler.evaluation.report import initial_state
    from apps.scheduler.evaluation.simulate import appgroup_pods, arrival_order

    scenario = load_scenario(SCENARIO)
    appgroup_doc = yaml.safe_load(_cluster.APPGROUP_FILE.read_text())
    group = documents.spec_from_document(appgroup_doc)
    topology = topology_for_scenario(scenario)
    specs = [(n.name, n.zone, n.region, f"{n.cpu_millicores}m", str(n.memory_bytes)) for n in scenario.nodes]
    sims = appgroup_pods((group,))
    objects = {o["metadata"]["name"]: o for o in pod_objects(group)}
    initial = initial_state(scenario, (group,))
    bench = Bench(args)
    scores: dict[str, list[float]] = {DEFAULT: [], NETAWARE: []}
    out: dict[str, Any] = {"scenario": str(SCENARIO.relative_to(ROOT)), "orders": args.orders, "logs": str(bench.work)}
    try:
        bench.start(topology, appgroup_doc, specs)
        for seed in range(args.first_seed, args.first_seed + args.orders):
            order = [sims[int(i)] for i in arrival_order(len(sims), seed)]
            pods, key_of = [], {}
            for k, sim in enumerate(order):
                pod = orjson.loads(orjson.dumps(objects[sim.pod.name]))
                pod["metadata"]["name"] = name = f"o{k:03d}-{sim.pod.name}"
                pod["metadata"]["labels"][BENCH_LABEL] = "1"
                pod.pop("status", None)
                pods.append(pod)
                key_of[name] = sim.key
            for which in (NETAWARE, DEFAULT):
                result = bench.run(which, pods)
                placements: dict[tuple[str, str, str], list[str]] = {}
                for name, node in result["placement"].items():
                    placements.setdefault(key_of[name], []).append(node)
                score = network_metrics(replace(initial, placements={k: tuple(v) for k, v in placements.items()}),
                                        (group,)).average
                scores[which].append(round(float(score), 1))
                print(orjson.dumps({"seed": seed, "scheduler": which, "score": scores[which][-1],
                                    "bound": result["bound"]}).decode(), file=sys.stderr, flush=True)
    finally:
        bench.procs.stop_all()
    out.update(netaware_scores=scores[NETAWARE], default_scores=scores[DEFAULT],
               netaware_mean=round(statistics.mean(scores[NETAWARE]), 1) if scores[NETAWARE] else None,
               default_mean=round(statistics.mean(scores[DEFAULT]), 1) if scores[DEFAULT] else None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500, help="19 (the paper testbed) or a multiple of 50")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--qps", type=int, default=0, help="clientConnection.qps and burst of both schedulers "
                        "(0: kube-scheduler's defaults, 50 / 100)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one run may take")
    parser.add_argument("--quality", action="store_true", help="the paper's experiment instead of throughput")
    parser.add_argument("--orders", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--trivial", action="store_true",
                        help="also run the shipped configuration against bench/trivial_extender.py (fixed answers, no "
                             "bind verb, same mutual TLS): the floor of any Python extender")
    parser.add_argument("--no-bind-verb", action="store_true",
                        help="experiment, not the shipped configuration: drop bindVerb (kube-scheduler binds itself)")
    parser.add_argument("--extender-env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the extender (repeatable), e.g. NETAWARE_EXTENDER_THREADS=64")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep-logs", action="store_true", help="keep the work folder (certificates, logs)")
    args = parser.parse_args()
    # SIGTERM (timeout, kill): leave through the finally blocks that stop every process started here.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.reps < 1 or args.orders < 1:
        parser.error("--reps and --orders must be >= 1")
    if any("=" not in item for item in args.extender_env):
        parser.error("--extender-env: expected NAME=VALUE")
    binaries()
    import django

    django.setup()
    if shutil.which("openssl") is None:
        sys.exit("openssl is needed for the certificates")
    out = quality(args) if args.quality else throughput(args)
    if not args.keep_logs and "logs" in out:
        shutil.rmtree(out["logs"], ignore_errors=True)
        out["logs"] = "(removed; --keep-logs keeps them)"
    if args.json:
        print(orjson.dumps(out).decode())
        return
    if args.quality:
        print(f"network score over {args.orders} orders: netaware-scheduler {out['netaware_mean']} "
              f"{out['netaware_scores']}, default-scheduler {out['default_mean']} {out['default_scores']}")
        return
    print("| nodes | pods | qps | default pods/s (runs) | netaware pods/s (runs) | ratio (per rep) | extender filter / "
          "prioritize / bind p50–p99 ms | attempt p50/p99 ms default / netaware |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {args.nodes} | {args.pods} | {out['qps']} | {out['default_pods_per_s']} ({out['default_runs_pods_per_s']}) | "
          f"{out['netaware_pods_per_s']} ({out['netaware_runs_pods_per_s']}) | {out['ratio']} ({out['ratios_per_rep']}) | "
          f"{out['extender_filter_p50_ms']}–{out['extender_filter_p99_ms']} / "
          f"{out['extender_prioritize_p50_ms']}–{out['extender_prioritize_p99_ms']} / "
          f"{out['extender_bind_p50_ms']}–{out['extender_bind_p99_ms']} | "
          f"{out['default_scheduling_attempt_p50_ms']}/{out['default_scheduling_attempt_p99_ms']} / "
          f"{out['netaware_scheduling_attempt_p50_ms']}/{out['netaware_scheduling_attempt_p99_ms']} |")
    if args.trivial:
        print(f"trivial extender: {out['trivial_pods_per_s']} pods/s ({out['trivial_runs_pods_per_s']}), "
              f"{out.get('trivial_ratio')} x default; netaware = {out.get('netaware_over_trivial')} x trivial; "
              f"scheduling algorithm p50 default / netaware / trivial: {out['default_scheduling_algorithm_p50_ms']} / "
              f"{out['netaware_scheduling_algorithm_p50_ms']} / {out['trivial_scheduling_algorithm_p50_ms']} ms")
    print(f"load averages (1 min) before/after each run: {out['load']}")


if __name__ == "__main__":
    main()
