"""Emulated cluster: serve, per scenario node, the metrics a real probe agent and node_exporter export.

The emulator is the demo's and the tests' stand-in for a cluster of probe agents (docs/scenarios.md).
Everything is drawn lazily: on each ``render`` the samples for the wall-clock time elapsed since the
previous one are generated at ``ping_rate_hz`` per directed pair in one vectorized step, so
counters and histograms advance exactly as if probes had been running all along and a Prometheus
scraping it sees the same ``rate()``/``increase()`` shapes as with real agents.

Distributions (documented in docs/scenarios.md):

* RTT: lognormal with shape ``sigma = jitter`` scaled so that its **p90 equals the scenario's
  ``latency_ms``** (the scenario's latency is the RTT the topology reports, and the topology
  reports p90 by default); p50 sits below and p99 above, so the three quantiles differ.
* loss: every probe is lost independently with probability ``loss_pct / 100``.
* bandwidth: a periodic "iperf3 test" per pair draws ``N(nominal, (0.03 nominal)^2)``.
* unreachable pairs: probes are sent but never answered; no RTT observation and no bandwidth.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from prometheus_client.utils import floatToGoString

from apps.probes import metrics
from apps.probes.scenario import Scenario

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_Z90 = 1.2815515655446004  # standard normal 0.9 quantile
_BANDWIDTH_NOISE = 0.03
_MAX_CELLS = 2_000_000  # pair x sample cells per vectorized step: bounds memory after a long idle
_NODE_PATH = re.compile(r"^/nodes/([^/]+)/metrics/?$")


def _labels(**labels: str) -> str:
    inner = ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    return floatToGoString(value)


@dataclass
class EmulatorServer:
    """A running HTTP server for an :class:`Emulator`; ``stop()`` shuts it down."""

    httpd: ThreadingHTTPServer
    thread: threading.Thread
    host: str

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class Emulator:
    """Metrics of every node of a scenario, advancing with the clock."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        ping_rate_hz: float = 5.0,
        clock: Callable[[], float] = time.time,
        bandwidth_interval_s: float = 60.0,
    ) -> None:
        if ping_rate_hz <= 0:
            raise ValueError("ping_rate_hz must be positive")
        if bandwidth_interval_s <= 0:
            raise ValueError("bandwidth_interval_s must be positive")
        self.scenario = scenario
        self.ping_rate_hz = float(ping_rate_hz)
        self.bandwidth_interval_s = float(bandwidth_interval_s)
        self._clock = clock
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self.renders = 0

        names = scenario.node_names
        self.node_names = names
        self._index = {name: i for i, name in enumerate(names)}
        pairs = [(s, t) for s in names for t in names if s != t]
        self._pairs = pairs
        n_pairs = len(pairs)
        # Pair rows grouped by source so one node's rows are a contiguous slice.
        self._rows_of: dict[str, range] = {}
        row = 0
        for name in names:
            count = len(names) - 1
            self._rows_of[name] = range(row, row + count)
            row += count

        latency = np.full(n_pairs, np.nan)
        jitter = np.zeros(n_pairs)
        loss = np.ones(n_pairs)
        bandwidth = np.full(n_pairs, np.nan)
        for i, (s, t) in enumerate(pairs):
            link = scenario.link(s, t)
            if link is None:
                continue
            latency[i] = link.latency_ms / 1000.0
            jitter[i] = link.jitter
            loss[i] = link.loss_pct / 100.0
            bandwidth[i] = link.bandwidth_mbps * 1e6
        self._reachable = ~np.isnan(latency)
        self._sigma = jitter
        # lognormal median m with p90 == nominal: m = nominal * exp(-z90 * sigma)
        self._log_median = np.where(self._reachable, np.log(np.where(self._reachable, latency, 1.0)) - _Z90 * jitter, 0.0)
        self._loss = loss
        self._bandwidth_nominal = bandwidth

        self._buckets = np.asarray(metrics.RTT_BUCKETS, dtype=float)
        self._bucket_labels = [_num(b) for b in metrics.RTT_BUCKETS] + ["+Inf"]
        self._hist = np.zeros((n_pairs, len(self._buckets) + 1), dtype=np.int64)  # non-cumulative, last=+Inf
        self._rtt_sum = np.zeros(n_pairs)
        self._sent = np.zeros(n_pairs, dtype=np.int64)
        self._received = np.zeros(n_pairs, dtype=np.int64)
        self._bw_value = np.full(n_pairs, np.nan)
        self._bw_ts = np.full(n_pairs, np.nan)

        n_nodes = len(names)
        self._cpus = [max(1, math.ceil(node.cpu_millicores / 1000)) for node in scenario.nodes]
        self._cpu_util = np.array([node.cpu_utilization for node in scenario.nodes])
        self._mem_util = np.array([node.memory_utilization for node in scenario.nodes])
        self._mem_total = np.array([node.memory_bytes for node in scenario.nodes], dtype=float)
        self._cpu_seconds = np.zeros((n_nodes, 3))  # idle, user, system summed over the node's cpus
        self._tx_bytes = np.zeros(n_nodes)
        self._mem_available = self._mem_total * (1.0 - self._mem_util)

        self._start = float(clock())
        self._last = self._start
        self._pings_done = 0
        # Each pair's first bandwidth test happens at a random offset inside the first interval.
        self._bw_next = self._start + self._rng.uniform(0.0, min(5.0, self.bandwidth_interval_s), n_pairs)
        self._bw_next[~self._reachable] = np.inf
        self._advance(self._start)

    # -- simulation -------------------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            self._advance_nodes(elapsed)
            self._last = now
        due = math.floor((now - self._start) * self.ping_rate_hz) - self._pings_done
        while due > 0:
            chunk = min(due, max(1, _MAX_CELLS // max(1, len(self._pairs))))
            self._ping(chunk)
            self._pings_done += chunk
            due -= chunk
        self._bandwidth_tests(now)

    def _ping(self, n: int) -> None:
        n_pairs = len(self._pairs)
        self._sent += n
        answered = self._rng.random((n_pairs, n)) >= self._loss[:, None]
        answered &= self._reachable[:, None]
        z = self._rng.standard_normal((n_pairs, n))
        rtt = np.exp(self._log_median[:, None] + self._sigma[:, None] * z)
        self._received += answered.sum(axis=1)
        self._rtt_sum += np.where(answered, rtt, 0.0).sum(axis=1)
        # bucket index per sample; le semantics: value <= bound falls in that bucket
        idx = np.searchsorted(self._buckets, rtt, side="left")
        idx = np.where(answered, idx, len(self._buckets) + 1)  # unanswered -> a discard column
        flat = idx + (np.arange(n_pairs)[:, None] * (len(self._buckets) + 2))
        counts = np.bincount(flat.ravel(), minlength=n_pairs * (len(self._buckets) + 2))
        self._hist += counts.reshape(n_pairs, len(self._buckets) + 2)[:, : len(self._buckets) + 1]

    def _bandwidth_tests(self, now: float) -> None:
        due = (self._bw_next <= now) & self._reachable
        if not due.any():
            return
        rows = np.flatnonzero(due)
        draws = self._bandwidth_nominal[rows] * (1.0 + _BANDWIDTH_NOISE * self._rng.standard_normal(rows.size))
        self._bw_value[rows] = np.maximum(draws, 0.0)
        # the latest test that was due happened at the last scheduled slot before now
        missed = np.floor((now - self._bw_next[rows]) / self.bandwidth_interval_s)
        self._bw_ts[rows] = self._bw_next[rows] + missed * self.bandwidth_interval_s
        self._bw_next[rows] = self._bw_ts[rows] + self.bandwidth_interval_s

    def _advance_nodes(self, elapsed: float) -> None:
        n_nodes = len(self.node_names)
        noise = self._rng.normal(0.0, 0.05, n_nodes)
        busy = np.clip(self._cpu_util + noise, 0.0, 1.0)
        cpus = np.asarray(self._cpus, dtype=float)
        self._cpu_seconds[:, 0] += (1.0 - busy) * elapsed * cpus
        self._cpu_seconds[:, 1] += 0.7 * busy * elapsed * cpus
        self._cpu_seconds[:, 2] += 0.3 * busy * elapsed * cpus
        mem = np.clip(self._mem_util + self._rng.normal(0.0, 0.02, n_nodes), 0.0, 1.0)
        self._mem_available = self._mem_total * (1.0 - mem)
        # background traffic: 1 MB/s per unit of CPU utilisation, plus noise
        rate = np.clip(1e6 * (0.2 + busy) * (1.0 + self._rng.normal(0.0, 0.1, n_nodes)), 0.0, None)
        self._tx_bytes += rate * elapsed

    # -- exposition -------------------------------------------------------------------------------
    def render(self, node: str) -> bytes:
        """Prometheus text exposition (0.0.4) of everything ``node``'s agent and node_exporter export."""
        if node not in self._index:
            raise KeyError(node)
        with self._lock:
            self._advance(float(self._clock()))
            self.renders += 1
            return self._render_locked(node)

    def _render_locked(self, node: str) -> bytes:
        spec = self.scenario.node(node)
        rows = self._rows_of[node]
        out: list[str] = []
        add = out.append

        add(f"# HELP {metrics.NODE_INFO} Node placement of this probe agent.")
        add(f"# TYPE {metrics.NODE_INFO} gauge")
        add(f"{metrics.NODE_INFO}{_labels(node=node, zone=spec.zone, region=spec.region)} 1.0")

        add(f"# HELP {metrics.RTT_HISTOGRAM} Round-trip time of UDP echo probes.")
        add(f"# TYPE {metrics.RTT_HISTOGRAM} histogram")
        for row in rows:
            count = int(self._received[row])
            if count == 0:
                continue  # a real agent creates the histogram child on its first answered probe
            target = self._pairs[row][1]
            cumulative = np.cumsum(self._hist[row])
            for le, value in zip(self._bucket_labels, cumulative, strict=True):
                add(f'{metrics.RTT_HISTOGRAM}_bucket{{source="{node}",target="{target}",le="{le}"}} {_num(float(value))}')
            add(f'{metrics.RTT_HISTOGRAM}_count{{source="{node}",target="{target}"}} {_num(float(count))}')
            add(f'{metrics.RTT_HISTOGRAM}_sum{{source="{node}",target="{target}"}} {_num(float(self._rtt_sum[row]))}')

        for name, values, help_text in (
            (metrics.PACKETS_SENT, self._sent, "Probe packets sent."),
            (metrics.PACKETS_RECEIVED, self._received, "Probe replies received in time."),
        ):
            add(f"# HELP {name} {help_text}")
            add(f"# TYPE {name} counter")
            for row in rows:
                target = self._pairs[row][1]
                add(f'{name}{{source="{node}",target="{target}"}} {_num(float(values[row]))}')

        for name, values, help_text in (
            (metrics.BANDWIDTH, self._bw_value, "Throughput of the latest iperf3 test."),
            (metrics.BANDWIDTH_TIMESTAMP, self._bw_ts, "Unix time of the latest iperf3 test."),
        ):
            add(f"# HELP {name} {help_text}")
            add(f"# TYPE {name} gauge")
            for row in rows:
                if math.isnan(values[row]):
                    continue
                target = self._pairs[row][1]
                add(f'{name}{{source="{node}",target="{target}"}} {_num(float(values[row]))}')

        i = self._index[node]
        cpus = self._cpus[i]
        add("# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.")
        add("# TYPE node_cpu_seconds_total counter")
        for cpu in range(cpus):
            for col, mode in enumerate(("idle", "user", "system")):
                add(f'node_cpu_seconds_total{{cpu="{cpu}",mode="{mode}"}} {_num(float(self._cpu_seconds[i, col] / cpus))}')
        add("# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.")
        add("# TYPE node_memory_MemTotal_bytes gauge")
        add(f"node_memory_MemTotal_bytes {_num(float(self._mem_total[i]))}")
        add("# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.")
        add("# TYPE node_memory_MemAvailable_bytes gauge")
        add(f"node_memory_MemAvailable_bytes {_num(float(self._mem_available[i]))}")
        add("# HELP node_network_transmit_bytes_total Network device statistic transmit_bytes.")
        add("# TYPE node_network_transmit_bytes_total counter")
        add(f'node_network_transmit_bytes_total{{device="eth0"}} {_num(float(self._tx_bytes[i]))}')
        return ("\n".join(out) + "\n").encode()

    def render_self(self) -> bytes:
        """The emulator's own metrics (served at ``/metrics``)."""
        lines = [
            "# HELP netaware_emulator_nodes Nodes in the emulated scenario.",
            "# TYPE netaware_emulator_nodes gauge",
            f'netaware_emulator_nodes{{scenario="{_escape(self.scenario.name)}"}} {len(self.node_names)}.0',
            "# HELP netaware_emulator_renders_total Node metric pages rendered.",
            "# TYPE netaware_emulator_renders_total counter",
            f"netaware_emulator_renders_total {float(self.renders)}",
            "# HELP netaware_emulator_ping_rate_hz Emulated probes per second per directed pair.",
            "# TYPE netaware_emulator_ping_rate_hz gauge",
            f"netaware_emulator_ping_rate_hz {self.ping_rate_hz}",
        ]
        return ("\n".join(lines) + "\n").encode()

    # -- serving ----------------------------------------------------------------------------------
    def static_configs(self, address: str) -> list[dict[str, Any]]:
        """Prometheus ``static_configs`` for every node, all served from ``address`` (host:port)."""
        return [
            {"targets": [address], "labels": {"node": name, "__metrics_path__": f"/nodes/{name}/metrics"}}
            for name in self.node_names
        ]

    def prometheus_config(self, address: str, *, scrape_interval: str = "5s",
                          job: str = "netaware-emulator") -> dict[str, Any]:
        """A complete prometheus.yml (as a dict) scraping every emulated node at ``address``."""
        return {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
            "scrape_configs": [
                {"job_name": job, "scrape_interval": scrape_interval, "static_configs": self.static_configs(address)}
            ],
        }

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> EmulatorServer:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                match = _NODE_PATH.match(path)
                if path == "/metrics":
                    self._send(200, emulator.render_self())
                elif match and match.group(1) in emulator._index:
                    self._send(200, emulator.render(match.group(1)))
                elif match:
                    self._send(404, f"unknown node {match.group(1)!r}\n".encode())
                else:
                    self._send(404, b"not found: use /nodes/<node>/metrics or /metrics\n")

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer((host, port), Handler)
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, name="emulator-http", daemon=True)
        thread.start()
        return EmulatorServer(httpd=httpd, thread=thread, host=host)
