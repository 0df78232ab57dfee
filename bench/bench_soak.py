#!/usr/bin/env python
"""Soak: the extender server under a steady load for minutes, over loopback.

    bench/bench_soak.py [--rate 300] [--seconds 120] [--nodes 500] [--json]

Brings up (like bench_rollout.py) the demo cluster API with N nodes and pending Online Boutique pods,
a ``*bench*`` database with the topology and AppGroup, and ``manage.py run_extender``; then sends
``--rate`` requests per second for ``--seconds`` seconds, open-loop (a request is due at its time
whether or not earlier ones were answered), from 8 client threads over kept-alive connections:
filter and prioritize of random pods on ~230 random candidates (kube-scheduler's sample at 500
nodes), and one bind in ten — each bind really binds, so the state changes throughout. Counts every
answer that is not a 200 or carries an ``Error`` (binds refused because a pod was bound already are
expected and counted apart), and reports client-side p50/p99, the server-side p99 (Server-Timing),
the rate achieved and the extender's RSS at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cluster

_cluster.setup_environment()

import numpy as np  # noqa: E402
import orjson  # noqa: E402
import yaml  # noqa: E402


def soak(url: str, pods: list[dict[str, Any]], nodes: list[str], *, rate: float, seconds: float,
         threads: int = 8, seed: int = 1) -> dict[str, Any]:
    from apps.demo.rollout import Endpoint, nodes_to_find

    endpoint = Endpoint(url, timeout=5.0)
    sample = min(len(nodes), nodes_to_find(len(nodes)))
    start = time.monotonic() + 0.5
    total = int(rate * seconds)
    lock = threading.Lock()
    client_ms: list[float] = []
    server_ms: list[float] = []
    errors: list[str] = []
    refused_binds = [0]
    late = [0]

    def worker(k: int) -> None:
        rng = random.Random(seed * 1000 + k)
        for i in range(k, total, threads):
            due = start + i / rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            elif wait < -0.05:
                with lock:
                    late[0] += 1
            pod = rng.choice(pods)
            if i % 10 == 9:
                verb = "bind"
                body: Any = {"PodName": pod["metadata"]["name"], "PodNamespace": pod["metadata"]["namespace"],
                             "PodUID": pod["metadata"].get("uid", ""), "Node": rng.choice(nodes)}
            else:
                verb = "filter" if i % 2 else "prioritize"
                body = {"Pod": pod, "Nodes": None, "NodeNames": rng.sample(nodes, sample)}
            sent = time.perf_counter()
            try:
                status, answer, server = endpoint.request("POST", f"/{verb}", body)
            except Exception as exc:
                with lock:
                    errors.append(f"{verb}: {type(exc).__name__}: {exc}")
                continue
            took = (time.perf_counter() - sent) * 1000
            problem = ""
            if status != 200:
                problem = f"{verb}: HTTP {status}"
            elif verb == "prioritize" and not isinstance(answer, list):
                problem = f"prioritize: {answer}"
            elif verb != "prioritize" and answer.get("Error"):
                if verb == "bind" and "already bound" in answer["Error"]:
                    with lock:
                        refused_binds[0] += 1
                else:
                    problem = f"{verb}: {answer['Error']}"
            with lock:
                client_ms.append(took)
                if server >= 0:
                    server_ms.append(server)
                if problem:
                    errors.append(problem)

    began = time.monotonic()
    workers = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    elapsed = time.monotonic() - max(began, start)
    return {
        "requests": len(client_ms) + len([e for e in errors if "Error" in e or "HTTP" in e]),
        "answered": len(client_ms),
        "rate_achieved": round(len(client_ms) / elapsed, 1),
        "elapsed_s": round(elapsed, 3),
        "errors": len(errors),
        "error_examples": errors[:5],
        "binds_refused_already_bound": refused_binds[0],
        "late_sends": late[0],
        "client_p50_ms": round(float(np.percentile(client_ms, 50)), 3) if client_ms else None,
        "client_p99_ms": round(float(np.percentile(client_ms, 99)), 3) if client_ms else None,
        "server_p50_ms": round(float(np.percentile(server_ms, 50)), 3) if server_ms else None,
        "server_p99_ms": round(float(np.percentile(server_ms, 99)), 3) if server_ms else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    regions, zones, per_zone = _cluster.cluster_shape(args.nodes)
    topology = _cluster.synthetic_topology(regions, zones, per_zone, np.random.default_rng(1))
    appgroup_doc = yaml.safe_load(_cluster.APPGROUP_FILE.read_text())
    _cluster.ensure_database()
    _cluster.seed_database(topology, appgroup_doc)
    objects = _cluster.cluster_objects(topology, appgroup_doc, args.pods, 1)
    nodes = list(topology.nodes)
    del topology
    procs = _cluster.Procs()
    out: dict[str, Any] = {"rate": args.rate, "seconds": args.seconds, "nodes": args.nodes}
    try:
        api_url = _cluster.start_api(procs, objects, "api")
        port, health = _cluster.free_port(), _cluster.free_port()
        env = {**os.environ, "KUBE_API_URL": api_url, "NETAWARE_EXTENDER_SOURCE": "kubernetes", "LOG_LEVEL": "WARNING"}
        extender = procs.start("extender", [sys.executable, "manage.py", "run_extender", "--bind",
                                            f"127.0.0.1:{port}", "--health-bind", f"127.0.0.1:{health}"], env, port)
        _cluster.wait_ready(health, extender, procs.logs / "extender.log")
        from apps.demo.rollout import Endpoint

        listed = Endpoint(api_url).request("GET", "/api/v1/pods")[1]["items"]  # with the UIDs the API gave
        out.update(soak(f"http://127.0.0.1:{port}/scheduler", listed, nodes, rate=args.rate, seconds=args.seconds))
        out["rss_mib"] = round(max(_cluster.rss_mib(pid)[0] for pid in _cluster.process_tree(extender.pid)), 1)
        out["extender_alive"] = extender.poll() is None
    finally:
        procs.stop()
    out["logs"] = str(procs.logs)
    if args.json:
        print(orjson.dumps(out).decode())
    else:
        for key, value in out.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
