"""``python manage.py demo_scheduler``: the demo cluster's kube-scheduler for replacement pods.

The demo has no kube-scheduler; ``manage.py rollout`` schedules the pods it creates. Pods created by the
demo cluster's ReplicaSet stand-in (the replacements of evicted pods: ``metadata.generateName`` set,
``spec.schedulerName`` ours, no node) are scheduled by this loop, with the same cycle
(``apps.demo.rollout.KubeScheduler``: filter, prioritize and bind through the extender server), so the
rebalancer's moves land where netaware's plan says.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.demo.rollout import ExtenderConfig, KubeScheduler

log = logging.getLogger("netaware.demo_scheduler")


class Command(BaseCommand):
    help = "Schedule the demo cluster's replacement pods (from its ReplicaSet stand-in) through the extender."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--api", default=settings.NETAWARE.get("KUBE_API_URL") or "")
        parser.add_argument("--extender", default=os.environ.get("NETAWARE_EXTENDER_URL",
                                                                  "http://127.0.0.1:8001/scheduler"))
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between looks for pending pods")
        parser.add_argument("--once", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["api"]:
            raise CommandError("no Kubernetes API: pass --api or set KUBE_API_URL (the demo cluster's URL)")
        if options["interval"] <= 0:
            raise CommandError("--interval must be > 0 seconds")
        stop = threading.Event()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
        self.stdout.write(f"demo scheduler: replacement pods of {options['api']} through {options['extender']}")
        while not stop.is_set():
            try:
                scheduler = KubeScheduler(api_url=options["api"], extender=ExtenderConfig(url=options["extender"]))
                pending = [p for p in scheduler.load() if (p.get("metadata") or {}).get("generateName")]
                if pending:
                    result = scheduler.run(pending)
                    for pod, node in sorted(result.scheduled.items()):
                        self.stdout.write(f"{pod} -> {node}")
                    for pod, why in sorted(result.unschedulable.items()):
                        self.stderr.write(f"{pod} not scheduled: {why}")
            except Exception as exc:  # the API or the extender away: try again
                log.warning("demo scheduler: %s: %s", type(exc).__name__, exc)
            if options["once"]:
                return
            stop.wait(options["interval"])
