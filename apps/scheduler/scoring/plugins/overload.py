"""Overload (filter): reject nodes whose measured CPU or memory utilisation is above a limit. See
``../load_aware.py``."""

from __future__ import annotations

from dataclasses import dataclass

from .. import load_aware
from ..plugin import Context, FilterResult, Plugin, number
from .shared import explain_usage

NAME = "overload"


@dataclass(frozen=True)
class OverloadArgs:
    cpu_threshold: float = number(load_aware.DEFAULT_OVERLOAD_THRESHOLD, low=0.0, high=1.0)
    memory_threshold: float = number(load_aware.DEFAULT_OVERLOAD_THRESHOLD, low=0.0, high=1.0)


def filter_nodes(ctx: Context, args: OverloadArgs) -> FilterResult:
    return load_aware.overload_failures(ctx.state, ctx.candidates, cpu_threshold=args.cpu_threshold,
                                        memory_threshold=args.memory_threshold, rows=ctx.rows), {}


PLUGIN: Plugin[OverloadArgs] = Plugin(
    NAME, OverloadArgs, "Reject nodes above a utilisation limit", filter=filter_nodes, explain=explain_usage)
