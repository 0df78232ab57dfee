"""A rollout driven the way kube-scheduler drives an extender: the demo's scheduler and the
rollout benchmark's load generator (``bench/bench_rollout.py``).

For each pending pod (``spec.schedulerName`` = ours, no node yet), in the given order, one cycle as
kube-scheduler 1.3x runs it (docs/scheduler.md):

1. **Filter**: starting where the previous cycle stopped, walk the nodes and keep those that are
   Ready, schedulable and fit the pod's requests (NodeResourcesFit) until ``numNodesToFind`` are
   found — ``percentageOfNodesToScore`` adaptive: ``max(5, 50 - nodes/125)`` % of the nodes, at least
   100 — then send them to the extender's filter (``NodeNames``: ``nodeCacheCapable: true``).
2. **Score**: the default score plugins (NodeResourcesFit LeastAllocated, BalancedAllocation,
   PodTopologySpread with the system default constraints) plus the extender's prioritize,
   ``score x weight x 10``; the highest total wins, ties broken at random.
3. **Assume and bind asynchronously**: the pod's requests are added to the node in this driver's
   cache at once and the next pod's cycle starts right away, while a pool of parallel binders
   (kube-scheduler's binding goroutines) sends the extender's bind (or, without a bind verb, the
   Binding itself). A failed bind forgets the assumption and requeues the pod.

Framework-free (HTTP + orjson + the scoring package's default plugins): it talks to the extender
and the Kubernetes API over the network only. Per call it records the client-side latency and the
server's own (``Server-Timing``).
"""

from __future__ import annotations

import http.client
import random
import ssl
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import numpy as np
import orjson

from apps.scheduler.scoring import default_plugins as plugins
from apps.scheduler.scoring.state import PodInfo
from apps.scheduler.wire import WireError, node_record, parse_pod

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_PERCENTAGE_OF_NODES_TO_SCORE = 5


