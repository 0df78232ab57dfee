"""Evaluation harness: replay the paper's experiment with every scheduler profile (no Django).

Public entry points: ``run_evaluation`` (files -> EvaluationReport), ``evaluate`` (parsed inputs),
``report_figure`` (plotly figure dict), ``format_table`` and ``optimum_placement``.
"""

from .adapter import EvaluationInputError
from .metrics import LatencyModel
from .optimum import Optimum, optimum_placement
from .report import (
    EvaluationReport,
    ProfileResult,
    Stat,
    evaluate,
    format_table,
    report_figure,
    run_evaluation,
)

__all__ = [
    "EvaluationInputError",
    "EvaluationReport",
    "LatencyModel",
    "Optimum",
    "ProfileResult",
    "Stat",
    "evaluate",
    "format_table",
    "optimum_placement",
    "report_figure",
    "run_evaluation",
]
