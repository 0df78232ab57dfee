"""Benchmark: the evaluation harness on the paper testbed (issue 5: 50 seeds x 5 profiles <= 30 s).

Runs ``run_evaluation`` (files -> report, MILP optimum included) for the paper's five profiles over
50 arrival orders, several times, and prints a markdown table: median wall time of the whole
evaluation, per profile, per scheduling cycle (one pod: filters + scorers + selection), of the
optimum, and the ratio against the 30 s target.

Run: ``.venv/bin/python bench/bench_evaluation.py [--runs 3] [--seeds 50]``
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

from apps.scheduler.evaluation import run_evaluation  # noqa: E402
from apps.scheduler.evaluation.simulate import PAPER_PROFILES  # noqa: E402

TARGET_SECONDS = 30.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=50)
    args = parser.parse_args()
    scenario = ROOT / "scenarios" / "paper-testbed.yaml"
    appgroup = ROOT / "scenarios" / "online-boutique-appgroup.yaml"
    run_evaluation(scenario, appgroup, profiles=["network"], seeds=1)  # warm imports and caches

    totals: list[float] = []
    optimum: list[float] = []
    per_profile: dict[str, list[float]] = {name: [] for name in PAPER_PROFILES}
    report = None
    for _ in range(args.runs):
        started = time.perf_counter()
        report = run_evaluation(scenario, appgroup, profiles=PAPER_PROFILES, seeds=args.seeds)
        totals.append(time.perf_counter() - started)
        assert report.optimum is not None
        optimum.append(report.optimum.seconds)
        for result in report.profiles:
            per_profile[result.profile].append(result.seconds)
    assert report is not None
    cycles = args.seeds * report.pods
    total = statistics.median(totals)
    print(f"Evaluation harness: {args.seeds} seeds x {len(PAPER_PROFILES)} profiles, {report.pods} pods, "
          f"{args.runs} runs; {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} cores\n")
    print("| measurement | median | target | ratio (target / measured) |")
    print("|---|---|---|---|")
    print(f"| whole evaluation (incl. optimum) | {total:.2f} s | ≤ {TARGET_SECONDS:.0f} s | "
          f"{TARGET_SECONDS / total:.1f}x |")
    print(f"| MILP optimum (HiGHS) | {statistics.median(optimum):.2f} s | | |")
    for name, values in per_profile.items():
        med = statistics.median(values)
        print(f"| profile {name}: {args.seeds} seeds | {med:.2f} s ({1000 * med / cycles:.2f} ms per pod, metrics included) | | |")
    print()
    print("| profile | avg network score (mean ± sd) | pods in FAR (max over seeds) |")
    print("|---|---|---|")
    for result in report.profiles:
        print(f"| {result.profile} | {result.average_score.mean:.1f} ± {result.average_score.sd:.1f} | "
              f"{int(result.pods_per_zone['FAR'].maximum) if 'FAR' in result.pods_per_zone else 'n/a'} |")


if __name__ == "__main__":
    main()
