"""The scoring plugins, one module each (``NAME``, typed ``Args``, ``filter_nodes`` and/or
``score_nodes``, ``explain``, ``PLUGIN``). ``PLUGINS`` is the order ``engine.explain`` consults
them in and the order error messages list them; ``REGISTRY`` finds them by name."""

from __future__ import annotations

from typing import Any

from ..plugin import Plugin
from . import (
    bandwidth_risk,
    cold_start,
    load_variation_risk,
    min_bandwidth,
    network_overhead,
    network_score,
    overload,
    plan,
    target_load_packing,
    water_level,
)

PLUGINS: tuple[Plugin[Any], ...] = (
    network_score.PLUGIN,
    cold_start.PLUGIN,
    network_overhead.PLUGIN,
    min_bandwidth.PLUGIN,
    bandwidth_risk.PLUGIN,
    plan.PLUGIN,
    water_level.PLUGIN,
    target_load_packing.PLUGIN,
    load_variation_risk.PLUGIN,
    overload.PLUGIN,
)

# The one registry: plugin name -> plugin (a plugin implementing filter and score is one entry).
REGISTRY: dict[str, Plugin[Any]] = {p.name: p for p in PLUGINS}
