"""MinBandwidth (filter): reject a node whose bandwidth toward a placed dependency is below the
dependency's minimum. See ``../bandwidth.py``."""

from __future__ import annotations

from .. import bandwidth
from ..plugin import Context, FilterResult, NoArgs, Plugin

NAME = "min-bandwidth"


def filter_nodes(ctx: Context, args: NoArgs) -> FilterResult:
    return {}, bandwidth.min_bandwidth_failures(ctx.state, ctx.workload, ctx.candidates)


PLUGIN: Plugin[NoArgs] = Plugin(
    NAME, NoArgs, "Reject when bandwidth toward a placed dependency is below its minimum",
    filter=filter_nodes, unresolvable=True)
