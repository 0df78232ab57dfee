"""``python manage.py run_mesh_emulator``: serve Istio-, Linkerd- and OpenTelemetry-format traffic series
for an AppGroup's known call graph (apps/demo/mesh.py), for Prometheus to scrape: the demo's observed
traffic, learned by apps.traffic (docs/traffic.md)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.appgroups import documents
from apps.demo.mesh import FORMATS, MeshEmulator, calls_of


def _idle(text: str) -> tuple[tuple[str, str], tuple[float, float]]:
    """CALLER:CALLEE:PERIOD_SECONDS:IDLE_FRACTION"""
    try:
        caller, callee, period, fraction = text.split(":")
        value = (float(period), float(fraction))
    except ValueError:
        raise CommandError(f"--idle: {text!r} is not CALLER:CALLEE:PERIOD_SECONDS:IDLE_FRACTION") from None
    if value[0] <= 0 or not 0 <= value[1] < 1:
        raise CommandError(f"--idle: {text!r}: the period must be > 0 and the fraction in [0, 1)")
    return (caller, callee), value


class Command(BaseCommand):
    help = "Serve emulated service-mesh traffic metrics for an AppGroup's call graph."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--appgroup", default=str(Path(settings.BASE_DIR) / "scenarios" / "online-boutique-appgroup.yaml"))
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=9210)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--formats", default=",".join(FORMATS), help="comma list of istio, linkerd, otel")
        parser.add_argument("--rate", type=float, default=4.0, help="requests/s of a weight-1 caller per edge")
        parser.add_argument("--idle", action="append", default=None, metavar="CALLER:CALLEE:PERIOD:FRACTION",
                            help="an edge idle for FRACTION of every PERIOD seconds (repeatable; default: "
                                 "checkoutservice:emailservice:600:0.5, to show that a quiet edge is kept)")
        parser.add_argument("--check", action="store_true", help="validate the arguments and exit")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            group = documents.spec_from_document(yaml.safe_load(Path(options["appgroup"]).read_text()))
        except (OSError, yaml.YAMLError) as exc:
            raise CommandError(f"--appgroup: {exc}") from None
        except documents.DocumentError as exc:
            raise CommandError(f"--appgroup: {exc}") from None
        if options["rate"] <= 0:
            raise CommandError("--rate: must be positive")
        if not 0 <= options["port"] <= 65535:
            raise CommandError("--port: must be 0..65535")
        idle = dict(_idle(text) for text in (options["idle"] if options["idle"] is not None
                                            else ["checkoutservice:emailservice:600:0.5"]))
        try:
            emulator = MeshEmulator(calls_of(group, base_rps=options["rate"], idle=idle), namespace=group.namespace,
                                    formats=[f.strip() for f in options["formats"].split(",") if f.strip()],
                                    seed=options["seed"])
        except ValueError as exc:
            raise CommandError(f"--formats: {exc}") from None
        if options["check"]:
            self.stdout.write(f"{len(emulator.calls)} call edges of {group.namespace}/{group.name}, OK")
            return
        try:
            httpd, _thread = emulator.serve(options["host"], options["port"])
        except OSError as exc:
            raise CommandError(f"--port: cannot listen on {options['host']}:{options['port']}: {exc}") from None
        self.stdout.write(f"mesh traffic of {group.namespace}/{group.name} ({len(emulator.calls)} edges, "
                          f"{', '.join(emulator.formats)}) at http://{options['host']}:{httpd.server_address[1]}/metrics")
        self.stdout.flush()
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            stop.wait()
        finally:
            httpd.shutdown()
            httpd.server_close()
