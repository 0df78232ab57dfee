"""Benchmark: reading documents through their one validator (issue 24: behaviour and speed unchanged).

* AppGroup: ``documents.spec_from_document`` (the CRD schema, ``validators.semantic_errors``, the
  conversion) on Online Boutique (11 workloads, 16 dependencies) and on an AppGroup at the CRD's limit
  (1,000 workloads, 3 dependencies each). ``services.save_appgroup`` runs it once more on the spec.
* NetworkTopology import: ``documents.read_import`` (the CRD schema, strict, and the semantic step) plus
  ``topomath.topology_from_nested`` on a full mesh of N nodes in 10 zones (3 maps of N x (N - 1) values).

``--before PATH`` runs the same inputs through the code before issue 24 in a checkout at PATH, in a
subprocess: ``resources.spec_from_resource`` and ``topomath.topology_from_nested`` with its own
per-value checks (the zone/cost part of the old parser needed Django and is left out: lists of 10 zones).
Each run is one subprocess per tree, the two alternating; prints a markdown table of the medians.

Run: ``.venv/bin/python bench/bench_documents.py [--runs 5] [--nodes 200,1000] [--before /work/main]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BOUTIQUE = ROOT / "scenarios" / "online-boutique-appgroup.yaml"


def big_appgroup(workloads: int = 1000, dependencies: int = 3) -> dict[str, Any]:
    names = [f"w{i:04d}" for i in range(workloads)]
    return {"apiVersion": "netaware.io/v1alpha1", "kind": "AppGroup", "metadata": {"name": "big", "namespace": "default"},
            "spec": {"workloads": [
                {"name": name, "selector": {"matchLabels": {"app": name}}, "weight": 0.5, "replicas": 2,
                 "resources": {"cpu": "100m", "memory": "64Mi"},
                 "dependencies": [{"name": names[(i + k + 1) % workloads],
                                   "metrics": {"latency": 0.5, "bandwidth": 0.3, "lossrate": 0.2}, "minBandwidth": "10M"}
                                  for k in range(dependencies)]}
                for i, name in enumerate(names)]}}


def mesh(nodes: int, seed: int = 1) -> dict[str, Any]:
    import random

    rng = random.Random(seed)
    names = [f"n{i:04d}" for i in range(nodes)]

    def values(low: float, high: float) -> dict[str, dict[str, float]]:
        return {a: {b: round(rng.uniform(low, high), 3) for b in names if b != a} for a in names}

    return {"kind": "NetworkTopology", "spec": {
        "zones": [{"name": f"z{z}", "region": "r", "nodes": names[z::10]} for z in range(10)],
        "latency": values(0.1, 50.0), "bandwidth": values(10.0, 1000.0), "lossrate": values(0.0, 3.0)}}


def timed(fn: Any, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(tree: str, runs: int, nodes: list[int], before: bool) -> dict[str, float]:
    """Medians (s) of each case with the code in ``tree`` (this process must have it first on sys.path)."""
    import yaml

    boutique = yaml.safe_load(BOUTIQUE.read_text())
    big = big_appgroup()
    out: dict[str, float] = {}
    if before:
        from apps.appgroups import resources as old  # type: ignore[attr-defined]  # the module before issue 24
        from apps.topology import topomath

        read = old.spec_from_resource
    else:
        from apps.appgroups import documents
        from apps.topology import documents as topology_documents
        from apps.topology import topomath

        read = documents.spec_from_document
    out["AppGroup, Online Boutique (11 workloads)"] = timed(lambda: read(boutique), runs * 20) * 1000
    out["AppGroup, 1,000 workloads"] = timed(lambda: read(big), runs) * 1000
    for n in nodes:
        doc = mesh(n)
        if before:
            metas = [topomath.NodeMeta(name=name, zone=zone["name"], region="r")
                     for zone in doc["spec"]["zones"] for name in zone["nodes"]]
            spec = {k: v for k, v in doc["spec"].items() if k != "zones"}

            def old_import(spec: dict[str, Any] = spec, metas: list[Any] = metas) -> None:
                topomath.topology_from_nested(spec, nodes=metas, now=0.0, path="spec")  # type: ignore[call-arg]  # before issue 24

            out[f"NetworkTopology import, {n} nodes"] = timed(old_import, runs) * 1000
        else:
            def new_import(doc: dict[str, Any] = doc) -> None:
                imported = topology_documents.read_import(doc)
                topomath.topology_from_nested(imported.spec, nodes=list(imported.nodes), now=0.0)

            out[f"NetworkTopology import, {n} nodes"] = timed(new_import, runs) * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", default="200,1000")
    parser.add_argument("--before", help="a checkout of the code before issue 24")
    parser.add_argument("--child", choices=("before", "after"), help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    nodes = [int(n) for n in args.nodes.split(",") if n]
    if args.child:
        sys.path.insert(0, args.tree)
        print(json.dumps(measure(args.tree, args.runs, nodes, args.child == "before")))
        return

    def run(tree: str, which: str) -> dict[str, float]:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        result = subprocess.run([sys.executable, __file__, "--child", which, "--tree", tree, "--runs", "1",
                                 "--nodes", args.nodes], capture_output=True, text=True, check=True, env=env, cwd="/")
        return json.loads(result.stdout)

    load = os.getloadavg()[0]
    samples: dict[str, dict[str, list[float]]] = {"after": {}, "before": {}}
    for _ in range(args.runs):  # alternate the two trees, one run each: load drifts on a shared machine
        for which, tree in (("after", str(ROOT)), ("before", args.before)):
            if tree:
                for case, value in run(tree, which).items():
                    samples[which].setdefault(case, []).append(value)
    after = {case: statistics.median(values) for case, values in samples["after"].items()}
    before = {case: statistics.median(values) for case, values in samples["before"].items()}
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load:.2f} "
          f"(start), medians of {args.runs} alternating runs (of 20 for Online Boutique)\n")
    print("| case | after (ms) |" + (" before (ms) | after / before |" if before else ""))
    print("|---|---:|" + ("---:|---:|" if before else ""))
    for case, value in after.items():
        row = f"| {case} | {value:.1f} |"
        if before:
            row += f" {before[case]:.1f} | {value / before[case]:.2f} |"
        print(row)
    print(f"\nload average {os.getloadavg()[0]:.2f} (end)")


if __name__ == "__main__":
    main()
