"""Invalidate the extender's cached ClusterState when the models it is built from change."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save

log = logging.getLogger(__name__)


def _bump_shared() -> None:
    from .selectors import STATE_VERSION_KEY, redis_client

    try:
        redis_client().incr(STATE_VERSION_KEY)
    except Exception as exc:  # Redis down: the periodic database fingerprint still catches it
        log.debug("state version bump failed: %s", exc)


def state_inputs_changed(sender: Any, **kwargs: Any) -> None:
    from .selectors import invalidate_state

    invalidate_state()
    transaction.on_commit(_bump_shared)


def connect() -> None:
    from apps.appgroups.models import AppGroup, Dependency, Placement, Workload
    from apps.topology.models import Node, TopologySnapshot

    from .models import SchedulerProfile

    for model in (Node, TopologySnapshot, AppGroup, Workload, Dependency, Placement, SchedulerProfile):
        post_save.connect(state_inputs_changed, sender=model, dispatch_uid=f"scheduler-state-{model.__name__}-save")
        post_delete.connect(state_inputs_changed, sender=model, dispatch_uid=f"scheduler-state-{model.__name__}-del")
