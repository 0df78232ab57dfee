"""Evaluation inputs and results as the pages show them: the AppGroup file of a choice, the report's
table rows, JSON-safe figures. Shared by the evaluation page and the background run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from apps.appgroups import services
from apps.appgroups.models import AppGroup

DB_PREFIX = "db:"


def appgroup_file(choice: str, tmpdir: str) -> Path:
    """A file path for the AppGroup choice; a stored AppGroup is exported (our CR) to a temp file."""
    if not choice.startswith(DB_PREFIX):
        return Path(settings.BASE_DIR) / choice

    appgroup = AppGroup.objects.get(pk=int(choice[len(DB_PREFIX):]))
    path = Path(tmpdir) / f"{appgroup.namespace}-{appgroup.name}.yaml"
    path.write_text(yaml.safe_dump(services.export_document(appgroup=appgroup), sort_keys=False))
    return path


def _fmt(stat: Any, digits: int = 1) -> str:
    mean, sd = stat.mean, stat.sd
    if mean != mean:
        return "n/a"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def json_safe(value: Any) -> Any:
    """NaN/inf -> None, so the figure survives JSON.parse in the browser."""
    if isinstance(value, float):
        return None if value != value or value in (float("inf"), float("-inf")) else value
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def report_rows(report: Any) -> list[dict[str, Any]]:
    rows = []
    for r in report.profiles:
        frac = r.fraction_of_optimum
        rows.append({
            "profile": r.profile,
            "description": r.description,
            "average": _fmt(r.average_score),
            "total": _fmt(r.total_score, 0),
            "optimum": f"{100 * frac:.1f}" if frac == frac else "n/a",
            "latency": _fmt(r.latency_ms),
            "zones": [_fmt(r.pods_per_zone[z]) for z in report.zones],
            "worst": f"{r.worst_workload} ({r.worst_workload_score:.1f})" if r.worst_workload else "–",
            "paper": report.paper_average_scores.get(r.profile),
            "unscheduled": r.unscheduled_pods,
        })
    return rows
