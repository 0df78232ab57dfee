"""Benchmark: parsing a huge filter/prioritize body (issue 21: 60,000 Node objects, 15.8 MB).

``wire.parse_extender_args`` on a body of N minimal Node objects (name, labels, allocatable, Ready;
~260 bytes each, as in the audit), with the cyclic garbage collector paused while it parses (what the
extender does for bodies over ``wire.GC_PAUSE_BYTES``) and with it running (the threshold raised
past the body). CPU seconds (``process_time``: what the extender spends, whatever else runs on the
machine) and wall seconds, medians of ``--runs``; the load average is printed with them.

Run: ``.venv/bin/python bench/bench_huge_body.py [--nodes 60000] [--runs 3]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from apps.scheduler import wire  # noqa: E402


def body(nodes: int) -> bytes:
    items = [{"metadata": {"name": f"node-{i:05d}", "resourceVersion": "1",
                           "labels": {"kubernetes.io/hostname": f"node-{i:05d}",
                                      "topology.kubernetes.io/zone": f"zone-{i % 16}"}},
              "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                         "conditions": [{"type": "Ready", "status": "True"}]}} for i in range(nodes)]
    pod = {"metadata": {"name": "web-1", "namespace": "default", "uid": "u-1", "labels": {"app": "frontend"}},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}
    return orjson.dumps({"Pod": pod, "NodeNames": None, "Nodes": {"metadata": {}, "items": items}})


def measure(data: bytes, *, paused: bool) -> tuple[float, float]:
    wire.GC_PAUSE_BYTES = (1 << 20) if paused else len(data) + 1
    cpu, wall = time.process_time(), time.perf_counter()
    args = wire.parse_extender_args(data)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert args.nodes is not None and len(args.nodes) > 0
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=60_000)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    data = body(options.nodes)
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(options.runs):
        for paused in (True, False):  # alternating, so load changes hit both alike
            results[paused].append(measure(data, paused=paused))
    print(f"{options.nodes} Node objects, {len(data) / 1e6:.1f} MB; Python {platform.python_version()}, "
          f"orjson {orjson.__version__}; load average {os.getloadavg()[0]:.1f}; medians of {options.runs}")
    print("| garbage collector | CPU s | wall s |\n|---|---|---|")
    for paused in (True, False):
        cpu = statistics.median(r[0] for r in results[paused])
        wall = statistics.median(r[1] for r in results[paused])
        print(f"| {'paused (the extender)' if paused else 'running (before)'} | {cpu:.2f} | {wall:.2f} |")


if __name__ == "__main__":
    main()
