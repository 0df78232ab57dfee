#!/usr/bin/env python
"""CPU per extender verb, without HTTP: kube-scheduler's calls replayed into the WSGI app in-process.

    bench/bench_extender_replay.py --nodes N --pods P [--reps 3] [--json] [--profile-out FILE]

Why: on a CPU-bound machine the real kube-scheduler's pods/s (``bench_kube_scheduler.py``) tracks the
extender's CPU per pod, and that benchmark takes many minutes and swings with the machine's load.
This one isolates the Python side of a call — ``apps.scheduler.extender_views.application`` with a
WSGI environ, as granian hands it over — so an optimisation of parsing, scoring, encoding, the
decision log or metrics shows as microseconds per verb within a minute.

Per repetition, in a fresh child process (binds are not repeatable): the demo cluster API
(``apps.demo.kubeapi``) with N Ready nodes and P pending Online Boutique pods (as ``bench_rollout``),
a ``*bench*`` database with the synthetic topology, and this process's extender runtime with its
informers on that API (``NETAWARE_EXTENDER_SOURCE=kubernetes``). Then, pod after pod in arrival
order, what kube-scheduler sends with ``nodeCacheCapable: true``: filter with the pod (as the API
lists it) and ``percentageOfNodesToScore`` (adaptive) of the node names, prioritize with the nodes
that passed, bind to the best one (a real Binding POST to the demo API; the informer's watch event
arrives as in production). Measured: each call's CPU time on the calling thread (``thread_time``),
and the whole process's CPU per pod (background threads included: informers, decision log,
placement writer). Medians over ``--reps``. ``--profile-out`` writes a cProfile of the first
repetition's replay loop (``python -m pstats``).
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cluster

_cluster.setup_environment(database="netaware_bench_replay", redis_db=12)

import numpy as np  # noqa: E402
import orjson  # noqa: E402
import yaml  # noqa: E402

VERBS = ("filter", "prioritize", "bind")


def _environ(path: str, body: bytes) -> dict[str, Any]:
    return {"REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
            "CONTENT_TYPE": "application/json", "wsgi.input": io.BytesIO(body)}


def _start_response(status: str, headers: list[tuple[str, str]]) -> None:
    if not status.startswith("200"):
        raise RuntimeError(f"extender answered {status}")


def child(args: argparse.Namespace) -> dict[str, Any]:
    from apps.demo.rollout import Endpoint, nodes_to_find

    regions, zones, per_zone = _cluster.cluster_shape(args.nodes)
    topology = _cluster.synthetic_topology(regions, zones, per_zone, np.random.default_rng(args.seed))
    appgroup_doc = yaml.safe_load(_cluster.APPGROUP_FILE.read_text())
    objects = _cluster.cluster_objects(topology, appgroup_doc, args.pods, args.seed)
    order = {o["metadata"]["name"]: i for i, o in enumerate(o for o in objects if o["kind"] == "Pod")}
    node_names = list(topology.nodes)
    procs = _cluster.Procs()
    try:
        api_url = _cluster.start_api(procs, objects, "api")
        # Before Django's settings are read (seed_database sets Django up).
        os.environ.update(KUBE_API_URL=api_url, NETAWARE_EXTENDER_SOURCE="kubernetes", LOG_LEVEL="WARNING",
                          NETAWARE_SCHEDULER_NAMES=_cluster.SCHEDULER_NAME, NETAWARE_EXTENDER_HEALTH_BIND="")
        _cluster.ensure_database()
        _cluster.seed_database(topology, appgroup_doc)
        del topology
        from apps.scheduler.runtime import process_runtime
        from netaware_site.extender_wsgi import application

        rt = process_runtime()
        deadline = time.monotonic() + 120
        while not rt.serving()[0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"runtime not serving: {rt.serving()[1]}")
            time.sleep(0.1)
        _, listing, _ = Endpoint(api_url).request("GET", "/api/v1/pods")
        pods = sorted((p for p in listing["items"] if p["metadata"]["name"] in order),
                      key=lambda p: order[p["metadata"]["name"]])
        rng = np.random.default_rng(args.seed)
        wanted = nodes_to_find(len(node_names))
        cpu_us: dict[str, list[float]] = {verb: [] for verb in VERBS}
        refused = 0
        profiler = None
        if args.profile_out:
            import cProfile

            profiler = cProfile.Profile(time.thread_time)  # CPU of this thread: no GIL waits, no I/O waits
            profiler.enable()
        process_cpu = time.process_time()
        wall = time.perf_counter()
        for pod in pods:
            start = int(rng.integers(len(node_names)))
            candidates = (node_names[start:] + node_names[:start])[:wanted]
            body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": candidates})
            t = time.thread_time_ns()
            answer = b"".join(application(_environ("/scheduler/filter", body), _start_response))
            cpu_us["filter"].append((time.thread_time_ns() - t) / 1000)
            passed = orjson.loads(answer)["NodeNames"] or []
            if not passed:
                continue
            body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": passed})
            t = time.thread_time_ns()
            answer = b"".join(application(_environ("/scheduler/prioritize", body), _start_response))
            cpu_us["prioritize"].append((time.thread_time_ns() - t) / 1000)
            scores = orjson.loads(answer)
            best = max(scores, key=lambda s: s["Score"])["Host"]
            meta = pod["metadata"]
            body = orjson.dumps({"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"],
                                 "Node": best})
            t = time.thread_time_ns()
            answer = b"".join(application(_environ("/scheduler/bind", body), _start_response))
            cpu_us["bind"].append((time.thread_time_ns() - t) / 1000)
            refused += bool(orjson.loads(answer)["Error"])
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile_out)
        seconds = time.perf_counter() - wall
        total_cpu = time.process_time() - process_cpu
        rt.stop(ship=False)
        bound = len(cpu_us["bind"]) - refused
        return {
            **{f"{verb}_cpu_us_p50": round(statistics.median(v), 1) for verb, v in cpu_us.items() if v},
            **{f"{verb}_cpu_us_mean": round(statistics.fmean(v), 1) for verb, v in cpu_us.items() if v},
            "process_cpu_ms_per_pod": round(total_cpu * 1000 / max(1, bound), 3),
            "candidates": wanted, "bound": bound, "refused": refused, "seconds": round(seconds, 2),
        }
    finally:
        procs.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile-out", default="", help="cProfile of the first repetition's replay loop")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(orjson.dumps(child(args)).decode())
        return
    runs = []
    for rep in range(args.reps):
        argv = [sys.executable, __file__, "--child", "--nodes", str(args.nodes), "--pods", str(args.pods),
                "--seed", str(args.seed)]
        if args.profile_out and rep == 0:
            argv += ["--profile-out", args.profile_out]
        out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
        runs.append(orjson.loads(out.strip().splitlines()[-1]))
    keys = [k for k in runs[0] if isinstance(runs[0][k], int | float)]
    result: dict[str, Any] = {
        "nodes": args.nodes, "pods": args.pods, "reps": args.reps,
        **{k: round(statistics.median(r[k] for r in runs), 3) for k in keys},
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "runs": runs,
    }
    if args.json:
        print(orjson.dumps(result).decode())
        return
    print("| nodes | pods | candidates | filter µs p50 | prioritize µs p50 | bind µs p50 | "
          "process CPU ms/pod | bound / refused | load avg |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.nodes} | {args.pods} | {result['candidates']} | {result.get('filter_cpu_us_p50')} | "
          f"{result.get('prioritize_cpu_us_p50')} | {result.get('bind_cpu_us_p50')} | "
          f"{result['process_cpu_ms_per_pod']} | {result['bound']} / {result['refused']} | {result['load_avg']} |")


if __name__ == "__main__":
    main()
