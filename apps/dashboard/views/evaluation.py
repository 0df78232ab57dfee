"""The evaluation page: run the evaluation harness on a scenario and compare scheduler profiles."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from django import forms
from django.conf import settings
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from apps.accounts.permissions import missing, refusal
from apps.accounts.roles import RUN_EVALUATION
from apps.appgroups import services
from apps.appgroups.models import AppGroup
from apps.scheduler.evaluation import EvaluationInputError, report_figure, run_evaluation
from apps.scheduler.evaluation.simulate import PAPER_PROFILES, parse_profile
from netaware_core.yamlsafe import load_yaml

MAX_SEEDS = 100
DB_PREFIX = "db:"


def scenario_dir() -> Path:
    return Path(settings.BASE_DIR) / "scenarios"


def _kinds(path: Path) -> set[str]:
    try:
        return {d.get("kind", "") for d in load_yaml(path.read_text(), multi=True) if isinstance(d, dict)}
    except (OSError, yaml.YAMLError):
        return set()


def input_files() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(scenario files, AppGroup files) in scenarios/, told apart by the documents' kind."""
    scenarios, appgroups = [], []
    for path in sorted(scenario_dir().glob("*.y*ml")):
        (appgroups if "AppGroup" in _kinds(path) else scenarios).append((path.name, f"scenarios/{path.name}"))
    return scenarios, appgroups


class EvaluationForm(forms.Form):
    scenario = forms.ChoiceField(help_text="Cluster scenario (nodes, zones, links) from scenarios/.")
    appgroup = forms.ChoiceField(label="AppGroup", help_text="An AppGroup file from scenarios/, or one stored here.")
    seeds = forms.IntegerField(min_value=1, max_value=MAX_SEEDS, initial=10,
                               help_text=f"Random pod arrival orders per profile (1–{MAX_SEEDS}).")
    first_seed = forms.IntegerField(min_value=0, initial=0, required=False)
    profiles = forms.MultipleChoiceField(choices=[(p, p) for p in PAPER_PROFILES], initial=list(PAPER_PROFILES),
                                         widget=forms.CheckboxSelectMultiple, required=False)
    extra_profiles = forms.CharField(required=False, label="More profiles",
                                     help_text="Comma-separated, e.g. hybrid-3, balanced+default-2")
    with_optimum = forms.BooleanField(required=False, initial=True, label="Compute the optimum (MILP)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        scenarios, appgroups = input_files()
        stored = [(f"{DB_PREFIX}{pk}", f"stored: {ns}/{name}")
                  for pk, ns, name in AppGroup.objects.values_list("pk", "namespace", "name")]
        self.fields["scenario"].choices = [(v, label) for label, v in scenarios]
        self.fields["appgroup"].choices = [(v, label) for label, v in appgroups] + stored
        if scenarios and not self.is_bound:
            default = next((v for label, v in scenarios if label.startswith("paper-testbed")), scenarios[0][1])
            self.initial.setdefault("scenario", default)

    def clean_extra_profiles(self) -> list[str]:
        names = [n.strip() for n in (self.cleaned_data.get("extra_profiles") or "").split(",") if n.strip()]
        for name in names:
            try:
                parse_profile(name)
            except EvaluationInputError as exc:
                raise forms.ValidationError(str(exc)) from None
        return names

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        chosen = list(data.get("profiles") or []) + [p for p in data.get("extra_profiles") or []
                                                     if p not in (data.get("profiles") or [])]
        if "profiles" not in self.errors and "extra_profiles" not in self.errors and not chosen:
            self.add_error("profiles", "Choose at least one profile.")
        data["all_profiles"] = chosen
        return data


def _appgroup_file(choice: str, tmpdir: str) -> Path:
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


@require_http_methods(["GET", "POST"])
def evaluation_page(request):
    if request.method == "POST":
        lacking = missing(request.user, [RUN_EVALUATION])
        if lacking:
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied(refusal(lacking, "Running an evaluation"))
    form = EvaluationForm(request.POST or None)
    context: dict[str, Any] = {"form": form, "max_seeds": MAX_SEEDS}
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            with tempfile.TemporaryDirectory(prefix="netaware-eval-") as tmpdir:
                try:
                    report = run_evaluation(
                        Path(settings.BASE_DIR) / data["scenario"], _appgroup_file(data["appgroup"], tmpdir),
                        profiles=data["all_profiles"], seeds=data["seeds"],
                        first_seed=data.get("first_seed") or 0, with_optimum=data["with_optimum"],
                    )
                except EvaluationInputError as exc:
                    form.add_error(None, str(exc))
                    report = None
            if report is not None:
                context.update(report=report, rows=report_rows(report), last_seed=report.first_seed + report.seeds - 1, figure=json_safe(report_figure(report)))
            else:
                status = 400
        else:
            status = 400
    return render(request, "dashboard/evaluation.html", context, status=status)
