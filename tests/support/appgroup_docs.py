"""Shared helpers for the AppGroup sync tests: the CRD coordinates, a small two-workload AppGroup
resource (web -> db) and a polling wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

G, V, P = "netaware.io", "v1alpha1", "appgroups"


def small_appgroup(
    name: str,
    namespace: str = "shop",
    *,
    weight: float | None = None,
    latency: float = 1,
    bandwidth: float = 0,
    lossrate: float = 0,
) -> dict[str, Any]:
    """A ``netaware.io`` AppGroup where ``web`` depends on ``db``; ``weight`` (of ``web``) is left out
    of the document when None, so the resource default applies. Selectors include the AppGroup pin
    label, so several of these in one namespace never claim the same pods (which writes refuse)."""
    pin = {"netaware.io/appgroup": name}
    web: dict[str, Any] = {"name": "web", "selector": {"matchLabels": {"app": "web", **pin}}}
    if weight is not None:
        web["weight"] = weight
    web["dependencies"] = [
        {"name": "db", "metrics": {"latency": latency, "bandwidth": bandwidth, "lossrate": lossrate}}
    ]
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "AppGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"workloads": [web, {"name": "db", "selector": {"matchLabels": {"app": "db", **pin}}}]},
    }


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` every 50 ms until it is truthy (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False
