#!/usr/bin/env python
"""Slowloris against running servers: with N connections that stall (headers a byte at a time, a
declared body that never comes, idle), how long /healthz of the web and the extender's verbs and
/readyz take to answer (issue 21: within 1 s).

    bench/bench_slowloris.py --web http://127.0.0.1:8000 --extender http://127.0.0.1:8001 \
        --extender-health http://127.0.0.1:8002 [--connections 100] [--rounds 3] [--json]

Per server and kind of slow client: the connections are opened, then ``--rounds`` x 5 requests are
timed (a fresh connection each, as a kubelet probe or kube-scheduler opens one); median and maximum
in ms, and the load average, are printed. Nothing is started here: point it at ``scripts/up.sh``'s
stack (or any running one).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import socket
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

KINDS = {
    "headers": b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nX-a: ",
    "headers-drip": b"G",
    "body": b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n{\"Pod\":",
    "idle": b"",
}
FILTER_BODY = json.dumps({"Pod": {"metadata": {"name": "bench-slowloris", "namespace": "default", "uid": "u1",
                                               "labels": {"app": "frontend"}}, "spec": {}},
                          "Nodes": None, "NodeNames": ["n1", "n2"]}).encode()


@contextlib.contextmanager
def slow_clients(url: str, kind: str, count: int) -> Iterator[list[socket.socket]]:
    parts = urlsplit(url)
    socks = []
    try:
        for _ in range(count):
            sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
            if KINDS[kind]:
                sock.sendall(KINDS[kind])
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def timed(url: str, method: str, path: str, body: bytes | None = None) -> tuple[int, float]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    started = time.perf_counter()
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started
    except OSError:
        return 0, time.perf_counter() - started
    finally:
        conn.close()


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    targets: list[tuple[str, str, str, str, str, bytes | None]] = [
        ("web /healthz", args.web, args.web, "GET", "/healthz", None)]
    if args.extender:
        targets.append(("extender /scheduler/filter", args.extender, args.extender, "POST", "/scheduler/filter",
                        FILTER_BODY))
    if args.extender_health:
        targets.append(("extender /readyz", args.extender, args.extender_health, "GET", "/readyz", None))
    rows = []
    for name, attacked, url, method, path, body in targets:
        for kind in KINDS:
            with slow_clients(attacked, kind, args.connections):
                time.sleep(0.5)
                samples = [timed(url, method, path, body) for _ in range(args.rounds * 5)]
            took = [t * 1000 for _, t in samples]
            rows.append({"target": name, "slow_clients": f"{args.connections} {kind}",
                         "answered": sum(1 for status, _ in samples if status and status < 500),
                         "requests": len(samples), "median_ms": round(statistics.median(took), 1),
                         "max_ms": round(max(took), 1)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--web", required=True)
    parser.add_argument("--extender", default="")
    parser.add_argument("--extender-health", default="")
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = run(args)
    meta = {"load_average": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version(),
            "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps({"rows": rows, **meta}, indent=2))
    else:
        for row in rows:
            print(f"{row['target']:<28} {row['slow_clients']:<18} {row['answered']}/{row['requests']} answered  "
                  f"median {row['median_ms']:>7} ms  max {row['max_ms']:>7} ms")
        print(json.dumps(meta))
    return 0 if all(row["answered"] == row["requests"] and row["max_ms"] < 1000 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
