"""``manage.py evaluate``: replay the paper's experiment with each scheduler profile (docs/evaluation.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.scheduler.evaluation import EvaluationInputError, format_table, run_evaluation
from apps.scheduler.evaluation.report import write_figure_html
from apps.scheduler.evaluation.simulate import PAPER_PROFILES
from netaware_core import quantity


class Command(BaseCommand):
    # Pure computation on files: no database, no URLconf; don't let unrelated system checks block it.
    requires_system_checks: list[str] = []
    help = ("Schedule an AppGroup's pods in N random arrival orders with each profile and report network "
            "scores, pods per zone, modelled latency and the optimum.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scenario", default="scenarios/paper-testbed.yaml", help="scenario YAML")
        parser.add_argument("--appgroup", default="scenarios/online-boutique-appgroup.yaml",
                            help="YAML file with one or more AppGroup documents")
        parser.add_argument("--seeds", type=int, default=50, help="number of arrival orders (default 50)")
        parser.add_argument("--first-seed", type=int, default=0)
        parser.add_argument("--profiles", default=",".join(PAPER_PROFILES),
                            help="comma-separated: default, network, hybrid-<w>, or an extender profile name "
                                 "(built-in or from --profile-file), optionally +default[-<w>]")
        parser.add_argument("--profile-file",
                            help="YAML/JSON with extender profile documents (apiVersion netaware.io/v1 or "
                                 "v1alpha1): one, a list, or {profiles: [...]}")
        parser.add_argument("--format", choices=("table", "json"), default="table")
        parser.add_argument("--output", help="also write the JSON report to this file")
        parser.add_argument("--figure", help="write the plotly figure (HTML) to this file")
        parser.add_argument("--no-optimum", action="store_true", help="skip the certified optimum")
        parser.add_argument("--time-limit", type=float, default=60.0,
                            help="seconds for the optimum's solver (default 60)")
        parser.add_argument("--degrade", metavar="ZONE:ZONE:rtt_ms=MS,loss=PCT[,bandwidth_mbps=MBPS]",
                            help="after all pods are placed, degrade this zone pair's link and report score, latency, "
                                 "transfer cost and moves with the rebalancer off vs on (docs/evaluation.md)")
        parser.add_argument("--memory-limit", default="2Gi",
                            help="memory the optimum's solver may add, a Kubernetes quantity (default 2Gi)")
        parser.add_argument("--min-zones", type=int, default=0,
                            help="high availability: set spec.minZones on every AppGroup (workloads get at least "
                                 "that many replicas)")
        parser.add_argument("--routing", choices=("uniform", "prefer-close"), default="uniform",
                            help="how calls spread over the callee's replicas for latency and transfer: uniformly "
                                 "(default) or prefer-close (Services with trafficDistribution: PreferClose)")
        parser.add_argument("--min-replicas", type=int, default=0,
                            help="give every workload at least this many replicas (the no-HA baseline of --min-zones)")

    def handle(self, *args: Any, **options: Any) -> None:
        profiles = [p.strip() for p in str(options["profiles"]).split(",") if p.strip()]
        if not profiles:
            raise CommandError("--profiles: name at least one profile")
        if options["seeds"] < 1:
            raise CommandError(f"--seeds must be >= 1, got {options['seeds']}")
        for flag in ("output", "figure"):
            target = options.get(flag)
            if target and not Path(target).resolve().parent.is_dir():
                raise CommandError(f"--{flag}: directory of {target!r} does not exist")
        if options["time_limit"] <= 0:
            raise CommandError(f"--time-limit must be > 0 seconds, got {options['time_limit']}")
        try:
            memory_limit = quantity.memory_bytes(options["memory_limit"])
        except quantity.QuantityError as exc:
            raise CommandError(f"--memory-limit: {exc}") from exc
        if memory_limit < 64 * 2**20:
            raise CommandError(f"--memory-limit must be at least 64Mi, got {options['memory_limit']!r}")
        for flag in ("min_zones", "min_replicas"):
            if not 0 <= options[flag] <= 64:
                raise CommandError(f"--{flag.replace('_', '-')} must be between 0 and 64, got {options[flag]}")
        try:
            report = run_evaluation(
                options["scenario"], options["appgroup"], profiles=profiles, seeds=options["seeds"],
                first_seed=options["first_seed"], with_optimum=not options["no_optimum"],
                time_limit=options["time_limit"], memory_limit=memory_limit,
                profile_file=options.get("profile_file"), degrade=options.get("degrade"),
                min_zones=options["min_zones"],
                min_replicas=options["min_replicas"], routing=options["routing"],
            )
        except EvaluationInputError as exc:
            raise CommandError(str(exc)) from exc
        payload = orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
        if options.get("output"):
            Path(options["output"]).write_bytes(payload)
        if options.get("figure"):
            write_figure_html(report, options["figure"])
        if options["format"] == "json":
            self.stdout.write(payload.decode())
        else:
            self.stdout.write(format_table(report))
