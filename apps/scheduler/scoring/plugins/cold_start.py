"""ColdStart (score): connectivity toward free capacity while none of the pod's dependencies or
dependents is placed; neutral once one is (NetworkScore applies then). See ``../cold_start.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import cold_start, network_score
from ..common import NEUTRAL_SCORE
from ..plugin import Context, Plugin, ProfileError, number
from .shared import known_only, terms

NAME = "cold-start"


@dataclass(frozen=True)
class ColdStartArgs:
    same_node_score: float = number(network_score.DEFAULT_SAME_NODE_SCORE, low=0.0, high=1.0)
    max_pods_per_node: float = number(cold_start.DEFAULT_MAX_PODS_PER_NODE, low=1.0)
    sample: int = number(cold_start.DEFAULT_SAMPLE, low=8, high=4096, integer=True)
    cold_start_knee: float = number(cold_start.DEFAULT_KNEE, low=1e-4, high=0.5)
    cold_start_spread: float = number(cold_start.DEFAULT_SPREAD, low=1e-3, high=1.0)

    def check(self, path: str) -> None:
        if self.cold_start_spread <= self.cold_start_knee:
            raise ProfileError(f"{path}.cold_start_spread",
                               f"cold_start_spread: must be > cold_start_knee ({self.cold_start_knee}), got {self.cold_start_spread}")


def score_nodes(ctx: Context, args: ColdStartArgs) -> np.ndarray:
    ref = ctx.workload
    placed, _ = terms(ctx)
    if placed:
        return np.full(len(ctx.candidates), NEUTRAL_SCORE)  # neighbours placed: NetworkScore applies
    scores, notes = cold_start.cold_start_scores(
        ctx.state, ref, ctx.pod, ctx.positions, same_node_score=args.same_node_score,
        max_pods_per_node=args.max_pods_per_node, sample=args.sample, knee=args.cold_start_knee,
        spread=args.cold_start_spread)
    ctx.notes.extend(notes)
    if scores is None:
        return np.full(len(ctx.candidates), NEUTRAL_SCORE)
    ctx.notes.append("cold start: no dependency or dependent placed yet; scored toward free capacity")
    return known_only(ctx, scores)


PLUGIN: Plugin[ColdStartArgs] = Plugin(
    NAME, ColdStartArgs, "Connectivity toward free capacity when no neighbour is placed; neutral otherwise",
    score=score_nodes)
