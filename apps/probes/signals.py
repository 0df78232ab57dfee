"""What the metrics pipeline tells the apps above it, without importing them (imports point one way:
docs/architecture.md). The topology app receives these (apps/topology/receivers.py)."""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import Signal

log = logging.getLogger(__name__)

# A pull read ``netaware_node_info``: ``nodes`` is a list of (name, zone, region).
nodes_reported = Signal()
# Prometheus was unreachable, slow or partial: ``reason`` says why (the data is now stale).
pull_failed = Signal()
# A pull stored new samples (sharded: the shard that completed a window): time to re-derive.
window_stored = Signal()


def send(signal: Signal, *, sender: object, **kwargs: Any) -> None:
    """Send ``signal`` to every receiver; one that raises is logged, the pipeline carries on."""
    for receiver, answer in signal.send_robust(sender=sender, **kwargs):
        if isinstance(answer, Exception):
            log.error("%s failed: %r", getattr(receiver, "__qualname__", receiver), answer, exc_info=answer)
