"""``python manage.py demo_cluster``: serve the demo cluster's API for a scenario's nodes.

An in-memory server speaking the Kubernetes REST protocol (``apps/demo/kubeapi.py``) — not a
Kubernetes substitute: nothing runs pods, but a bound pod reports Running and Ready, a deleted or
evicted pod of an existing ReplicaSet is replaced and Evictions honour PodDisruptionBudgets. netaware's
cluster watcher, AppGroup sync and extender talk to it as to a real API server, and so does kubectl (``kubectl --server URL get nodes,pods -o wide``).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.demo.cluster import node_objects
from apps.demo.kubeapi import FakeKube
from apps.probes.scenario import ScenarioError, load_scenario


class Command(BaseCommand):
    help = "Serve the demo cluster API (the scenario's nodes; AppGroup/NetworkTopology CRDs registered)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scenario", default=settings.NETAWARE["SCENARIO"])
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8010)
        parser.add_argument("--ready-file", default="", help="write the URL here once listening")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            scenario = load_scenario(options["scenario"])
        except (OSError, ScenarioError) as exc:
            raise CommandError(f"scenario {options['scenario']}: {exc}") from exc
        server = FakeKube(host=options["host"], max_requests=10_000, run_bound_pods=True, run_controllers=True)
        for path in sorted((Path(settings.BASE_DIR) / "k8s" / "crds").glob("*.y*ml")):
            server.register_crd_file(path)
        server.register_defaults()
        server.seed(node_objects(scenario))
        try:
            server.start(options["port"])
        except OSError as exc:
            raise CommandError(f"cannot listen on {options['host']}:{options['port']}: {exc}") from exc
        if options["ready_file"]:
            Path(options["ready_file"]).write_text(server.url)
        self.stdout.write(f"demo cluster API on {server.url} ({len(scenario.nodes)} nodes of {scenario.name})")
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        server.stop()
