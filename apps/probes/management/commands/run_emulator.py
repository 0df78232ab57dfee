"""Serve an emulated cluster's probe and node_exporter metrics (docs/scenarios.md)."""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.probes import metrics
from apps.probes.emulator import Emulator
from apps.probes.fanout import FanoutError, FanoutSettings
from apps.probes.scenario import ScenarioError, load_scenario

_DURATION = re.compile(r"^\d+(ms|s|m|h)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds(duration: str) -> float:
    """A simple Prometheus duration (5m, 30s) in seconds; 300 when it is not one."""
    match = re.match(r"^(\d+)(ms|s|m|h)$", duration.strip())
    return int(match.group(1)) * _UNITS[match.group(2)] if match else 300.0


class Command(BaseCommand):
    help = "Serve the metrics of an emulated cluster described by a scenario YAML file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scenario", required=True, help="scenario YAML file (docs/scenarios.md)")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=9200)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--ping-rate", type=float, default=5.0, help="emulated probes/s per directed pair")
        parser.add_argument("--bandwidth-interval", type=float, default=60.0,
                            help="seconds between emulated iperf3 tests of one pair")
        parser.add_argument("--write-prometheus-config", metavar="FILE",
                            help="write a prometheus.yml scraping every emulated node, then serve")
        parser.add_argument("--scrape-interval", default="5s", help="scrape interval for the written config")
        conf = settings.NETAWARE
        parser.add_argument("--export", choices=metrics.EXPORT_MODES, default=conf["PROBE_RTT_EXPORT"],
                            help="what the emulated agents export: quantiles (default) or histogram "
                                 "[NETAWARE_PROBE_RTT_EXPORT]")
        parser.add_argument("--max-peers", type=int, default=conf["PROBE_MAX_PEERS"],
                            help="K of the probe fan-out, 0 = full mesh [NETAWARE_PROBE_MAX_PEERS]")
        parser.add_argument("--min-pairs", type=int, default=conf["PROBE_MIN_PAIRS"],
                            help="m of the probe fan-out [NETAWARE_PROBE_MIN_PAIRS]")
        parser.add_argument("--rotation-seconds", type=float, default=conf["PROBE_ROTATION_SECONDS"],
                            help="rotation period of the fan-out [NETAWARE_PROBE_ROTATION_SECONDS]")
        parser.add_argument("--bandwidth-peers", type=int, default=conf["PROBE_BANDWIDTH_PEERS"],
                            help="K of the bandwidth fan-out, 0 = every peer [NETAWARE_PROBE_BANDWIDTH_PEERS]")
        parser.add_argument("--quantile-window", type=float, default=None,
                            help="seconds behind the agents' quantiles (default: NETAWARE_RATE_WINDOW)")
        parser.add_argument("--extra-target", action="append", default=[], metavar="JOB=HOST:PORT",
                            help="another /metrics to scrape in the written config (repeatable), e.g. the demo's "
                                 "mesh traffic emulator")
        parser.add_argument("--check", action="store_true", help="validate the scenario and exit")
        parser.add_argument("--config-only", action="store_true",
                            help="only write --write-prometheus-config (for --host:--port) and exit, do not serve")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["scenario"])
        if not path.is_file():
            raise CommandError(f"--scenario: no such file {str(path)!r}")
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            raise CommandError(f"invalid scenario {str(path)!r}: {exc}") from None
        if not _DURATION.match(options["scrape_interval"]):
            raise CommandError(f"--scrape-interval: {options['scrape_interval']!r} is not a duration like 5s")
        if options["ping_rate"] <= 0:
            raise CommandError("--ping-rate: must be positive")
        if options["bandwidth_interval"] <= 0:
            raise CommandError("--bandwidth-interval: must be positive")
        if not 0 <= options["port"] <= 65535:
            raise CommandError("--port: must be 0..65535")
        if options["check"]:
            self.stdout.write(f"scenario {scenario.name!r}: {len(scenario.nodes)} nodes, OK")
            return
        if options["config_only"]:
            if not options["write_prometheus_config"]:
                raise CommandError("--config-only: needs --write-prometheus-config FILE")
            if options["port"] == 0:
                raise CommandError("--port: --config-only needs a fixed port, not 0")
            self._write_config(Emulator(scenario, seed=options["seed"]), f"{options['host']}:{options['port']}",
                               options)
            return
        try:
            fanout = FanoutSettings(max_peers=options["max_peers"], min_pairs=options["min_pairs"],
                                  rotation_seconds=options["rotation_seconds"])
        except FanoutError as exc:
            raise CommandError(f"--{str(exc).split(':', 1)[0].replace('_', '-')}: {str(exc).split(':', 1)[1].strip()}") \
                from None
        window = options["quantile_window"] or _seconds(settings.NETAWARE["RATE_WINDOW"])
        if options["bandwidth_peers"] < 0 or window <= 0:
            raise CommandError("--bandwidth-peers/--quantile-window: must be >= 0 / > 0")
        emulator = Emulator(scenario, seed=options["seed"], ping_rate_hz=options["ping_rate"],
                            bandwidth_interval_s=options["bandwidth_interval"], export=options["export"],
                            fanout=fanout, bandwidth_peers=options["bandwidth_peers"], quantile_window_s=window)
        try:
            server = emulator.serve(options["host"], options["port"])
        except OSError as exc:
            raise CommandError(f"--port: cannot listen on {options['host']}:{options['port']}: {exc}") from None
        address = f"{options['host']}:{server.port}"
        if options["write_prometheus_config"]:
            self._write_config(emulator, address, options)
        self.stdout.write(f"emulating {scenario.name!r} ({len(scenario.nodes)} nodes, {emulator.active_pairs} "
                          f"probed pairs, {options['export']} export) at {server.url}/nodes/<node>/metrics",
                          ending="\n")
        self.stdout.flush()
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            stop.wait()
        finally:
            server.stop()

    def _write_config(self, emulator: Emulator, address: str, options: dict[str, Any]) -> None:
        config = emulator.prometheus_config(address, scrape_interval=options["scrape_interval"])
        for extra in options.get("extra_target") or ():
            job, _, target = extra.partition("=")
            if not re.match(r"^[a-zA-Z_][a-zA-Z0-9_-]*$", job) or not re.match(r"^[^\s:/]+:\d{1,5}$", target):
                raise CommandError(f"--extra-target: {extra!r} is not JOB=HOST:PORT")
            config["scrape_configs"].append({"job_name": job, "scrape_interval": options["scrape_interval"],
                                             "static_configs": [{"targets": [target]}]})
        path = Path(options["write_prometheus_config"])
        try:
            path.write_text(yaml.safe_dump(config, sort_keys=False))
        except OSError as exc:
            raise CommandError(f"--write-prometheus-config: cannot write {str(path)!r}: {exc.strerror}") from None
        self.stdout.write(f"wrote {path}")
