"""Decisions (paged and filtered through the decisions API) and the diagnosis of one pod in words."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.permissions import page_permission
from apps.accounts.roles import DIAGNOSE
from apps.appgroups.models import AppGroup, Placement
from apps.scheduler.choices import Verb
from apps.scheduler.diagnose import DiagnoseError, diagnose_pod, parse_diagnose_query
from apps.scheduler.models import Decision

from ..overlaps import claims_for_labels


@require_GET
def decisions_page(request: HttpRequest) -> HttpResponse:
    groups = [f"{ns}/{name}" for ns, name in AppGroup.objects.order_by("namespace", "name").values_list("namespace", "name")]
    return render(request, "dashboard/decisions.html", {"verbs": Verb.values, "appgroups": groups})


def _said(values: list[str]) -> list[str]:
    return [v for v in values if v]


@require_GET
@page_permission(DIAGNOSE, what="Diagnosing a pod (it may be read from the Kubernetes API)")
def diagnose_page(request: HttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"query": {k: request.GET.get(k, "") for k in ("pod", "labels", "profile")}}
    status = 200
    if any(context["query"].values()):
        try:
            report = diagnose_pod(parse_diagnose_query(request.GET))
        except DiagnoseError as exc:
            context["errors"] = {k: v if isinstance(v, list) else [v] for k, v in exc.errors.items()}
            status = exc.status
        else:
            context.update(explain(report))
    return render(request, "dashboard/diagnose.html", context, status=status)


def explain(report: dict[str, Any]) -> dict[str, Any]:
    """The diagnose report as sentences, plus what the page adds: every AppGroup whose selectors
    claim the pod (more than one is ambiguous), where the pod runs and its newest decisions."""
    pod = report["pod"]
    labels = pod.get("labels") or {}
    diagnosis = report.get("diagnosis") or {}
    sentences: list[str] = []
    label_text = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "no labels"
    if pod.get("name"):
        sentences.append(f"Pod {pod['namespace']}/{pod['name']} was read from the {pod['source']}; it has {label_text}.")
    else:
        sentences.append(f"A pod in namespace {pod['namespace']} with {label_text} (labels given in the query).")
    if diagnosis.get("appgroup"):
        sentences.append(f"It belongs to workload {diagnosis.get('workload')} of AppGroup {diagnosis['appgroup']}.")
    else:
        sentences.append("It belongs to no AppGroup workload, so network scorers treat every node alike.")
    claims = claims_for_labels(namespace=pod["namespace"], labels=labels)
    if len(claims) > 1:
        sentences.append("Several AppGroups claim this pod: " + "; ".join(
            f"{c.appgroup} (workload {c.workload})" for c in claims) +
            ". The scheduler uses the first in namespace/name order unless the pod carries the label "
            "netaware.io/appgroup=<name>; narrow the selectors or add that label.")
    sentences.append(f"It is scheduled with profile {report['profile']} (profiles: {', '.join(report['profiles'])}).")
    topo = report.get("topology") or {}
    if topo.get("nodes"):
        sentences.append(f"The scheduler sees topology v{topo.get('version')} with {topo['nodes']} nodes"
                         + (f", flagged stale: {topo['stale_reason']}." if topo.get("stale_reason") else "."))
    placement = None
    decisions: list[Decision] = []
    if pod.get("name"):
        placement = (Placement.objects.select_related("appgroup", "workload")
                     .filter(pod_namespace=pod["namespace"], pod_name=pod["name"]).first())
        decisions = list(Decision.objects.filter(pod_namespace=pod["namespace"], pod_name=pod["name"])
                         .defer("breakdown").order_by("-id")[:10])
    if placement is not None:
        sentences.append(f"It runs on node {placement.node_name} (recorded by the {placement.source} at "
                         f"{placement.bound_at:%Y-%m-%d %H:%M:%S} UTC).")
    return {
        "report": report, "sentences": sentences, "problems": _said(list(report.get("extender") or []) +
                                                                     list(diagnosis.get("problems") or [])),
        "info": _said(list(diagnosis.get("info") or [])), "claims": claims, "placement": placement,
        "decisions": decisions, "ok": not report.get("extender") and not diagnosis.get("problems"),
    }
