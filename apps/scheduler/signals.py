"""Tell the extenders their inputs changed when the models the scheduling cache loads change."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from apps.appgroups.models import AppGroup, Dependency, Placement, Workload
from apps.topology.models import Node, TopologySnapshot

from .models import SchedulerProfile
from .runtime import notify_change

_KINDS: dict[str, str] = {}


def state_inputs_changed(sender: Any, **kwargs: Any) -> None:
    kind = _KINDS.get(sender.__name__, "appgroups")
    transaction.on_commit(lambda: notify_change(kind))


def connect() -> None:
    kinds = {Node: "nodes", TopologySnapshot: "topology", AppGroup: "appgroups", Workload: "appgroups",
             Dependency: "appgroups", Placement: "pods", SchedulerProfile: "profiles"}
    for model, kind in kinds.items():
        _KINDS[model.__name__] = kind
        post_save.connect(state_inputs_changed, sender=model, dispatch_uid=f"scheduler-state-{model.__name__}-save")
        post_delete.connect(state_inputs_changed, sender=model, dispatch_uid=f"scheduler-state-{model.__name__}-del")
