"""WaterLevel (score): utilisation toward a dynamic cluster target, with a hot-spot penalty for
recent bindings. See ``../load_aware.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import load_aware
from ..plugin import Context, Plugin, number
from .shared import explain_usage

NAME = "water-level"


@dataclass(frozen=True)
class WaterLevelArgs:
    average_weight: float = number(load_aware.DEFAULT_AVERAGE_WEIGHT, low=0.0, high=1.0)
    hot_spot_penalty: float = number(load_aware.DEFAULT_HOT_SPOT_PENALTY, low=0.0, high=100.0)
    cpu_weight: float = number(0.5, low=0.0)
    memory_weight: float = number(0.5, low=0.0)


def score_nodes(ctx: Context, args: WaterLevelArgs) -> np.ndarray:
    return load_aware.water_level_scores(ctx.state, ctx.pod, ctx.candidates, average_weight=args.average_weight,
                                         hot_spot_penalty=args.hot_spot_penalty, cpu_weight=args.cpu_weight,
                                         memory_weight=args.memory_weight, rows=ctx.rows)


PLUGIN: Plugin[WaterLevelArgs] = Plugin(
    NAME, WaterLevelArgs, "Water level toward a dynamic cluster target, hot-spot penalty",
    score=score_nodes, explain=explain_usage)
