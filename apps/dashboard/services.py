"""Writes of the dashboard: evaluation runs (queued by a page, carried out by a Celery worker)."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.utils import timezone

from apps.scheduler.evaluation import EvaluationInputError, report_figure, run_evaluation

from .evaluations import appgroup_file, json_safe, report_rows
from .models import EvaluationRun

log = logging.getLogger(__name__)


def queue_evaluation(*, params: dict[str, Any], user: Any) -> EvaluationRun:
    """A queued run of the evaluation harness; the worker picks it up once this transaction commits."""
    from .tasks import run_evaluation_task

    run = EvaluationRun.objects.create(params=params, created_by=user if getattr(user, "pk", None) else None,
                                       stage="waiting for a worker")
    transaction.on_commit(lambda: run_evaluation_task.delay(run.pk))
    return run


PROGRESS_EVERY = 0.25  # seconds between progress writes: a page polls each second, an order takes milliseconds


def progress_writer(run_id: int) -> Callable[[str, int, int], None]:
    """The harness's progress callback: the stage and the orders done go to the run's row (at most
    every PROGRESS_EVERY seconds, and always for the last order), where the run's page polls them."""
    last = [0.0]

    def write(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < PROGRESS_EVERY and done:
            return
        last[0] = now
        EvaluationRun.objects.filter(pk=run_id, status=EvaluationRun.Status.RUNNING).update(
            stage=stage[:200], progress_done=done, progress_total=total)

    return write


def execute_evaluation(*, run_id: int) -> EvaluationRun | None:
    """Carry out a queued run (idempotent: a run already finished or taken is left alone)."""
    taken = EvaluationRun.objects.filter(pk=run_id, status=EvaluationRun.Status.QUEUED).update(
        status=EvaluationRun.Status.RUNNING, started_at=timezone.now(), stage="simulating the profiles")
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if not taken or run is None:
        return run
    params = run.params
    progress = progress_writer(run_id)
    try:
        with tempfile.TemporaryDirectory(prefix="netaware-eval-") as tmpdir:
            report = run_evaluation(
                Path(settings.BASE_DIR) / params["scenario"], appgroup_file(params["appgroup"], tmpdir),
                profiles=params["profiles"], seeds=params["seeds"], first_seed=params.get("first_seed") or 0,
                with_optimum=params["with_optimum"], progress=progress,
            )
        run.stage = "done"
        run.result = json_safe({
            "scenario": report.scenario, "appgroups": list(report.appgroups), "pods": report.pods,
            "seeds": report.seeds, "first_seed": report.first_seed, "last_seed": report.first_seed + report.seeds - 1,
            "seconds": report.seconds, "zones": list(report.zones),
            "optimum": ({"bound": report.optimum.bound, "exact": report.optimum.exact} if report.optimum else None),
            "rows": report_rows(report), "figure": report_figure(report),
        })
        run.status = EvaluationRun.Status.DONE
    except (EvaluationInputError, ObjectDoesNotExist, OSError, KeyError, ValueError) as exc:  # the input's fault
        run.status, run.error, run.stage = EvaluationRun.Status.FAILED, str(exc) or type(exc).__name__, "failed"
    except Exception as exc:  # a bug: the run says so instead of staying "running" for ever
        log.exception("evaluation run %s failed", run_id)
        run.status, run.error, run.stage = EvaluationRun.Status.FAILED, f"internal error: {exc!r}", "failed"
    run.finished_at = timezone.now()
    if run.status == EvaluationRun.Status.DONE:
        run.progress_done = run.progress_total = len(params["profiles"]) * params["seeds"]
    run.save(update_fields=["status", "stage", "result", "error", "finished_at", "progress_done", "progress_total"])
    return run
