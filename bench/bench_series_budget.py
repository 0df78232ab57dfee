"""Series budget and topology accuracy of the bounded probe fan-out (issue 13; docs/scale.md).

Run: ``.venv/bin/python bench/bench_series_budget.py`` (no services needed; ~1-2 minutes).

1. **Series**: every node page of the emulated cluster (which exports exactly what a real agent does,
   tests/test_emulated_cluster_exports_the_series_real_agents_would.py) is rendered and its agent
   series counted, at 100, 1,000 and 5,000 nodes, for the compact quantile export (default) and the
   histogram export; full-mesh figures by formula (they cannot be rendered at 1,000+ nodes).
2. **Head series with rotation**: a series rotated out stays in Prometheus' head until the next head
   compaction (about 2 h on average, at most 3 h): exposed + churn per hour x hours.
3. **Accuracy vs K**: the emulated agents' exported p90, loss and bandwidth (sampling noise included) go
   through the real derivation (apps/topology/topomath.derive_topology); unmeasured pairs are filled
   from zone / region medians. Reported: share of pairs whose latency is inferred and the median
   relative error of inferred (and measured) latencies against the scenario's nominal values.
4. **Fewer buckets instead**: ``histogram_quantile(0.9)`` error with coarser buckets, on the emulator's
   RTT distribution (lognormal, jitter 0.1), from exact bucket probabilities.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")

from apps.probes import fanout, metrics  # noqa: E402
from apps.probes.emulator import Emulator  # noqa: E402
from apps.probes.scenario import Scenario, load_scenario  # noqa: E402
from apps.topology.topomath import NodeMeta, PairArrays, derive_topology  # noqa: E402

PREFIXES = ("netaware_", "process_")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def generated(nodes: int, zones: int, regions: int) -> Scenario:
    """A homogeneous-size cluster for the 100 / 5,000-node rows (latencies like large-1000.yaml)."""
    per = nodes // zones
    doc: dict[str, Any] = {"name": f"gen-{nodes}", "regions": [], "links": []}
    names = []
    for r in range(regions):
        region: dict[str, Any] = {"name": f"r{r}", "zones": []}
        for z in range(r, zones, regions):
            region["zones"].append({"name": f"z{z}", "range": {"prefix": f"z{z}-", "from": 1, "to": per}})
            names.append((f"z{z}", r))
        doc["regions"].append(region)
    rng = np.random.default_rng(nodes)
    for i, (a, ra) in enumerate(names):
        for b, rb in names[i:]:
            lat = rng.uniform(0.2, 1.2) if a == b else rng.uniform(1, 8) if ra == rb else rng.uniform(20, 150)
            doc["links"].append({"between": [a, b], "latency_ms": round(float(lat), 2), "loss_pct": 0.5,
                                 "bandwidth_mbps": 1000 if a == b else 200})
    return load_scenario(doc)


def count_series(emulator: Emulator, clock: Clock) -> tuple[int, float]:
    clock.now += 900
    total = 0
    started = time.perf_counter()
    for name in emulator.node_names:
        for line in emulator.render(name).decode().splitlines():
            if line and not line.startswith("#") and line.startswith(PREFIXES):
                total += 1
    return total, time.perf_counter() - started


def series_table(scenarios: dict[int, Scenario]) -> None:
    print("\n## Series (agent-owned: netaware_* and process_*), rendered from the emulator\n")
    print("| nodes | export | K | series per node | total | full mesh (formula) | render all pages |")
    print("|---|---|---|---|---|---|---|")
    for n, scenario in scenarios.items():
        for export in (metrics.EXPORT_QUANTILES, metrics.EXPORT_HISTOGRAM):
            if export == metrics.EXPORT_HISTOGRAM and n > 1000:
                continue  # 5,000 x 24 histograms of 45 series: rendered fine, but 10 min of CPU here
            clock = Clock()
            emulator = Emulator(scenario, clock=clock, export=export, ping_rate_hz=1.0)
            total, seconds = count_series(emulator, clock)
            per_pair = 4 if export == metrics.EXPORT_QUANTILES else 45
            full = n * (19 + (n - 1) * per_pair + (n - 1) * 2)
            print(f"| {n:,} | {export} | 24 | {total / n:.0f} | {total:,} | {full:,} | {seconds:.1f} s |")


def churn_table() -> None:
    print("\n## Head series with rotation (1,000 nodes, quantile export, K = 24, 8 bandwidth peers)\n")
    cost = fanout.SeriesCost(per_peer=4, per_bandwidth_peer=2, per_agent=19)
    exposed = 1000 * fanout.series_per_node(cost, 24, 8)
    print("| rotation | churned series / h | head, average (2 h) | head, worst (3 h) | every pair probed within |")
    print("|---|---|---|---|---|")
    scenario = load_scenario(ROOT / "scenarios" / "large-1000.yaml")
    lay = fanout.layout([fanout.FanoutNode(n.name, n.zone, n.region) for n in scenario.nodes])
    for hours in (1, 3, 6, 12):
        settings = fanout.FanoutSettings(max_peers=24, rotation_seconds=hours * 3600)
        churn = 1000 * (24 * 4 + 8 * 2) / hours
        epochs = max(fanout.epochs_to_cover_all(lay, scenario.nodes[i * 97].name, settings) or 0 for i in range(10))
        print(f"| {hours} h | {churn:,.0f} | {fanout.head_series(exposed, churn, 2):,.0f} | "
              f"{fanout.head_series(exposed, churn, 3):,.0f} | {epochs * hours / 24:.0f} days |")


def emulated_measurements(scenario: Scenario, k: int, seed: int) -> tuple[list[NodeMeta], PairArrays, set]:
    """What the agents export under fan-out K (via the emulator's pages), as the pipeline would store it."""
    clock = Clock()
    emulator = Emulator(scenario, clock=clock, seed=seed, fanout=fanout.FanoutSettings(max_peers=k),
                        bandwidth_peers=8 if k else 0, bandwidth_interval_s=30.0)
    clock.now += 400
    lat: tuple[list, list, list] = ([], [], [])
    bw: tuple[list, list, list] = ([], [], [])
    loss: tuple[list, list, list] = ([], [], [])
    for name in emulator.node_names:
        for line in emulator.render(name).decode().splitlines():
            if line.startswith(metrics.RTT_QUANTILE) and 'quantile="0.9"' in line:
                target = line.split('target="', 1)[1].split('"', 1)[0]
                lat[0].append(name)
                lat[1].append(target)
                lat[2].append(float(line.rsplit(" ", 1)[1]) * 1000)
            elif line.startswith(metrics.LOSS_RATIO + "{"):
                target = line.split('target="', 1)[1].split('"', 1)[0]
                loss[0].append(name)
                loss[1].append(target)
                loss[2].append(float(line.rsplit(" ", 1)[1]) * 100)
            elif line.startswith(metrics.BANDWIDTH + "{"):
                target = line.split('target="', 1)[1].split('"', 1)[0]
                bw[0].append(name)
                bw[1].append(target)
                bw[2].append(float(line.rsplit(" ", 1)[1]) / 1e6)
    metas = [NodeMeta(n.name, n.zone, n.region) for n in scenario.nodes]
    names = [m.name for m in metas]

    def col(c: tuple[list, list, list]) -> tuple[list, list, np.ndarray, np.ndarray]:
        return c[0], c[1], np.asarray(c[2], dtype=float), np.full(len(c[2]), clock.now)

    pairs = PairArrays.from_series(nodes=names, latency=col(lat), bandwidth=col(bw), loss=col(loss))
    return metas, pairs, set(zip(lat[0], lat[1], strict=True))


def accuracy_table(scenarios: dict[str, Scenario], ks: list[int], seed: int) -> None:
    print("\n## Topology accuracy vs K (latency = p90 RTT; nominal = the scenario's value)\n")
    print("| scenario | K | latency measured / inferred pairs | inferred share | median rel. error, inferred "
          "| p90 / p99 rel. error, inferred | median rel. error, measured | derive |")
    print("|---|---|---|---|---|---|---|---|")
    for label, scenario in scenarios.items():
        index = {n: i for i, n in enumerate(scenario.node_names)}
        nominal = np.full((len(index), len(index)), np.nan)
        for s in scenario.node_names:
            for t in scenario.node_names:
                link = scenario.link(s, t) if s != t else None
                if link is not None:
                    nominal[index[s], index[t]] = link.latency_ms
        for k in ks:
            metas, pairs, measured = emulated_measurements(scenario, k, seed)
            started = time.perf_counter()
            topo = derive_topology(nodes=metas, pairs=pairs, now=1_800_000_400.0, stale_after_s=600)
            derive_s = time.perf_counter() - started
            mask = np.zeros_like(nominal, dtype=bool)
            for s, t in measured:
                mask[index[s], index[t]] = True
            off = ~np.eye(len(index), dtype=bool) & ~np.isnan(nominal)
            inferred = off & ~mask
            rel = np.abs(topo.latency_ms - nominal) / nominal
            inf_err = rel[inferred]
            meas_err = rel[off & mask]
            name = "full mesh" if k == 0 else str(k)
            fmt = (lambda a, q: f"{100 * np.nanquantile(a, q):.1f} %" if a.size else "–")  # noqa: E731
            print(f"| {label} | {name} | {int((off & mask).sum()):,} / {int(inferred.sum()):,} | "
                  f"{100 * inferred.sum() / off.sum():.1f} % | {fmt(inf_err, 0.5)} | {fmt(inf_err, 0.9)} / "
                  f"{fmt(inf_err, 0.99)} | "
                  f"{fmt(meas_err, 0.5)} | {derive_s:.2f} s |")


def histogram_quantile(bounds: np.ndarray, cumulative: np.ndarray, q: float) -> float:
    """Prometheus' histogram_quantile on cumulative bucket counts (linear inside the bucket)."""
    rank = q * cumulative[-1]
    i = int(np.searchsorted(cumulative, rank))
    if i >= len(bounds):
        return float(bounds[-1])
    lo = bounds[i - 1] if i else 0.0
    below = cumulative[i - 1] if i else 0.0
    return float(lo + (bounds[i] - lo) * (rank - below) / (cumulative[i] - below))


def bucket_table() -> None:
    print("\n## Fewer buckets instead: histogram_quantile(0.9) error (lognormal RTT, jitter 0.1)\n")
    layouts = {
        "ours, 40 buckets (45 series/pair)": np.asarray(metrics.RTT_BUCKETS),
        "1-2-5 steps, 16 buckets (21 series/pair)": np.asarray(
            [b * 10.0 ** e for e in range(-5, 1) for b in (1, 2, 5)][1:-1]),
        "factor 4, 8 buckets (13 series/pair)": np.asarray([0.00005 * 4 ** i for i in range(8)]),
        "Prometheus default, 11 buckets (16 series/pair)": np.asarray(
            [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
    }
    grid = np.geomspace(0.0002, 0.2, 400)  # nominal p90 from 0.2 ms to 200 ms
    sigma = 0.1
    print("| buckets | median error | p90 error | worst |")
    print("|---|---|---|---|")
    for label, bounds in layouts.items():
        errors = []
        for p90 in grid:
            mu = math.log(p90) - norm.ppf(0.9) * sigma
            cumulative = norm.cdf((np.log(bounds) - mu) / sigma)
            cumulative = np.append(cumulative, 1.0)
            got = histogram_quantile(np.append(bounds, np.inf), cumulative, 0.9)
            errors.append(abs(got - p90) / p90 if math.isfinite(got) else float("inf"))
        arr = np.asarray(errors)
        print(f"| {label} | {100 * np.median(arr):.1f} % | {100 * np.quantile(arr, 0.9):.1f} % | "
              f"{100 * arr.max():.0f} % |")
    print("| agent-side quantiles (4 series/pair, this design) | exact sample quantile: sampling noise only "
          "(see the accuracy table) | | |")


def with_slow_nodes(scenario: Scenario, share: float, factor: float, seed: int) -> Scenario:
    """``scenario`` where a random ``share`` of nodes see every link ``factor`` times slower (a bad NIC or a
    congested rack): heterogeneity inside zones, which zone medians cannot know about."""
    import dataclasses

    rng = np.random.default_rng(seed)
    names = list(scenario.node_names)
    slow = set(rng.choice(names, size=int(share * len(names)), replace=False).tolist())
    links = dict(scenario.node_links)
    for s in slow:
        for t in names:
            if t == s:
                continue
            for a, b in ((s, t), (t, s)):
                base = scenario.link(a, b)
                if base is not None:
                    links[(a, b)] = dataclasses.replace(base, latency_ms=base.latency_ms * factor)
    return dataclasses.replace(scenario, name=f"{scenario.name}-slow", node_links=links)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-5000", action="store_true")
    args = parser.parse_args()
    import django

    django.setup()
    large = load_scenario(ROOT / "scenarios" / "large-1000.yaml")
    sizes = {100: generated(100, 5, 1), 1000: large}
    if not args.skip_5000:
        sizes[5000] = generated(5000, 50, 5)
    print(f"# bench_series_budget.py, {time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}")
    series_table(sizes)
    churn_table()
    accuracy_table({"paper testbed (19 nodes)": load_scenario(ROOT / "scenarios" / "paper-testbed.yaml"),
                    "large-1000": large,
                    "large-1000, 5 % of nodes 1.5x slower": with_slow_nodes(large, 0.05, 1.5, args.seed)},
                   [0, 40, 24, 16, 8], args.seed)
    bucket_table()


if __name__ == "__main__":
    main()
