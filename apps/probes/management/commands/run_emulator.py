"""Serve an emulated cluster's probe and node_exporter metrics (docs/scenarios.md)."""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.probes.emulator import Emulator
from apps.probes.scenario import ScenarioError, load_scenario

_DURATION = re.compile(r"^\d+(ms|s|m|h)$")


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
        emulator = Emulator(scenario, seed=options["seed"], ping_rate_hz=options["ping_rate"],
                            bandwidth_interval_s=options["bandwidth_interval"])
        try:
            server = emulator.serve(options["host"], options["port"])
        except OSError as exc:
            raise CommandError(f"--port: cannot listen on {options['host']}:{options['port']}: {exc}") from None
        address = f"{options['host']}:{server.port}"
        if options["write_prometheus_config"]:
            self._write_config(emulator, address, options)
        self.stdout.write(f"emulating {scenario.name!r} ({len(scenario.nodes)} nodes) at {server.url}"
                          f"/nodes/<node>/metrics", ending="\n")
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
        path = Path(options["write_prometheus_config"])
        try:
            path.write_text(yaml.safe_dump(config, sort_keys=False))
        except OSError as exc:
            raise CommandError(f"--write-prometheus-config: cannot write {str(path)!r}: {exc.strerror}") from None
        self.stdout.write(f"wrote {path}")
