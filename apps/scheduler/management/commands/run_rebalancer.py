"""``python manage.py run_rebalancer``: the rebalancer as its own process (docs/rebalancer.md).

Leader-elected through a coordination.k8s.io Lease (``REBALANCER_LEASE_NAME`` in ``KUBE_NAMESPACE``,
the extender's ``LeaderElector``): any number of replicas may run, only the holder evicts. Its decisions
go through the decision log like the extender's (Redis, else Postgres). Liveness: a heartbeat per pass
(``netaware_core/heartbeat.py``, name ``rebalancer``).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.scheduler import selectors
from apps.scheduler.decisionlog import DecisionLog
from apps.scheduler.rebalancer import Limits, Rebalancer, assess_appgroup
from apps.scheduler.runtime import LeaderElector
from netaware_core import heartbeat, kube


class Command(BaseCommand):
    help = "Move running pods of AppGroups in rebalanceMode on toward the best plan (dry-run: report only)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="one pass (no leader election), then exit")
        parser.add_argument("--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
                            help="this replica's name in the Lease (env POD_NAME)")

    def handle(self, *args: Any, **options: Any) -> None:
        if not kube.configured():
            raise CommandError("no Kubernetes API configured: set KUBE_API_URL, run in a cluster, or provide a "
                               "kubeconfig (the rebalancer evicts through the Eviction API)")
        conf = selectors.conf
        limits = Limits.from_settings()
        if limits.interval <= 0 or limits.sustain < 0 or limits.ready_timeout <= 0:
            raise CommandError("NETAWARE_REBALANCER_INTERVAL_SECONDS and _READY_TIMEOUT_SECONDS must be > 0, "
                               "_SUSTAIN_SECONDS >= 0")
        decisions = DecisionLog(redis_client=selectors.redis_client, queue_max=int(conf("DECISION_QUEUE_MAX")),
                                buffer_max=int(conf("DECISION_BUFFER_MAX")),
                                retention=int(conf("DECISION_RETENTION")))
        rebalancer = Rebalancer(assess=assess_appgroup, decisions=decisions, limits=limits)
        if options["once"]:
            report = rebalancer.run_pass()
            decisions.ship()
            for key, phase in sorted(report.phases.items()):
                self.stdout.write(f"{key}: {phase}")
            for move in report.moves:
                self.stdout.write(f"{move['appgroup']}: {move['outcome']} {move['pod']} {move['fromNode']} -> "
                                  f"{move['toNode']} (+{move['expectedGain']:.4f}) {move['reason']}")
            for key, error in sorted(report.errors.items()):
                self.stderr.write(f"{key}: {error}")
            return
        lease_seconds = float(conf("REBALANCER_LEASE_SECONDS"))
        elector = LeaderElector(rebalancer, namespace=conf("KUBE_NAMESPACE"), name=conf("REBALANCER_LEASE_NAME"),
                                identity=options["identity"], duration=lease_seconds,
                                renew_deadline=lease_seconds * 2 / 3, retry=lease_seconds * 2 / 15)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: rebalancer.stop_event.set())
        decisions.start()
        threading.Thread(target=elector.run, name="leader-election", daemon=True).start()
        self.stdout.write(f"netaware rebalancer {options['identity']} (lease {conf('KUBE_NAMESPACE')}/"
                          f"{conf('REBALANCER_LEASE_NAME')}, a pass every {limits.interval:g} s)")

        def leading() -> bool:
            heartbeat.touch("rebalancer")
            return elector.leading

        try:
            rebalancer.run(leading=leading)
        finally:
            decisions.stop()
