#!/usr/bin/env python
"""A rollout through the production extender server, driven the way kube-scheduler drives it.

    bench/bench_rollout.py --nodes N --pods P [--json] [--seed S] [--no-trivial] [--profile NAME]

Brings up, on free ports of 127.0.0.1 (nothing else needed but PostgreSQL and Redis):

* the demo cluster API (``python -m apps.demo.kubeapi``, its own process) holding N Ready nodes
  (5 regions, zones of 50 nodes; 100 per zone from 2,000 nodes) and P pending pods of Online
  Boutique (``scenarios/online-boutique-appgroup.yaml``: its 11 workloads with replicas, upstream
  requests, ``schedulerName: netaware-scheduler``), created in a shuffled order and scheduled in that
  order (not the API's by-name listing);
* a dedicated ``*bench*`` database with a dense synthetic N-node topology and the AppGroup;
* the extender, ``python manage.py run_extender`` (granian, one process), whose informers list and
  watch the API;

then runs ``apps.demo.rollout.KubeScheduler`` — kube-scheduler's cycle: NodeResourcesFit over
``percentageOfNodesToScore`` of the nodes (adaptive: ~230 of 500), the extender's filter, the
default score plugins plus the extender's prioritize (weight 5), assume, and binds through the
extender's bind verb in a pool of 16 parallel binders — so every bind changes the state the next
pod is scored against. The same driver then runs against a trivial extender (fixed answers,
served by the same HTTP server; kube-scheduler binds through the API itself) on a fresh copy of the
cluster, for the ratio.

Calibration (docs/benchmarks.md, "Rollouts through a real kube-scheduler"): this driver is a Python
model of kube-scheduler against a Python fake API that answers a Binding in ~3 ms; it measures the
extender's own cost per call, not what users get. In the same window at 500 nodes x 1,000 pods it
reported 1.9x the pods/s of the real netaware-scheduler (``bench/bench_kube_scheduler.py``): use that
benchmark for throughput claims, this one for the extender's server-side latencies and CPU per pod.

Prints a table, or with ``--json`` one JSON object: pods_per_s, trivial_pods_per_s, ratio,
filter_p50_ms/filter_p99_ms and prioritize_p50_ms/prioritize_p99_ms (server-side, from the
extender's Server-Timing, during the rollout), bind_p50_ms (client-side), cpu_ms_per_pod and rss_mib
(rss_peak_mib: the high-water mark, start-up included) of the extender process, pods_bound,
bindings_seen_by_api; and for the trivial run its pods/s, CPU ms per pod and client-side p50s.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cluster

_cluster.setup_environment()

import numpy as np  # noqa: E402
import orjson  # noqa: E402
import yaml  # noqa: E402

ROOT = _cluster.ROOT
APPGROUP_FILE = _cluster.APPGROUP_FILE
SCHEDULER_NAME = _cluster.SCHEDULER_NAME


def drive(api_url: str, extender: Any, seed: int, parallelism: int, created: dict[str, int]) -> tuple[Any, float]:
    """The rollout, and the driver's own CPU ms per pod (kube-scheduler's share).

    Pods go in the order they were created (shuffled workloads), as kube-scheduler's queue orders
    pods of equal priority by when they arrived; the API lists them sorted by name, which would
    schedule every replica of one workload in a row."""
    from apps.demo.rollout import KubeScheduler

    scheduler = KubeScheduler(api_url=api_url, extender=extender, scheduler_name=SCHEDULER_NAME, seed=seed,
                              bind_parallelism=parallelism)
    pending = sorted(scheduler.load(), key=lambda obj: created[obj["metadata"]["name"]])
    cpu = time.process_time()
    result = scheduler.run(pending)
    return result, (time.process_time() - cpu) * 1000 / max(1, len(result.scheduled))


def bound_in_api(api_url: str, names: set[str]) -> int:
    from apps.demo.rollout import Endpoint

    _, body, _ = Endpoint(api_url).request("GET", "/api/v1/pods")
    return sum(1 for p in body.get("items") or []
               if (p.get("spec") or {}).get("nodeName") and p["metadata"]["name"] in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bind-parallelism", type=int, default=16)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-trivial", action="store_true", help="skip the trivial-extender run")
    parser.add_argument("--profile", default="", help="scheduler profile the pods ask for (default: the "
                        "extender's default profile, `network`, with placement plans)")
    args = parser.parse_args()

    from apps.demo.rollout import ExtenderConfig, percentile

    regions, zones, per_zone = _cluster.cluster_shape(args.nodes)
    rng = np.random.default_rng(args.seed)
    topology = _cluster.synthetic_topology(regions, zones, per_zone, rng)
    appgroup_doc = yaml.safe_load(APPGROUP_FILE.read_text())
    _cluster.ensure_database()
    _cluster.seed_database(topology, appgroup_doc)
    objects = _cluster.cluster_objects(topology, appgroup_doc, args.pods, args.seed, args.profile)
    del topology
    created = {o["metadata"]["name"]: i for i, o in enumerate(o for o in objects if o["kind"] == "Pod")}
    pod_names = set(created)

    procs = _cluster.Procs()
    out: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods, "seed": args.seed, "profile": args.profile or "default",
                           "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}
    try:
        api_url = _cluster.start_api(procs, objects, "api")
        port, health = _cluster.free_port(), _cluster.free_port()
        env = {**os.environ, "KUBE_API_URL": api_url, "NETAWARE_EXTENDER_SOURCE": "kubernetes",
               "LOG_LEVEL": "WARNING", "NETAWARE_SCHEDULER_NAMES": SCHEDULER_NAME}
        extender = procs.start("extender", [sys.executable, "manage.py", "run_extender", "--bind",
                                            f"127.0.0.1:{port}", "--health-bind", f"127.0.0.1:{health}"], env, port)
        _cluster.wait_ready(health, extender, procs.logs / "extender.log")
        tree = _cluster.process_tree(extender.pid)
        rss_ready = max(_cluster.rss_mib(pid)[0] for pid in tree)
        cpu_before = _cluster.cpu_seconds(tree)
        api_cpu = _cluster.cpu_seconds(_cluster.process_tree(procs.procs[0].pid))
        result, driver_cpu = drive(api_url, ExtenderConfig(url=f"http://127.0.0.1:{port}/scheduler"), args.seed,
                                   args.bind_parallelism, created)
        cpu = _cluster.cpu_seconds(_cluster.process_tree(extender.pid)) - cpu_before
        api_cpu = _cluster.cpu_seconds(_cluster.process_tree(procs.procs[0].pid)) - api_cpu
        rss = max(_cluster.rss_mib(pid)[0] for pid in _cluster.process_tree(extender.pid))
        rss_peak = max(_cluster.rss_mib(pid)[1] for pid in _cluster.process_tree(extender.pid))
        out.update(
            pods_per_s=round(result.pods_per_s, 1),
            filter_p50_ms=round(percentile(result.filter.server_ms, 50), 3),
            filter_p99_ms=round(percentile(result.filter.server_ms, 99), 3),
            prioritize_p50_ms=round(percentile(result.prioritize.server_ms, 50), 3),
            prioritize_p99_ms=round(percentile(result.prioritize.server_ms, 99), 3),
            filter_client_p50_ms=round(percentile(result.filter.client_ms, 50), 3),
            prioritize_client_p50_ms=round(percentile(result.prioritize.client_ms, 50), 3),
            bind_p50_ms=round(percentile(result.bind.client_ms, 50), 3),
            bind_server_p50_ms=round(percentile(result.bind.server_ms, 50), 3),
            cpu_ms_per_pod=round(cpu * 1000 / max(1, len(result.scheduled)), 3),
            driver_cpu_ms_per_pod=round(driver_cpu, 3),
            api_cpu_ms_per_pod=round(api_cpu * 1000 / max(1, len(result.scheduled)), 3),
            rss_mib=round(rss, 1),
            rss_ready_mib=round(rss_ready, 1),
            rss_peak_mib=round(rss_peak, 1),
            pods_bound=len(result.scheduled),
            bindings_seen_by_api=bound_in_api(api_url, pod_names),
            unschedulable=len(result.unschedulable),
            bind_errors=len(result.bind_errors),
            extender_errors=len(result.extender_errors),
            seconds=round(result.seconds, 2),
        )
        if not args.no_trivial:
            trivial_api = _cluster.start_api(procs, objects, "api-trivial")
            tport = _cluster.free_port()
            trivial_proc = procs.start("trivial", [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1",
                                    "--port", str(tport), "--workers", "1", "--blocking-threads", "32",
                                    "--log-level", "warning", "bench.trivial_extender:application"],
                        dict(os.environ), tport)
            trivial_tree = _cluster.process_tree(trivial_proc.pid)
            trivial_cpu = _cluster.cpu_seconds(trivial_tree)
            trivial, trivial_driver_cpu = drive(trivial_api, ExtenderConfig(url=f"http://127.0.0.1:{tport}/scheduler",
                                                                            bind_verb=""),
                                                args.seed, args.bind_parallelism, created)
            trivial_cpu = _cluster.cpu_seconds(_cluster.process_tree(trivial_proc.pid)) - trivial_cpu
            out.update(trivial_pods_per_s=round(trivial.pods_per_s, 1),
                       trivial_cpu_ms_per_pod=round(trivial_cpu * 1000 / max(1, len(trivial.scheduled)), 3),
                       trivial_filter_client_p50_ms=round(percentile(trivial.filter.client_ms, 50), 3),
                       trivial_prioritize_client_p50_ms=round(percentile(trivial.prioritize.client_ms, 50), 3),
                       trivial_driver_cpu_ms_per_pod=round(trivial_driver_cpu, 3),
                       trivial_pods_bound=len(trivial.scheduled),
                       ratio=round(result.pods_per_s / trivial.pods_per_s, 3) if trivial.pods_per_s else None)
    finally:
        procs.stop()
    out["logs"] = str(procs.logs)
    if args.json:
        print(orjson.dumps(out).decode())
        return
    print("| nodes | pods | pods/s | trivial pods/s | ratio | filter p50/p99 ms | prioritize p50/p99 ms | "
          "bind p50 ms | CPU ms/pod | RSS MiB | bound / seen by API |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.nodes} | {args.pods} | {out['pods_per_s']} | {out.get('trivial_pods_per_s', '-')} | "
          f"{out.get('ratio', '-')} | {out['filter_p50_ms']} / {out['filter_p99_ms']} | "
          f"{out['prioritize_p50_ms']} / {out['prioritize_p99_ms']} | {out['bind_p50_ms']} | "
          f"{out['cpu_ms_per_pod']} | {out['rss_mib']} | {out['pods_bound']} / {out['bindings_seen_by_api']} |")


if __name__ == "__main__":
    main()
