"""TargetLoadPacking (score): Trimaran's bin packing on CPU toward a target utilisation. See
``../load_aware.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import load_aware
from ..plugin import Context, Plugin, number
from .shared import explain_usage

NAME = "target-load-packing"


@dataclass(frozen=True)
class TargetLoadPackingArgs:
    target_utilization: float = number(load_aware.DEFAULT_TARGET_UTILIZATION, low=1.0, high=99.0)


def score_nodes(ctx: Context, args: TargetLoadPackingArgs) -> np.ndarray:
    return load_aware.target_load_packing_scores(ctx.state, ctx.pod, ctx.candidates,
                                                 target_utilization=args.target_utilization, rows=ctx.rows)


PLUGIN: Plugin[TargetLoadPackingArgs] = Plugin(
    NAME, TargetLoadPackingArgs, "Trimaran TargetLoadPacking (CPU)", score=score_nodes, explain=explain_usage)