def nodes_to_find(total: int, percentage: int = 0) -> int:
    """kube-scheduler's numFeasibleNodesToFind (pkg/scheduler/schedule_one.go)."""
    if total < MIN_FEASIBLE_NODES_TO_FIND:
        return total
    adaptive = percentage or max(MIN_PERCENTAGE_OF_NODES_TO_SCORE, 50 - total // 125)
    return min(total, max(total * adaptive // 100, MIN_FEASIBLE_NODES_TO_FIND))


@dataclass(frozen=True)
class TLS:
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file or None)
        if self.cert_file:
            ctx.load_cert_chain(self.cert_file, self.key_file or None)
        return ctx


class Endpoint:
    """A keep-alive HTTP(S) connection per thread to one base URL (kube-scheduler's http.Client)."""

    def __init__(self, base_url: str, *, timeout: float = 5.0, tls: TLS | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        parts = urlsplit(base_url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.ssl_context = (tls or TLS()).context() if self.https else None
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self.https:
                conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                   context=self.ssl_context)
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        """(status, parsed JSON body, server-side ms from Server-Timing or -1)."""
        payload = orjson.dumps(body) if body is not None and not isinstance(body, bytes) else body
        for attempt in range(2):
            conn = self._connection()
            try:
                conn.request(method, self.prefix + path, body=payload, headers=self.headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, ConnectionError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        server_ms = -1.0
        timing = resp.getheader("Server-Timing") or ""
        if "dur=" in timing:
            try:
                server_ms = float(timing.split("dur=", 1)[1].split(",", 1)[0].split(";", 1)[0])
            except ValueError:
                server_ms = -1.0
        return resp.status, orjson.loads(data) if data else None, server_ms


@dataclass(frozen=True)
class ExtenderConfig:
    """The KubeSchedulerConfiguration's ``extenders`` entry."""

    url: str  # urlPrefix, e.g. http://127.0.0.1:8001/scheduler
    weight: int = 5
    filter_verb: str = "filter"
    prioritize_verb: str = "prioritize"
    bind_verb: str = "bind"  # "" = kube-scheduler binds through the API (DefaultBinder)
    http_timeout: float = 5.0
    ignorable: bool = True
    tls: TLS | None = None


@dataclass
class CallStats:
    client_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)

    def add(self, client: float, server: float) -> None:
        self.client_ms.append(client)
        if server >= 0:
            self.server_ms.append(server)


@dataclass
class RolloutResult:
    pods: int
    scheduled: dict[str, str]  # "namespace/name" -> node
    unschedulable: dict[str, str]  # "namespace/name" -> why
    seconds: float  # first cycle started -> last bind answered
    filter: CallStats
    prioritize: CallStats
    bind: CallStats
    bind_errors: list[str]
    extender_errors: list[str]

    @property
    def pods_per_s(self) -> float:
        return len(self.scheduled) / self.seconds if self.seconds > 0 else 0.0


class KubeScheduler:
    """One scheduler instance: its node/pod cache (from one list of the API) and the cycle."""

    def __init__(self, *, api_url: str, extender: ExtenderConfig | None, scheduler_name: str = "netaware-scheduler",
                 percentage_of_nodes_to_score: int = 0, bind_parallelism: int = 16, seed: int = 0,
                 api_token: str = "") -> None:
        headers = {"Authorization": f"Bearer {api_token}"} if api_token else {}
        self.api = Endpoint(api_url, timeout=10.0, headers=headers)
        self.extender = extender
        self.ext = Endpoint(extender.url, timeout=extender.http_timeout, tls=extender.tls) if extender else None
        self.scheduler_name = scheduler_name
        self.percentage = percentage_of_nodes_to_score
        self.bind_parallelism = bind_parallelism
        self.rng = random.Random(seed)
        self.order: list[str] = []  # node names, sorted; arrays below are indexed alike
        self.index: dict[str, int] = {}
        empty = np.zeros(0, dtype=np.int64)
        self.nodes = plugins.NodeArrays(empty, empty, empty.copy(), empty.copy(), empty)
        self.pod_count = empty.copy()
        self.ready = np.zeros(0, dtype=bool)
        self.zone_count = 0
        self.next_start = 0
        self.matching: dict[tuple[str, str], np.ndarray] = {}  # (namespace, app) -> pods per node
        # (monotonic time, event, "namespace/name", detail) when tracing: "filter" (sent), "scores"
        # (prioritize answered: {node: score}), "bound" (bind answered without error).
        self.trace: list[tuple[float, str, str, Any]] | None = None

    # --- cache ------------------------------------------------------------------------------------

    def _get(self, path: str) -> Any:
        status, body, _ = self.api.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}: {body}")
        return body

    def load(self) -> list[dict[str, Any]]:
        """List nodes and pods; returns the pending pods this scheduler is responsible for."""
        records = []
        for obj in self._get("/api/v1/nodes").get("items") or []:
            try:
                records.append(node_record(obj))
            except WireError:
                continue
        records.sort(key=lambda r: r.name)
        self.order = [r.name for r in records]
        self.index = {name: i for i, name in enumerate(self.order)}
        zones = sorted({r.resources.labels.get(plugins.ZONE_KEY) or r.resources.zone for r in records} - {""})
        codes = {z: i for i, z in enumerate(zones)}
        self.zone_count = len(zones)
        self.nodes = plugins.NodeArrays(
            np.array([r.resources.allocatable_cpu_millicores for r in records], dtype=np.int64),
            np.array([r.resources.allocatable_memory_bytes for r in records], dtype=np.int64),
            np.zeros(len(records), dtype=np.int64), np.zeros(len(records), dtype=np.int64),
            np.array([codes.get(r.resources.labels.get(plugins.ZONE_KEY) or r.resources.zone, -1) for r in records],
                     dtype=np.int64))
        self.pod_count = np.zeros(len(records), dtype=np.int64)
        self.ready = np.array([r.ready for r in records], dtype=bool)
        self.matching = {}
        pending = []
        for obj in self._get("/api/v1/pods").get("items") or []:
            spec = obj.get("spec") or {}
            phase = (obj.get("status") or {}).get("phase") or ""
            if phase in ("Succeeded", "Failed"):
                continue
            node = spec.get("nodeName") or ""
            try:
                pod = parse_pod(obj)
            except WireError:
                continue
            if node:
                self._add(node, pod)
            elif spec.get("schedulerName") == self.scheduler_name:
                pending.append(obj)
        return pending

    def _app(self, pod: PodInfo) -> tuple[str, str]:
        return (pod.namespace, pod.labels.get("app", pod.name))

    def _add(self, node: str, pod: PodInfo, sign: int = 1) -> None:
        """Count the pod on the node (sign -1: forget it). Only the scheduling loop's thread calls it."""
        i = self.index.get(node)
        if i is None:
            return
        self.nodes.req_cpu[i] += sign * pod.cpu_request_millicores
        self.nodes.req_mem[i] += sign * pod.memory_request_bytes
        self.pod_count[i] += sign
        counts = self.matching.setdefault(self._app(pod), np.zeros(len(self.order), dtype=np.int64))
        counts[i] += sign

    # --- one cycle ----------------------------------------------------------------------------------

    def feasible(self, pod: PodInfo) -> list[str]:
        """Walk the nodes from where the last cycle stopped, keeping those that are ready and fit,
        until numNodesToFind are found (kube-scheduler's findNodesThatPassFilters)."""
        total = len(self.order)
        if total == 0:
            return []
        wanted = nodes_to_find(total, self.percentage)
        nodes = self.nodes
        fits = (self.ready & (self.pod_count + 1 <= plugins.DEFAULT_MAX_PODS)
                & (nodes.req_cpu + pod.cpu_request_millicores <= nodes.alloc_cpu)
                & (nodes.req_mem + pod.memory_request_bytes <= nodes.alloc_mem))
        rotated = (self.next_start + np.arange(total)) % total
        hits = np.flatnonzero(fits[rotated])[:wanted]
        checked = int(hits[-1]) + 1 if hits.size == wanted else total
        self.next_start = (self.next_start + checked) % total
        return [self.order[i] for i in rotated[hits].tolist()]

    def plugin_scores(self, pod: PodInfo, names: Sequence[str]) -> dict[str, int]:
        """The default score plugins' weighted sum per candidate (integer, as kube-scheduler)."""
        idx = np.fromiter((self.index[n] for n in names), dtype=np.int64, count=len(names))
        nodes = self.nodes
        candidates = plugins.NodeArrays(nodes.alloc_cpu[idx], nodes.alloc_mem[idx], nodes.req_cpu[idx],
                                        nodes.req_mem[idx], nodes.zone[idx])
        counts = self.matching.get(self._app(pod))
        if counts is None:
            counts = np.zeros(len(self.order), dtype=np.int64)
        labelled = nodes.zone >= 0
        zone_totals = np.bincount(nodes.zone[labelled], weights=counts[labelled],
                                  minlength=self.zone_count).astype(np.int64)
        weights = plugins.DEFAULT_WEIGHTS
        total = (weights[plugins.NODE_RESOURCES_FIT] * plugins.least_allocated_scores(candidates, pod)
                 + weights[plugins.BALANCED_ALLOCATION] * plugins.balanced_allocation_vector(candidates, pod)
                 + weights[plugins.POD_TOPOLOGY_SPREAD]
                 * plugins.pod_topology_spread_vector(candidates, counts[idx], zone_totals))
        return dict(zip(names, total.tolist(), strict=True))

    def schedule_one(self, obj: dict[str, Any], pod: PodInfo, result: RolloutResult) -> str | None:
        candidates = self.feasible(pod)
        if not candidates:
            result.unschedulable[f"{pod.namespace}/{pod.name}"] = "0 nodes fit the pod's requests"
            return None
        extender_scores: dict[str, int] = {}
        if self.ext is not None and self.extender is not None:
            args = {"Pod": obj, "Nodes": None, "NodeNames": candidates}
            if self.extender.filter_verb:
                self._trace("filter", pod, candidates)
                started = time.perf_counter()
                status, answer, server = self.ext.request("POST", f"/{self.extender.filter_verb}", args)
                result.filter.add((time.perf_counter() - started) * 1000, server)
                if status == 200 and isinstance(answer, dict) and not answer.get("Error"):
                    candidates = list(answer.get("NodeNames") or [])
                elif not self.extender.ignorable:
                    result.unschedulable[f"{pod.namespace}/{pod.name}"] = f"extender filter: {status} {answer}"
                    return None
                else:
                    result.extender_errors.append(f"filter {pod.name}: {status} {answer}")
            if not candidates:
                result.unschedulable[f"{pod.namespace}/{pod.name}"] = "the extender filtered out every node"
                return None
            if self.extender.prioritize_verb:
                args["NodeNames"] = candidates
                started = time.perf_counter()
                status, answer, server = self.ext.request("POST", f"/{self.extender.prioritize_verb}", args)
                result.prioritize.add((time.perf_counter() - started) * 1000, server)
                if status == 200 and isinstance(answer, list):
                    extender_scores = {e["Host"]: int(e["Score"]) for e in answer}
                    self._trace("scores", pod, extender_scores)
                else:
                    result.extender_errors.append(f"prioritize {pod.name}: {status} {answer}")
        totals = plugins.combine_with_extender(self.plugin_scores(pod, candidates), extender_scores,
                                               self.extender.weight if self.extender else 0)
        best = max(totals.values())
        top = [n for n in candidates if totals.get(n) == best]
        return top[0] if len(top) == 1 else self.rng.choice(top)

    def _trace(self, event: str, pod: PodInfo, detail: Any) -> None:
        if self.trace is not None:
            self.trace.append((time.monotonic(), event, f"{pod.namespace}/{pod.name}", detail))

    # --- binding -------------------------------------------------------------------------------------

    def bind(self, pod: PodInfo, node: str, result: RolloutResult) -> str:
        """"" when bound, else the error (the caller requeues the pod)."""
        error = self._bind(pod, node, result)
        if not error:
            self._trace("bound", pod, node)
        return error

    def _bind(self, pod: PodInfo, node: str, result: RolloutResult) -> str:
        started = time.perf_counter()
        if self.ext is not None and self.extender is not None and self.extender.bind_verb:
            args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node}
            try:
                status, answer, server = self.ext.request("POST", f"/{self.extender.bind_verb}", args)
            except Exception as exc:
                return f"extender bind: {type(exc).__name__}: {exc}"
            result.bind.add((time.perf_counter() - started) * 1000, server)
            if status != 200:
                return f"extender bind: HTTP {status}: {answer}"
            return str((answer or {}).get("Error") or "")
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod.name, "namespace": pod.namespace,
                                                                    "uid": pod.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        path = f"/api/v1/namespaces/{quote(pod.namespace, safe='')}/pods/{quote(pod.name, safe='')}/binding"
        try:
            status, answer, _ = self.api.request("POST", path, body)
        except Exception as exc:
            return f"binding: {type(exc).__name__}: {exc}"
        result.bind.add((time.perf_counter() - started) * 1000, -1.0)
        return "" if status in (200, 201) else f"binding: HTTP {status}: {answer}"

    # --- the rollout ----------------------------------------------------------------------------------

    def run(self, pending: Iterable[dict[str, Any]], *, max_attempts: int = 3) -> RolloutResult:
        queue: deque[tuple[dict[str, Any], PodInfo, int]] = deque(
            (obj, parse_pod(obj), 0) for obj in pending)
        result = RolloutResult(len(queue), {}, {}, 0.0, CallStats(), CallStats(), CallStats(), [], [])
        inflight: dict[Future[str], tuple[dict[str, Any], PodInfo, str, int]] = {}
        done = threading.Condition()
        finished: list[Future[str]] = []

        def on_done(future: Future[str]) -> None:
            with done:
                finished.append(future)
                done.notify()

        def settle(block: bool) -> None:
            with done:
                if block and not finished:
                    done.wait(1.0)
                ready, finished[:] = list(finished), []
            for future in ready:
                obj, pod, node, attempt = inflight.pop(future)
                error = future.result()
                if not error:
                    result.scheduled[f"{pod.namespace}/{pod.name}"] = node
                    continue
                self._add(node, pod, sign=-1)  # forget the assumption
                result.bind_errors.append(f"{pod.namespace}/{pod.name} -> {node}: {error}")
                if attempt + 1 < max_attempts:
                    queue.append((obj, pod, attempt + 1))
                else:
                    result.unschedulable[f"{pod.namespace}/{pod.name}"] = error

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=self.bind_parallelism, thread_name_prefix="bind") as binders:
            while queue or inflight:
                settle(block=not queue)
                if not queue:
                    continue
                obj, pod, attempt = queue.popleft()
                node = self.schedule_one(obj, pod, result)
                if node is None:
                    continue
                self._add(node, pod)  # assume
                future = binders.submit(self.bind, pod, node, result)
                inflight[future] = (obj, pod, node, attempt)
                future.add_done_callback(on_done)
        result.seconds = time.perf_counter() - started
        return result


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def shuffled(items: Sequence[Any], seed: int) -> list[Any]:
    out = list(items)
    random.Random(seed).shuffle(out)
    return out
