"""``manage.py sync_appgroups [--once] [--watch]``: two-way AppGroup sync with the cluster.

``--once`` runs one full level-triggered pass and exits (non-zero when something is left for the
next pass); ``--watch`` (the default) lists + watches our AppGroup objects and re-runs a full pass
every ``--resync`` seconds so netaware-side edits and missed events converge too.
"""

from __future__ import annotations

import json
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from kubernetes.config import ConfigException

from apps.appgroups import sync
from netaware_core import heartbeat


class Command(BaseCommand):
    help = "Sync AppGroups between netaware and the cluster (one pass, or list + watch)."

    def add_arguments(self, parser: Any) -> None:
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--once", action="store_true", help="one full pass, then exit")
        mode.add_argument("--watch", action="store_true", help="list + watch until interrupted (default)")
        parser.add_argument(
            "--resync", type=float, default=60.0, help="seconds between full passes (watch mode)"
        )
        parser.add_argument("--watch-timeout", type=int, default=30, help="seconds per watch request")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["resync"] <= 0:
            raise CommandError("--resync must be a positive number of seconds")
        if options["watch_timeout"] <= 0:
            raise CommandError("--watch-timeout must be a positive number of seconds")
        try:
            self._run(options)
        except ConfigException as exc:
            raise CommandError(
                f"no Kubernetes API configured (set KUBE_API_URL, run in a cluster or provide a kubeconfig): {exc}"
            ) from exc

    def _run(self, options: dict[str, Any]) -> None:
        if options["once"]:
            report = sync.sync_once()
            self.stdout.write(json.dumps(report.summary(), sort_keys=True))
            if not report.ok:
                raise CommandError("sync pass incomplete: " + "; ".join(report.errors))
            return
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        self.stdout.write("watching AppGroups (Ctrl-C to stop)")
        sync.watch(
            stop=stop,
            watch_timeout=options["watch_timeout"],
            resync_seconds=options["resync"],
            on_pass=self._on_pass,
        )

    def _on_pass(self, report: sync.SyncReport) -> None:
        heartbeat.touch("sync_appgroups")  # liveness: a full pass at least every --resync seconds
        self.stdout.write(json.dumps(report.summary(), sort_keys=True))
