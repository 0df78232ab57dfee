"""Emulated service-mesh telemetry: the series Istio's sidecars, Linkerd's proxies and an OpenTelemetry
service-graph connector would export for an application whose call graph is known (docs/traffic.md).

Framework-free. Each call edge of the AppGroup (a dependency, caller -> callee, by controller name: what
the meshes name workloads by) gets a request rate, request/response sizes and a median duration; on every
``render`` the counters and histograms advance by the wall-clock time elapsed, with Poisson request counts,
lognormal durations and sizes (noise), 0.5 % errors, and -- where asked -- idle periods during which an
edge carries nothing. Redis-style edges (a callee named ``redis*``) are TCP in Istio and Linkerd: bytes
only, no HTTP requests. A Prometheus scraping ``/metrics`` sees what it would see from the real meshes.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from apps.appgroups.graph import AppGroupSpec

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FORMATS = ("istio", "linkerd", "otel")
DURATION_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
SIZE_BUCKETS = (1, 10, 100, 1000, 10000, 100000, 1000000, 10000000)
ERROR_RATIO = 0.005


@dataclass(frozen=True)
class Call:
    source: str
    target: str
    rps: float
    request_bytes: float = 300.0
    response_bytes: float = 2000.0
    p50_ms: float = 5.0
    tcp: bool = False  # bytes only in Istio/Linkerd (a Redis connection)
    idle_period_s: float = 0.0  # > 0: idle during the last ``idle_fraction`` of every period since the start
    idle_fraction: float = 0.0

    def busy(self, elapsed: float) -> bool:
        """Whether the edge carries traffic ``elapsed`` seconds after the emulator started."""
        if self.idle_period_s <= 0 or self.idle_fraction <= 0:
            return True
        return (elapsed % self.idle_period_s) < self.idle_period_s * (1 - self.idle_fraction)


def calls_of(group: AppGroupSpec, *, base_rps: float = 4.0,
             idle: Mapping[tuple[str, str], tuple[float, float]] | None = None) -> list[Call]:
    """The AppGroup's dependencies as calls between controllers (workload name when none): ``base_rps``
    scaled by the caller's weight, at least 1.5 req/s per edge; callees named ``redis*`` are TCP;
    dependencies more bandwidth- than latency-sensitive answer with 200 kB bodies. ``idle`` gives
    (period seconds, idle fraction) per (caller, callee) controller pair."""
    idle = idle or {}
    controller = {w.name: w.controller_name or w.name for w in group.workloads}
    out: list[Call] = []
    for w in group.workloads:
        for dep in w.dependencies:
            target = controller[dep.target]
            rps = max(1.5, base_rps * w.weight)
            bulk = dep.sensitivity.bandwidth > dep.sensitivity.latency
            period, fraction = idle.get((controller[w.name], target), (0.0, 0.0))
            out.append(Call(controller[w.name], target, rps, request_bytes=400.0,
                            response_bytes=200_000.0 if bulk else 1_500.0, p50_ms=4.0 + (3 * len(out)) % 11,
                            tcp=target.startswith("redis"), idle_period_s=period, idle_fraction=fraction))
    return out


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"


class _Histogram:
    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = np.asarray(bounds, dtype=float)
        self.counts = np.zeros(len(bounds) + 1, dtype=np.int64)  # per bucket, last = +Inf
        self.sum = 0.0

    def observe(self, values: np.ndarray) -> None:
        if values.size:
            self.counts += np.bincount(np.searchsorted(self.bounds, values, side="left"),
                                       minlength=self.counts.size)[: self.counts.size]
            self.sum += float(values.sum())

    def lines(self, name: str, labels: list[tuple[str, str]], *, scale: float = 1.0) -> list[str]:
        out, cumulative = [], 0
        for bound, count in zip([*self.bounds.tolist(), math.inf], self.counts.tolist(), strict=True):
            cumulative += count
            le = "+Inf" if math.isinf(bound) else f"{bound * scale:g}"
            out.append(f"{name}_bucket{_labels([*labels, ('le', le)])} {cumulative}")
        out.append(f"{name}_sum{_labels(labels)} {self.sum * scale:.6f}")
        out.append(f"{name}_count{_labels(labels)} {cumulative}")
        return out


@dataclass
class _EdgeCounters:
    ok: int = 0
    failed: int = 0
    sent: float = 0.0  # request bytes
    received: float = 0.0  # response bytes


class MeshEmulator:
    """Counters of every call edge in the chosen mesh formats, advancing with the clock."""

    def __init__(self, calls: Sequence[Call], *, namespace: str, formats: Sequence[str] = FORMATS, seed: int = 0,
                 clock: Callable[[], float] = time.time) -> None:
        unknown = [f for f in formats if f not in FORMATS]
        if unknown:
            raise ValueError(f"formats: unknown {', '.join(unknown)} (allowed: {', '.join(FORMATS)})")
        self.calls = list(calls)
        self.namespace = namespace
        self.formats = tuple(formats)
        self._clock = clock
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._last = self._start = clock()  # idle periods count from the start: every edge is busy first
        self._counters = [_EdgeCounters() for _ in self.calls]
        self._durations = [_Histogram(DURATION_BUCKETS_MS) for _ in self.calls]
        self._req_sizes = [_Histogram(SIZE_BUCKETS) for _ in self.calls]
        self._resp_sizes = [_Histogram(SIZE_BUCKETS) for _ in self.calls]

    def true_edges(self, *, now: float | None = None) -> set[tuple[str, str]]:
        now = self._clock() if now is None else now
        return {(c.source, c.target) for c in self.calls if c.busy(now - self._start)}

    def _advance(self, now: float) -> None:
        elapsed = min(max(0.0, now - self._last), 600.0)
        self._last = now
        if elapsed <= 0:
            return
        for i, call in enumerate(self.calls):
            if not call.busy(now - self._start):
                continue
            n = int(self._rng.poisson(call.rps * elapsed))
            if n == 0:
                continue
            failed = int(self._rng.binomial(n, ERROR_RATIO))
            c = self._counters[i]
            c.ok += n - failed
            c.failed += failed
            req = self._rng.lognormal(math.log(call.request_bytes), 0.3, n)
            resp = self._rng.lognormal(math.log(call.response_bytes), 0.3, n)
            c.sent += float(req.sum())
            c.received += float(resp.sum())
            self._req_sizes[i].observe(req)
            self._resp_sizes[i].observe(resp)
            self._durations[i].observe(self._rng.lognormal(math.log(call.p50_ms), 0.5, n))

    def render(self) -> bytes:
        with self._lock:
            self._advance(self._clock())
            lines: list[str] = []
            for fmt in self.formats:
                lines += getattr(self, f"_{fmt}")()
            return ("\n".join(lines) + "\n").encode()

    def _istio(self) -> list[str]:
        out = ["# TYPE istio_requests_total counter", "# TYPE istio_tcp_sent_bytes_total counter",
               "# TYPE istio_tcp_received_bytes_total counter", "# TYPE istio_request_duration_milliseconds histogram",
               "# TYPE istio_request_bytes histogram", "# TYPE istio_response_bytes histogram"]
        for i, call in enumerate(self.calls):
            c = self._counters[i]
            for reporter in ("source", "destination"):  # both ends report every call
                base = [("reporter", reporter), ("source_workload", call.source),
                        ("source_workload_namespace", self.namespace), ("destination_workload", call.target),
                        ("destination_workload_namespace", self.namespace)]
                if call.tcp:
                    out.append(f"istio_tcp_received_bytes_total{_labels(base)} {c.sent:.1f}")
                    out.append(f"istio_tcp_sent_bytes_total{_labels(base)} {c.received:.1f}")
                    continue
                out.append(f"istio_requests_total{_labels([*base, ('response_code', '200')])} {c.ok}")
                out.append(f"istio_requests_total{_labels([*base, ('response_code', '503')])} {c.failed}")
                out += self._durations[i].lines("istio_request_duration_milliseconds", base)
                out += self._req_sizes[i].lines("istio_request_bytes", base)
                out += self._resp_sizes[i].lines("istio_response_bytes", base)
        return out

    def _linkerd(self) -> list[str]:
        out = ["# TYPE response_total counter", "# TYPE tcp_write_bytes_total counter",
               "# TYPE tcp_read_bytes_total counter", "# TYPE response_latency_ms histogram"]
        for i, call in enumerate(self.calls):
            c = self._counters[i]
            base = [("direction", "outbound"), ("namespace", self.namespace), ("deployment", call.source),
                    ("dst_namespace", self.namespace), ("dst_deployment", call.target)]
            out.append(f"tcp_write_bytes_total{_labels([*base, ('peer', 'dst')])} {c.sent:.1f}")
            out.append(f"tcp_read_bytes_total{_labels([*base, ('peer', 'dst')])} {c.received:.1f}")
            if call.tcp:
                continue
            out.append(f"response_total{_labels([*base, ('classification', 'success'), ('status_code', '200')])} {c.ok}")
            out.append(f"response_total{_labels([*base, ('classification', 'failure'), ('status_code', '503')])} "
                       f"{c.failed}")
            out += self._durations[i].lines("response_latency_ms", base)
        return out

    def _otel(self) -> list[str]:
        out = ["# TYPE traces_service_graph_request_total counter",
               "# TYPE traces_service_graph_request_failed_total counter",
               "# TYPE traces_service_graph_request_server_seconds histogram",
               "# TYPE traces_service_graph_request_client_seconds histogram"]
        for i, call in enumerate(self.calls):
            c = self._counters[i]
            base = [("client", call.source), ("server", call.target), ("connection_type", "")]
            out.append(f"traces_service_graph_request_total{_labels(base)} {c.ok + c.failed}")
            out.append(f"traces_service_graph_request_failed_total{_labels(base)} {c.failed}")
            out += self._durations[i].lines("traces_service_graph_request_server_seconds", base, scale=0.001)
            out += self._durations[i].lines("traces_service_graph_request_client_seconds", base, scale=0.001)
        return out

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    body, status = b"not found: use /metrics\n", 404
                else:
                    body, status = emulator.render(), 200
                self.send_response(status)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer((host, port), Handler)
        thread = threading.Thread(target=httpd.serve_forever, name="mesh-emulator", daemon=True)
        thread.start()
        return httpd, thread
