"""Learn one observed-traffic window of 5,000 edges (issue 18 target: < 2 s of worker time).

The worker's whole share of a pull after Prometheus answered, per window: decode the six range-query
answers (JSON bytes, decoded with orjson as ``PrometheusClient`` does), parse and sanitise them (``edges.parse_window_matrices``),
merge the sources and move the smoothed states (``learning.update_states``), store the window's edge
samples, the 5,000 learned states and the watermark in one transaction (``services`` as the pull does),
then derive the applications, their AppGroup specs and diffs and write the observed AppGroups
(``services.refresh_observed``; no Kubernetes API configured, so selectors are guessed from names).

Edges: ``--namespaces`` namespaces, each a tree-like application with the same number of edges
(5,000 in all by default). Each timed run is a new window (fresh rates) over the states of the previous
one. Rows are stamped in 2100; run it against a database of its own:

    psql "$(sed 's|/[^/]*$|/postgres|' var/secrets/test-database-url)" -c 'CREATE DATABASE netaware_bench'
    export DATABASE_URL="$(sed 's|/[^/]*$|/netaware_bench|' var/secrets/test-database-url)"
    .venv/bin/python manage.py migrate -v0 && .venv/bin/python bench/bench_traffic_learning.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")

import django

django.setup()

import numpy as np  # noqa: E402
import orjson  # noqa: E402
from django.db import connection  # noqa: E402

from apps.traffic import learning, services  # noqa: E402
from apps.traffic.adapters.istio import ADAPTER  # noqa: E402
from apps.traffic.edges import merge_sources, parse_window_matrices  # noqa: E402
from apps.traffic.models import EdgeSample, LearnedEdge, ObservedAppGroup  # noqa: E402

BASE = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp())
WIDTH = 60


def edge_list(namespaces: int, total: int) -> list[tuple[str, str, str]]:
    per = total // namespaces
    out = []
    for n in range(namespaces):
        ns = f"tenant-{n:03d}"
        for i in range(per):  # a random tree plus cross links: one connected application per namespace
            child = f"svc-{i + 1:04d}"
            parent = f"svc-{(i * 7919) % (i + 1):04d}" if i % 5 else f"svc-{i // 2:04d}"
            out.append((ns, parent, child))
    return out


def answers(edges: list[tuple[str, str, str]], end: int, rng: np.random.Generator) -> dict[str, bytes]:
    """The six range-query answers for one window, as Prometheus sends them (JSON bytes)."""
    rps = rng.lognormal(0.5, 1.0, len(edges))
    values = {"requests": rps, "errors": rps * 0.01, "request_bytes": rps * 400, "response_bytes": rps * 3000,
              "p50": rng.uniform(0.001, 0.02, len(edges)), "p99": rng.uniform(0.02, 0.2, len(edges))}
    out = {}
    for measure, vals in values.items():
        result = [{"metric": {"source_workload_namespace": ns, "source_workload": s,
                              "destination_workload_namespace": ns, "destination_workload": t},
                   "values": [[end, repr(float(v))]]} for (ns, s, t), v in zip(edges, vals, strict=True)]
        out[measure] = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
    return out


def learn_window(raw: dict[str, bytes], end: int, states: dict, params: learning.LearningParams) -> tuple[dict, dict]:
    phases = {}
    t0 = time.perf_counter()
    matrices = {measure: orjson.loads(body)["data"]["result"] for measure, body in raw.items()}  # as PrometheusClient
    windows, _rejected = parse_window_matrices(matrices, ADAPTER.labels, default_namespace="default",
                                               max_edges=20000, ends=[end])
    t1 = time.perf_counter()
    merged = merge_sources({"istio": windows.get(end, {})}, {"istio": 10})
    new_states = learning.update_states(states, merged, at=float(end), params=params)
    t2 = time.perf_counter()
    result = services.TrafficPullResult()
    services._store_window(end=end, fetched={"istio": windows}, states=states, priority={"istio": 10},
                           params=params, result=result)
    t3 = time.perf_counter()
    services.refresh_observed(states=new_states, at=datetime.fromtimestamp(end, tz=UTC))
    t4 = time.perf_counter()
    phases = {"decode+parse": t1 - t0, "learn": t2 - t1, "store": t3 - t2, "observed AppGroups": t4 - t3,
              "total": t4 - t0}
    return new_states, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=5000)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    edges = edge_list(args.namespaces, args.edges)
    params = learning.LearningParams()

    def cleanup() -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {EdgeSample._meta.db_table} WHERE ts >= %s",
                           [datetime.fromtimestamp(BASE - 10 * WIDTH, tz=UTC)])
        LearnedEdge.objects.all().delete()
        ObservedAppGroup.objects.all().delete()

    cleanup()
    states: dict = {}
    states, _ = learn_window(answers(edges, BASE, rng), BASE, states, params)  # warm-up: states exist
    rows: list[dict] = []
    cpu: list[float] = []
    for run in range(1, args.runs + 1):
        end = BASE + run * WIDTH
        raw = answers(edges, end, rng)
        c0 = time.process_time()
        states, phases = learn_window(raw, end, states, params)
        cpu.append(time.process_time() - c0)
        rows.append(phases)
    cleanup()
    print(f"python {platform.python_version()}, {platform.machine()}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        print(f"postgres {cursor.fetchone()[0]}")
    print(f"{len(edges)} edges in {args.namespaces} namespaces, {args.runs} windows (after one warm-up)")
    for phase in rows[0]:
        values = [r[phase] for r in rows]
        print(f"  {phase:>20}: median {statistics.median(values):.3f} s  (min {min(values):.3f}, max {max(values):.3f})")
    print(f"  {'worker CPU':>20}: median {statistics.median(cpu):.3f} s")
    print(f"  observed applications: {ObservedAppGroup.objects.count() or args.namespaces}")


if __name__ == "__main__":
    main()
