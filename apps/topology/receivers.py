"""The topology's answers to the metrics pipeline's signals (apps/probes/signals.py), connected in
``TopologyConfig.ready``. The probes app sends them with ``send_robust``: a failure here is logged
there and never fails a pull."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from apps.probes import signals

from . import services, tasks


@receiver(signals.nodes_reported, dispatch_uid="topology.upsert_nodes")
def upsert_nodes(*, nodes: list[tuple[str, str, str]], **_: Any) -> None:
    services.upsert_nodes_from_metrics(nodes=nodes)


@receiver(signals.pull_failed, dispatch_uid="topology.mark_stale")
def mark_stale(*, reason: str, **_: Any) -> None:
    services.mark_stale(reason=reason)


@receiver(signals.window_stored, dispatch_uid="topology.rebuild")
def enqueue_rebuild(**_: Any) -> None:
    tasks.rebuild_topology.delay()
