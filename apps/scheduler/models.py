"""Scheduler profiles (named scorer/filter sets) and the bounded decision log."""

from __future__ import annotations

import math
import zlib
from dataclasses import asdict
from typing import Any

import orjson
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from .choices import Verb
from .evaluation.drift import DriftReport
from .profiles import validate_profile_fields


def _orjson_dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()


class FastJSONField(models.JSONField):
    """JSONField serialized with orjson (numpy arrays allowed): decision breakdowns hold a few
    thousand floats and are written on the extender's request path."""

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor == "postgresql" and not hasattr(value, "as_sql") and value is not None:
            from psycopg.types.json import Jsonb

            return Jsonb(value, dumps=_orjson_dumps)
        return super().get_db_prep_value(value, connection, prepared)


class CompressedJSONField(models.BinaryField):
    """A JSON document stored as zlib-compressed orjson in bytea; reads back as Python data.

    Decision breakdowns are ~25 kB per 500 nodes and written at hundreds per second: jsonb parsing
    (or TOAST's pglz) made the batched INSERT ~10x slower. Already-encoded bytes (from the decision
    queue) are stored as they are."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return decode_json_blob(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, bytes | bytearray | memoryview):
            return decode_json_blob(value)
        return value

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        if value is None or value == {} or value == []:
            return b""
        return zlib.compress(orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS), 1)

    def value_to_string(self, obj: Any) -> str:
        return orjson.dumps(self.value_from_object(obj), option=orjson.OPT_SERIALIZE_NUMPY).decode()


def decode_json_blob(value: Any) -> Any:
    if value is None:
        return {}
    raw = bytes(value)
    if not raw:
        return {}
    return orjson.loads(zlib.decompress(raw))


class SchedulerProfile(models.Model):
    """A named set of scorers (with weights and params) and filters; one profile is the default.

    ``scorers`` is a list of ``{"name", "weight", "params"}``, ``filters`` a list of filter names and
    ``params`` maps a filter name to its parameters; all are validated against the scoring engine's registry in
    ``clean()`` so admin, the API and data migrations agree.
    """

    name = models.SlugField(max_length=63, unique=True)
    description = models.TextField(blank=True)
    is_default = models.BooleanField(default=False)
    scorers = models.JSONField(default=list, blank=True)
    filters = models.JSONField(default=list, blank=True)
    params = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    history = HistoricalRecords(excluded_fields=["updated"])  # who changed what and when

    class Meta:
        ordering = ("name",)
        constraints = [
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="scheduler_one_default_profile"),
        ]

    def __str__(self) -> str:
        return self.name + (" (default)" if self.is_default else "")

    def clean(self) -> None:
        errors = validate_profile_fields(scorers=self.scorers, filters=self.filters, params=self.params)
        if self.is_default:
            others = SchedulerProfile.objects.filter(is_default=True).exclude(pk=self.pk)
            if others.exists():
                errors.setdefault("is_default", []).append(
                    f"profile {others.first().name!r} is already the default; unset it first"  # type: ignore[union-attr]
                )
        if errors:
            raise ValidationError(errors)


class Decision(models.Model):
    """One extender call: what was asked, what was answered and why (per node, per scorer)."""

    ts = models.DateTimeField(db_index=True)
    # Set by the extender when it records the decision: storing a queued batch twice (a drain redone
    # after a worker died) inserts nothing new.
    event_id = models.UUIDField(null=True, blank=True, unique=True, editable=False)
    verb = models.CharField(max_length=16, choices=Verb.choices)
    pod_namespace = models.CharField(max_length=253, blank=True)
    pod_name = models.CharField(max_length=253, blank=True)
    pod_uid = models.CharField(max_length=64, blank=True)
    profile = models.CharField(max_length=63, blank=True)
    workload = models.CharField(max_length=253, blank=True, help_text="appgroup namespace/name/workload")
    node = models.CharField(max_length=253, blank=True, help_text="bind target / best node")
    candidates = models.PositiveIntegerField(default=0)
    result = FastJSONField(default=dict, blank=True)
    # Column-oriented: {"nodes": [...], "total": [...], "extender": [...], "scorers": {name: [...]},
    # "reasons": {node: reason}}; the API presents it node by node (services.decision_breakdown_by_node).
    breakdown = CompressedJSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.FloatField(default=0.0)

    class Meta:
        ordering = ("-id",)
        indexes = [
            models.Index(fields=["pod_namespace", "pod_name"]),
            models.Index(fields=["verb", "ts"]),
        ]

    @property
    def breakdown_data(self) -> dict[str, Any]:
        """The breakdown as data, also on an instance built from queued bytes before saving."""
        value = self.breakdown
        if isinstance(value, bytes | bytearray | memoryview):
            return decode_json_blob(value)
        return value or {}

    def __str__(self) -> str:
        return f"{self.verb} {self.pod_namespace}/{self.pod_name} @ {self.ts:%Y-%m-%d %H:%M:%S}"


class ObservedPod(models.Model):
    """The cluster watcher's pod cache: what each pod requests and where it runs.

    Requested resources per node (kube-scheduler's NodeResourcesFit view) are summed from here,
    and ``diagnose`` looks pods up here before asking the Kubernetes API.
    """

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    node_name = models.CharField(max_length=253, blank=True, db_index=True)
    phase = models.CharField(max_length=32, blank=True)
    terminal = models.BooleanField(default=False, help_text="Succeeded/Failed or being deleted")
    labels = models.JSONField(default=dict, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    cpu_request_millicores = models.BigIntegerField(default=0)
    memory_request_bytes = models.BigIntegerField(default=0)
    resource_version = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("namespace", "name")
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="scheduler_observedpod_unique")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}@{self.node_name or '-'}"


class DriftAssessment(models.Model):
    """The latest drift of one AppGroup (``evaluation/drift.py``): its placement's score, modelled
    latency and transfer cost on the current topology against the best found then, and the single-pod
    moves that close the gap. Written by the periodic task ``scheduler.assess_drift`` (one row per
    AppGroup, replaced each round), read by ``/metrics``, the API and the AppGroup page, so none of
    them plans on a request."""

    appgroup = models.OneToOneField("appgroups.AppGroup", on_delete=models.CASCADE, related_name="drift")
    computed_at = models.DateTimeField()
    topology_version = models.BigIntegerField(null=True, blank=True, help_text="topology snapshot it was made on")
    # NULL: not a number (no dependency placed, nothing to score)
    current_score = models.FloatField(null=True, blank=True, help_text="average network score 0..100 now")
    best_score = models.FloatField(null=True, blank=True, help_text="best average network score found now")
    drift = models.FloatField(default=0.0, help_text="1 - current / best, 0..1")
    score_after_moves = models.FloatField(null=True, blank=True)
    current_latency_ms = models.FloatField(null=True, blank=True)
    best_latency_ms = models.FloatField(null=True, blank=True)
    current_transfer_cost = models.FloatField(null=True, blank=True, help_text="USD per 1M requests")
    best_transfer_cost = models.FloatField(null=True, blank=True, help_text="USD per 1M requests")
    plan_id = models.CharField(max_length=16, blank=True)
    # [{"pod", "workload", "from_node", "to_node", "expected_gain", "reason"}] in the order to apply
    moves = models.JSONField(default=list, blank=True)
    notes = models.JSONField(default=list, blank=True)
    elapsed_ms = models.FloatField(default=0.0)
    # What it was computed from (topology version, the AppGroup's spec and pods): unchanged inputs are not
    # assessed again until REFRESH_SECONDS have passed (node capacity may have changed meanwhile).
    inputs_hash = models.CharField(max_length=64, blank=True)

    REFRESH_SECONDS = 300

    class Meta:
        ordering = ("-drift", "appgroup_id")
        constraints = [
            models.CheckConstraint(condition=Q(drift__gte=0.0) & Q(drift__lte=1.0),
                                   name="scheduler_driftassessment_drift_0_1",
                                   violation_error_message="drift must be within 0..1."),
        ]

    # The report's fields stored as they are (NaN/inf -> NULL); moves as dicts.
    REPORT_FIELDS = ("current_score", "best_score", "drift", "score_after_moves", "current_latency_ms",
                     "best_latency_ms", "current_transfer_cost", "best_transfer_cost", "plan_id")

    @classmethod
    def fields_of(cls, report: DriftReport) -> dict[str, Any]:
        """The columns of an assessment holding ``report`` (``services.record_drift``, the API's fresh one)."""
        out: dict[str, Any] = {}
        for name in cls.REPORT_FIELDS:
            value = getattr(report, name)
            out[name] = value if isinstance(value, str) or math.isfinite(value) else None
        out["moves"] = [asdict(move) for move in report.moves]
        out["notes"] = list(report.notes)
        return out

    def clean(self) -> None:
        if not 0.0 <= self.drift <= 1.0:
            raise ValidationError({"drift": "must be within 0..1"})
        if not isinstance(self.moves, list):
            raise ValidationError({"moves": "must be a list of moves"})

    def __str__(self) -> str:
        return f"drift {self.drift:.2f} of AppGroup {self.appgroup_id} at {self.computed_at:%Y-%m-%d %H:%M:%S}"
