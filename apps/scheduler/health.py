"""The extender's health and metrics port: ``/healthz``, ``/readyz`` and ``/metrics`` over plain HTTP.

It is separate from the extender port because that one requires kube-scheduler's client certificate
(mutual TLS), which kubelet probes and Prometheus do not present. ``/metrics`` wants
``Authorization: Bearer <NETAWARE_METRICS_TOKEN>``; with no token configured it is open in
development and absent (404) in production.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from netaware_core.metrics import authorization_status

from . import metrics
from .runtime import current_runtime

log = logging.getLogger(__name__)


class _Handler(BaseHTTPRequestHandler):
    server_version = "netaware-extender"

    def log_message(self, format: str, *args: object) -> None:  # quiet: probes every few seconds
        log.debug("health %s", format % args)

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b'{"status":"ok"}')
        elif path == "/readyz":
            rt = current_runtime()
            ready, why = rt.serving() if rt is not None else (False, "extender runtime not started")
            body: dict[str, object] = {"ready": ready, "reason": why}
            if rt is not None:  # what the scheduling cache holds (operators, the demo's rollout)
                state = rt.cache.view().state
                topology = state.topology
                # Readiness is "synced", not "fresh": a stale topology degrades the scores (they fall
                # back to the other scorers) but must not take the extender out of kube-scheduler's
                # reach. Whoever needs fresh data (the demo's first rollout) reads these fields.
                body.update(nodes=len(state.nodes), topology_nodes=topology.size,
                            measured_nodes=len(topology.measured_nodes.intersection(state.nodes)),
                            topology_stale=topology.stale_reason,
                            appgroups=sorted(f"{g.namespace}/{g.name}" for g in state.appgroups))
                body["degraded"] = degraded(rt)
            self._send(200 if ready else 503, orjson.dumps(body))
        elif path == "/metrics":
            status = authorization_status(self.headers.get("Authorization", ""))
            if status != 200:
                self._send(status, orjson.dumps({"error": "unauthorized" if status == 401 else "not found"}))
                return
            self._send(200, generate_latest(metrics.REGISTRY), CONTENT_TYPE_LATEST)
        else:
            self._send(404, b'{"error":"not found"}')


# What the request pool is doing (``netaware_core.rsgi.Stats.snapshot``), set by the server's entry point.
request_stats: Callable[[], dict[str, int]] | None = None


def degraded(rt: Any) -> list[str]:
    """What works less well than it should, without taking the extender out of kube-scheduler's
    reach (readiness stays "synced"; liveness is untouched): failing sources of the scheduling cache
    (a hung or refusing Kubernetes API, the database), the decision log and placement writers, and a
    request pool with every thread busy and requests waiting."""
    notes = [f"{name}: {health.detail or 'failing'}" for name, health in sorted(rt.cache.view().sources.items())
             if not health.ok]
    if rt.decisions.failing:
        notes.append(f"decision log: {rt.decisions.failing}")
    if rt.placements.failing:
        notes.append(f"placements: {rt.placements.failing}")
    if request_stats is not None:
        pool = request_stats()
        if pool["waiting"] and pool["running"] >= pool["threads"]:
            notes.append(f"requests: all {pool['threads']} request threads busy, {pool['waiting']} waiting")
    return notes


def serve(address: str) -> ThreadingHTTPServer:
    """Start the health server on ``host:port`` in a daemon thread."""
    host, _, port = address.rpartition(":")
    server = ThreadingHTTPServer((host.strip("[]") or "0.0.0.0", int(port)), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    return server
