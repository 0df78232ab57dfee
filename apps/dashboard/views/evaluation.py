"""The evaluation page: run the evaluation harness on a scenario and compare scheduler profiles, as a
background run (Celery) with its own page: progress while it runs, results at a shareable address."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import yaml
from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.permissions import missing, refusal
from apps.accounts.roles import RUN_EVALUATION
from apps.appgroups.models import AppGroup
from apps.scheduler.evaluation import EvaluationInputError
from apps.scheduler.evaluation.simulate import PAPER_PROFILES, parse_profile
from netaware_core.yamlsafe import load_yaml

from .. import services
from ..evaluations import DB_PREFIX
from ..models import EvaluationRun
from .common import data_response

MAX_SEEDS = 100


def scenario_dir() -> Path:
    return Path(settings.BASE_DIR) / "scenarios"


def _kinds(path: Path) -> set[str]:
    try:
        return {d.get("kind", "") for d in load_yaml(path.read_text(), multi=True) if isinstance(d, dict)}
    except (OSError, yaml.YAMLError):
        return set()


def input_files() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(scenario files, AppGroup files) in scenarios/, told apart by the documents' kind."""
    scenarios: list[tuple[str, str]] = []
    appgroups: list[tuple[str, str]] = []
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
        cast(forms.ChoiceField, self.fields["scenario"]).choices = [(v, label) for label, v in scenarios]
        cast(forms.ChoiceField, self.fields["appgroup"]).choices = [(v, label) for label, v in appgroups] + stored
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
        data = super().clean() or {}  # Form.clean returns cleaned_data, never None here
        chosen = list(data.get("profiles") or []) + [p for p in data.get("extra_profiles") or []
                                                     if p not in (data.get("profiles") or [])]
        if "profiles" not in self.errors and "extra_profiles" not in self.errors and not chosen:
            self.add_error("profiles", "Choose at least one profile.")
        data["all_profiles"] = chosen
        return data


@require_http_methods(["GET", "POST"])
def evaluation_page(request: HttpRequest) -> HttpResponse:
    """The form; a valid POST queues a background run and goes to its page (a shareable address)."""
    lacking = missing(request.user, [RUN_EVALUATION])
    if request.method == "POST" and lacking:
        raise PermissionDenied(refusal(lacking, "Running an evaluation"))
    form = EvaluationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        run = services.queue_evaluation(user=request.user, params={
            "scenario": data["scenario"], "appgroup": data["appgroup"], "seeds": data["seeds"],
            "first_seed": data.get("first_seed") or 0, "profiles": data["all_profiles"],
            "with_optimum": data["with_optimum"]})
        return redirect("dashboard-evaluation-run", pk=run.pk)
    return render(request, "dashboard/evaluation.html", {
        "form": form, "max_seeds": MAX_SEEDS, "may_run": not lacking, "refusal": refusal(lacking, "Running an evaluation") if lacking else "",
        "recent": EvaluationRun.objects.select_related("created_by")[:10],
    }, status=400 if request.method == "POST" else 200)


def _run_form(run: EvaluationRun) -> EvaluationForm:
    params = run.params
    profiles = [p for p in params.get("profiles", []) if p in PAPER_PROFILES]
    extra = [p for p in params.get("profiles", []) if p not in PAPER_PROFILES]
    return EvaluationForm(initial={"scenario": params.get("scenario"), "appgroup": params.get("appgroup"),
                                   "seeds": params.get("seeds"), "first_seed": params.get("first_seed"),
                                   "profiles": profiles, "extra_profiles": ", ".join(extra),
                                   "with_optimum": params.get("with_optimum")})


@require_GET
def evaluation_run_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: its progress while it runs, its results once done; the form is filled with its input."""
    run = get_object_or_404(EvaluationRun.objects.select_related("created_by"), pk=pk)
    lacking = missing(request.user, [RUN_EVALUATION])
    return render(request, "dashboard/evaluation.html", {
        "form": _run_form(run), "max_seeds": MAX_SEEDS, "run": run, "result": run.result,
        "may_run": not lacking, "refusal": refusal(lacking, "Running an evaluation") if lacking else "",
        "recent": EvaluationRun.objects.select_related("created_by")[:10],
    })


@require_GET
def evaluation_run_data(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(EvaluationRun, pk=pk)
    return data_response(request, None, {
        "id": run.pk, "status": run.status, "stage": run.stage, "error": run.error,
        "done": run.progress_done, "total": run.progress_total,
        "createdAt": run.created_at.timestamp(), "startedAt": run.started_at.timestamp() if run.started_at else None,
        "finishedAt": run.finished_at.timestamp() if run.finished_at else None,
    })
