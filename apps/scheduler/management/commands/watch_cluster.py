"""``python manage.py watch_cluster``: keep the node cache and pod placements current.

Level-triggered like a kopf/informer loop: list nodes and pods (reconciling the whole cache from
the list, including deletions missed while away), then watch from the list's resourceVersion,
resuming from the last seen version after a dropped stream, re-listing on 410 Gone, backing off
with jitter on errors. ``--once`` runs a single list pass and exits (cron/tests).

The loop itself is ``netaware_core.informer.ListWatch``, shared with the extender's informers.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections, connection

from apps.appgroups.services import record_placement, remove_placement
from apps.scheduler import services, wire
from apps.scheduler.models import ObservedPod
from apps.scheduler.runtime import notify_change
from apps.topology.models import Node
from apps.topology.services import upsert_node
from netaware_core import heartbeat, kube
from netaware_core.informer import ListWatch

log = logging.getLogger("netaware.watch_cluster")


def _node_fields(obj: dict[str, Any]) -> dict[str, Any]:
    node = wire.parse_node(obj, "node")
    status = wire.get_ci(obj, "status") or {}
    address = ""
    for entry in wire.get_ci(status, "addresses") or []:
        if isinstance(entry, dict) and entry.get("type") == "InternalIP":
            address = entry.get("address") or ""
            break
    return {
        "name": node.name,
        "zone": node.resources.zone,
        "region": node.resources.region,
        "labels": dict(node.resources.labels),
        "address": address,
        "allocatable_cpu_millicores": node.resources.allocatable_cpu_millicores,
        "allocatable_memory_bytes": node.resources.allocatable_memory_bytes,
        "ready": node.ready,
    }


class ClusterWatcher:
    """Reconciles Node rows, the pod cache and AppGroup placements from the Kubernetes API."""

    def __init__(self, *, watch_timeout: int = 300, stop: threading.Event | None = None,
                 out: Callable[[str], None] | None = None, resync_seconds: float = 600.0) -> None:
        self.watch_timeout = watch_timeout
        self.resync_seconds = resync_seconds
        self.stop = stop or threading.Event()
        self.out = out or (lambda message: log.info(message))
        self.changed = False

    # --- applying objects -------------------------------------------------------------------

    def apply_node(self, obj: dict[str, Any]) -> None:

        fields = _node_fields(obj)
        # Kubelet status heartbeats change nothing the scheduler reads: skipping them keeps a
        # 5,000-node cluster from invalidating every extender's state several times a second.
        current = Node.objects.filter(name=fields["name"]).values(*fields, "source").first()
        if current is not None and current.pop("source") == "cluster" and current == fields:
            return
        upsert_node(**fields, source="cluster")
        self.changed = True

    def delete_node(self, obj: dict[str, Any]) -> None:
        # The node cache keeps history for the topology; a deleted node is simply not ready.
        fields = _node_fields(obj)
        fields["ready"] = False

        upsert_node(**fields, source="cluster")
        self.changed = True

    def apply_pod(self, obj: dict[str, Any], *, force: bool = False) -> None:
        """Cache the pod and reconcile its placement. Watch events that change nothing relevant are
        skipped; a (re-)list forces the placement check, since an AppGroup created after the pod
        was first seen makes an unchanged pod placeable."""

        row, changed = services.upsert_observed_pod(obj=obj)
        if row is None or not (changed or force):
            return
        if row.terminal:
            remove_placement(pod_namespace=row.namespace, pod_name=row.name)
        elif row.node_name:
            record_placement(
                pod_namespace=row.namespace,
                pod_name=row.name,
                pod_uid=row.uid,
                node_name=row.node_name,
                labels=dict(row.labels or {}),
                source="watcher",
            )
        self.changed = True

    def delete_pod(self, obj: dict[str, Any]) -> None:

        meta = wire.get_ci(obj, "metadata") or {}
        namespace = wire.get_ci(meta, "namespace") or "default"
        name = wire.get_ci(meta, "name") or ""
        services.delete_observed_pod(namespace=namespace, name=name)
        remove_placement(pod_namespace=namespace, pod_name=name)
        self.changed = True

    # --- list + watch (netaware_core.informer.ListWatch) ----------------------------------------

    def on_list(self, kind: str, items: list[dict[str, Any]], version: str) -> None:
        if not connection.in_atomic_block:  # drop a connection the database closed on us
            close_old_connections()
        if kind == "nodes":
            for obj in items:
                self.apply_node(obj)
        else:
            seen: set[tuple[str, str]] = set()
            for obj in items:
                self.apply_pod(obj, force=True)
                meta = obj.get("metadata") or {}
                seen.add((meta.get("namespace") or "default", meta.get("name") or ""))
            self._forget_missing_pods(seen)
        self.flush()
        self.out(f"listed {len(items)} {kind} at resourceVersion {version}")

    def _forget_missing_pods(self, seen: set[tuple[str, str]]) -> None:

        for namespace, name in ObservedPod.objects.values_list("namespace", "name"):
            if (namespace, name) not in seen:
                services.delete_observed_pod(namespace=namespace, name=name)
                remove_placement(pod_namespace=namespace, pod_name=name)
                self.changed = True

    def flush(self) -> None:
        if self.changed:
            self.changed = False
            notify_change("pods")

    def on_event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        if not connection.in_atomic_block:
            close_old_connections()
        if kind == "nodes":
            (self.delete_node if etype == "DELETED" else self.apply_node)(obj)
        else:
            (self.delete_pod if etype == "DELETED" else self.apply_pod)(obj)
        self.flush()

    def on_error(self, kind: str, message: str) -> None:
        self.out(f"{kind}: {message}")
        with contextlib.suppress(Exception):
            connection.close()

    def run_kind(self, kind: str, *, once: bool = False) -> None:
        """List then watch ``kind`` ("nodes" or "pods") until ``stop`` is set."""
        ListWatch(
            f"/api/v1/{kind}",
            on_list=lambda items, version: self.on_list(kind, items, version),
            on_event=lambda etype, obj: self.on_event(kind, etype, obj),
            on_error=lambda message: self.on_error(kind, message),
            on_note=lambda note: self.out(f"{kind}: {note}"),
            # Liveness: one heartbeat per list/watch round (the Deployment's watch requests last 60 s).
            on_round=lambda: heartbeat.touch("watch_cluster"),
            stop=self.stop, watch_timeout=self.watch_timeout, resync_seconds=self.resync_seconds,
        ).run(once=once)

    def run(self, *, once: bool = False) -> None:
        if once:
            self.run_kind("nodes", once=True)
            self.run_kind("pods", once=True)
            return
        threads = [
            threading.Thread(target=self._thread, args=(kind,), name=f"watch-{kind}", daemon=True)
            for kind in ("nodes", "pods")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)

    def _thread(self, kind: str) -> None:
        try:
            self.run_kind(kind)
        finally:
            connection.close()


class Command(BaseCommand):
    help = "List and watch Kubernetes nodes and pods: node cache, pod cache and AppGroup placements."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="one list pass, then exit")
        parser.add_argument("--watch-timeout", type=int, default=300, help="seconds per watch request")
        parser.add_argument("--resync", type=float, default=600.0,
                            help="seconds between full re-lists (level-triggered reconciliation)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["watch_timeout"] < 1:
            raise CommandError("--watch-timeout must be at least 1 second")
        stop = threading.Event()
        watcher = ClusterWatcher(
            watch_timeout=options["watch_timeout"], stop=stop, out=lambda m: self.stdout.write(m),
            resync_seconds=options["resync"],
        )
        if not options["once"]:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
        started = time.monotonic()
        try:
            watcher.run(once=options["once"])
        except Exception as exc:

            raise CommandError(f"cluster watch failed: {kube.describe(exc)}") from exc
        self.stdout.write(f"watch_cluster stopped after {time.monotonic() - started:.1f}s")
