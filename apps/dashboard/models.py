"""The dashboard's own rows: evaluation runs, done in the background by a Celery worker so a long
run neither holds a request nor is lost with it, and each result has an address to share."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class EvaluationRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The form's cleaned input (scenario, appgroup, seeds, first_seed, profiles, with_optimum).
    params = models.JSONField(default=dict)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    stage = models.CharField(max_length=200, blank=True, help_text="what the worker is doing now")
    # Arrival orders simulated so far over all profiles, of ``progress_total`` (profiles × seeds).
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    # What the result page draws: summary, table rows, figure (JSON-safe).
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ("-id",)

    def __str__(self) -> str:
        return f"evaluation run {self.pk} ({self.status})"
