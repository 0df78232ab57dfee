"""Test support for the metrics pipeline: an emulated cluster scraped by a real Prometheus.

Besides the emulator, a "frozen" target serves a probe histogram and sent/received counters that
never change: over any rate window its buckets increase by 0, so ``histogram_quantile`` returns NaN
and the loss ratio is 0/0 -- the "pair went quiet" case the pipeline must store as no data.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

from apps.probes import metrics
from apps.probes.emulator import Emulator
from apps.probes.scenario import load_scenario
from tests.support.prometheus import RunningPrometheus, start_prometheus

# Three nodes, two zones; n1 -> n3 and n3 -> n1 unreachable. Values chosen far apart so a mix-up shows.
TINY_SCENARIO = """
name: pipeline-tiny
defaults: {jitter: 0.15, node: {cpu: "2", memory: 4Gi}}
regions:
  - name: r1
    zones:
      - name: a
        nodes: [{name: n1}, {name: n2}]
      - name: b
        nodes: [{name: n3}]
links:
  - {between: [a, a], latency_ms: 1.0, loss_pct: 10.0, bandwidth_mbps: 500}
  - {between: [a, b], latency_ms: 10.0, loss_pct: 0.0, bandwidth_mbps: 100}
  - {between: [b, b], latency_ms: 1.0, loss_pct: 0.0, bandwidth_mbps: 100}
unreachable:
  - [n1, n3]
"""

FROZEN_SOURCE, FROZEN_TARGET = "q1", "q2"


def renamed_scenario(scenario_yaml: str, names: Mapping[str, str]) -> str:
    """The same scenario with its name, regions, zones and nodes renamed (values equal to a key)."""

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: rename(item) for key, item in value.items()}
        if isinstance(value, list):
            return [rename(item) for item in value]
        return names.get(value, value) if isinstance(value, str) else value

    return yaml.safe_dump(rename(yaml.safe_load(scenario_yaml)), sort_keys=False)


def _frozen_exposition() -> bytes:
    labels = f'source="{FROZEN_SOURCE}",target="{FROZEN_TARGET}"'
    lines = [f"# TYPE {metrics.RTT_HISTOGRAM} histogram"]
    for le in (*[repr(b) for b in metrics.RTT_BUCKETS[:5]], "+Inf"):
        lines.append(f'{metrics.RTT_HISTOGRAM}_bucket{{{labels},le="{le}"}} 7')
    lines += [
        f"{metrics.RTT_HISTOGRAM}_count{{{labels}}} 7",
        f"{metrics.RTT_HISTOGRAM}_sum{{{labels}}} 0.0001",
        f"# TYPE {metrics.PACKETS_SENT} counter",
        f"{metrics.PACKETS_SENT}{{{labels}}} 9",
        f"# TYPE {metrics.PACKETS_RECEIVED} counter",
        f"{metrics.PACKETS_RECEIVED}{{{labels}}} 7",
    ]
    return ("\n".join(lines) + "\n").encode()


class _QuietHandler(BaseHTTPRequestHandler):
    """A test server's handler: one whole answer per request, no access log."""

    def reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _FrozenHandler(_QuietHandler):
    def do_GET(self) -> None:
        self.reply(200, _frozen_exposition(), "text/plain; version=0.0.4")


@dataclass
class EmulatedCluster:
    emulator: Emulator
    prometheus: RunningPrometheus

    @property
    def url(self) -> str:
        return self.prometheus.url



def configure_pipeline(settings, url: str, *, width: int):
    """Point the pipeline at ``url`` with a 10 s rate window and ``width``-second pull windows
    (three initial windows); returns the pytest-django ``settings`` fixture it changed."""
    settings.PROMETHEUS_URL = url
    settings.NETAWARE = {**settings.NETAWARE, "RATE_WINDOW": "10s", "PULL_WINDOW_SECONDS": width,
                         "PULL_INITIAL_WINDOWS": 3}
    return settings


def at(epoch: int) -> datetime:
    """A UTC datetime for a Unix ``epoch``."""
    return datetime.fromtimestamp(epoch, tz=UTC)


@contextmanager
def emulated_cluster(scenario_yaml: str = TINY_SCENARIO, *, warmup_s: float = 12.0,
                     export: str = metrics.EXPORT_QUANTILES) -> Iterator[EmulatedCluster]:
    """Emulator (agents' default quantile export, or ``export="histogram"``) + frozen target + Prometheus
    (1 s scrapes), warmed up for ``warmup_s`` of data."""
    emulator = Emulator(load_scenario(scenario_yaml), seed=0, ping_rate_hz=100.0, bandwidth_interval_s=2.0,
                        export=export)
    server = emulator.serve()
    frozen = ThreadingHTTPServer(("127.0.0.1", 0), _FrozenHandler)
    threading.Thread(target=frozen.serve_forever, daemon=True).start()
    prometheus = None
    try:
        config = emulator.prometheus_config(f"127.0.0.1:{server.port}", scrape_interval="1s")
        config["scrape_configs"].append({
            "job_name": "frozen",
            "scrape_interval": "1s",
            "static_configs": [{"targets": [f"127.0.0.1:{frozen.server_address[1]}"]}],
        })
        prometheus = start_prometheus(config)
        n = len(emulator.node_names)
        if export == metrics.EXPORT_HISTOGRAM:
            prometheus.wait_for_series(metrics.PACKETS_SENT, minimum=n * (n - 1) + 1)
        else:
            prometheus.wait_for_series(metrics.LOSS_RATIO, minimum=n * (n - 1))
        time.sleep(warmup_s)
        yield EmulatedCluster(emulator=emulator, prometheus=prometheus)
    finally:
        if prometheus is not None:
            prometheus.stop()
        frozen.shutdown()
        frozen.server_close()
        server.stop()


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free 127.0.0.1 port in a daemon thread; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def slow_http_server(delay_s: float, *, status: int = 200, body: bytes = b'{"status":"success","data":'
                     b'{"resultType":"matrix","result":[]}}') -> Iterator[str]:
    """An HTTP server answering every request after ``delay_s`` (a Prometheus stuck on a heavy query)."""

    class Handler(_QuietHandler):
        def do_GET(self) -> None:
            time.sleep(delay_s)
            with contextlib.suppress(OSError):  # the client gave up first
                self.reply(status, body)

        do_POST = do_GET

    with _serving(Handler) as url:
        yield url


@contextmanager
def scripted_prometheus(respond) -> Iterator[str]:
    """An HTTP server speaking Prometheus' query API through ``respond(n, path, params) -> (status, body)``.

    ``n`` counts requests from 1; lets a test make Prometheus fail part-way through a run.
    """
    from urllib.parse import parse_qs, urlsplit

    counter = {"n": 0}
    lock = threading.Lock()

    class Handler(_QuietHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            with lock:
                counter["n"] += 1
                n = counter["n"]
            self.reply(*respond(n, parts.path, params))

    with _serving(Handler) as url:
        yield url
