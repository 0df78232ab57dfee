"""BandwidthRisk (filter and score): scheduler-plugins' CheckRiskNodeBandwidth. The filter rejects
a node whose bandwidth risk is above ``threshold``; the score is (1 - risk) x 100. Both read the
same risk per candidate (remembered once). See ``../bandwidth.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import bandwidth
from ..plugin import Context, FilterResult, Plugin, carry_rows, number, readonly

NAME = "bandwidth-risk"


@dataclass(frozen=True)
class BandwidthRiskArgs:
    margin: float = number(bandwidth.DEFAULT_MARGIN, low=0.0)
    sensitivity: float = number(bandwidth.DEFAULT_SENSITIVITY, low=1e-6)
    threshold: float = number(bandwidth.DEFAULT_RISK_THRESHOLD, low=0.0, high=1.0)  # the filter's


def risk(ctx: Context, args: BandwidthRiskArgs) -> np.ndarray:
    """Node bandwidth risk per candidate (read-only)."""
    margin, sensitivity = args.margin, args.sensitivity
    result: np.ndarray = ctx.remember(("bw-risk", margin, sensitivity), lambda: readonly(bandwidth.bandwidth_risk(
        ctx.state, ctx.pod, ctx.candidates, margin=margin, sensitivity=sensitivity, rows=ctx.rows)), carry_rows)
    return result


def filter_nodes(ctx: Context, args: BandwidthRiskArgs) -> FilterResult:
    return bandwidth.bandwidth_risk_failures(ctx.state, ctx.pod, ctx.candidates, margin=args.margin,
                                             sensitivity=args.sensitivity, threshold=args.threshold,
                                             risk=risk(ctx, args)), {}


def score_nodes(ctx: Context, args: BandwidthRiskArgs) -> np.ndarray:
    return bandwidth.bandwidth_risk_scores(ctx.state, ctx.pod, ctx.candidates, margin=args.margin,
                                           sensitivity=args.sensitivity, risk=risk(ctx, args))


PLUGIN: Plugin[BandwidthRiskArgs] = Plugin(
    NAME, BandwidthRiskArgs, "CheckRiskNodeBandwidth: reject above the risk threshold; score (1 - risk) x 100",
    score=score_nodes, filter=filter_nodes)
