"""LoadVariationRiskBalancing (score): Trimaran's mean + margin x stddev risk, balanced. See
``../load_aware.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import load_aware
from ..plugin import Context, Plugin, number
from .shared import explain_usage

NAME = "load-variation-risk"


@dataclass(frozen=True)
class LoadVariationRiskArgs:
    margin: float = number(load_aware.DEFAULT_LVRB_MARGIN, low=0.0)
    sensitivity: float = number(load_aware.DEFAULT_LVRB_SENSITIVITY, low=1e-6)


def score_nodes(ctx: Context, args: LoadVariationRiskArgs) -> np.ndarray:
    return load_aware.load_variation_risk_scores(ctx.state, ctx.pod, ctx.candidates, margin=args.margin,
                                                 sensitivity=args.sensitivity, rows=ctx.rows)


PLUGIN: Plugin[LoadVariationRiskArgs] = Plugin(
    NAME, LoadVariationRiskArgs, "Trimaran LoadVariationRiskBalancing", score=score_nodes, explain=explain_usage)
