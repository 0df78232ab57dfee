"""Results more than one plugin reads, remembered once per call (and carried to the survivors)."""

from __future__ import annotations

import numpy as np

from .. import network_score
from ..common import NEUTRAL_SCORE, WorkloadRef
from ..plugin import Context, Explanation, carry_whole
from ..state import ClusterState


def terms(ctx: Context) -> tuple[tuple[network_score.Term, ...], tuple[str, ...]]:
    """Algorithm 2's terms for the pod's workload (NetworkScore and ColdStart; per workload, so the
    survivors of a filter call keep them)."""
    ref = ctx.workload
    result: tuple[tuple[network_score.Term, ...], tuple[str, ...]] = ctx.remember(
        ("terms",), lambda: network_score.network_terms(ctx.state, ref), carry_whole)
    return result


def known_only(ctx: Context, scores: np.ndarray) -> np.ndarray:
    """Neutral network scores for the candidates the topology does not know (with a note)."""
    unknown = ctx.positions < 0
    if unknown.any():
        ctx.notes.append("network scores neutral for nodes not in the topology: "
                         + ", ".join(np.array(ctx.candidates, dtype=object)[unknown][:10]))
    return np.where(unknown, NEUTRAL_SCORE, scores)


def explain_usage(state: ClusterState, ref: WorkloadRef, out: Explanation) -> None:
    """The load-aware plugins' shared explanation: nodes whose usage metrics are stale or missing."""
    stale = sum(1 for u in state.usage.values() if u.stale)
    without = sum(1 for n in state.nodes if n not in state.usage)
    if stale or without:
        out.info.append(f"load-aware scorers neutral on {stale} node(s) with stale and {without} without usage metrics")
