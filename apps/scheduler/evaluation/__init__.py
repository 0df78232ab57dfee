"""Evaluation harness: replay the paper's experiment with every scheduler profile (no Django).

Public entry points: ``run_evaluation`` (files -> EvaluationReport), ``evaluate`` (parsed inputs),
``report_figure`` (plotly figure dict), ``format_table``, ``certified_optimum`` (the reference: best
placement found with a proven bound) and ``optimum_placement`` (the node-level MILP, small cases).
"""

from .adapter import EvaluationInputError
from .certified import CertifiedOptimum, certified_optimum
from .metrics import LatencyModel, TransferModel
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
    "CertifiedOptimum",
    "EvaluationInputError",
    "EvaluationReport",
    "LatencyModel",
    "Optimum",
    "ProfileResult",
    "Stat",
    "TransferModel",
    "certified_optimum",
    "evaluate",
    "format_table",
    "optimum_placement",
    "report_figure",
    "run_evaluation",
]
