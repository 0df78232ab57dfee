"""Observed traffic: per-edge time series pulled from the mesh metrics in Prometheus, the learned
edge states and the observed AppGroups derived from them (docs/traffic.md).

``EdgeSample`` is range-partitioned by ``ts``, one partition per UTC hour, like the probe samples
(migration 0001; partitions are made by ``probes.services.ensure_partitions``), and retention rolls whole
hours into ``EdgeRollup`` and drops them. One row per edge, source and window holds every measure:
the learner reads a window's edges in one scan instead of joining six series.
"""

from django.contrib.postgres.indexes import BrinIndex
from django.db import models
from django.db.models import Q

from .choices import Mode


class EdgeNames(models.Model):
    source_namespace = models.CharField(max_length=63)
    source_workload = models.CharField(max_length=253)
    target_namespace = models.CharField(max_length=63)
    target_workload = models.CharField(max_length=253)

    class Meta:
        abstract = True

    @property
    def edge_label(self) -> str:
        return f"{self.source_namespace}/{self.source_workload} -> {self.target_namespace}/{self.target_workload}"


class EdgeSample(EdgeNames):
    """One edge in one aligned window as one traffic source reported it (NULL: not reported)."""

    ts = models.DateTimeField(help_text="End of the aligned pull window")
    source = models.CharField(max_length=16, help_text="Traffic source (adapter): istio, linkerd, otel, hubble")
    requests = models.FloatField(null=True, blank=True, help_text="requests/s")
    error_ratio = models.FloatField(null=True, blank=True, help_text="failed / all requests, 0..1")
    request_bytes = models.FloatField(null=True, blank=True, help_text="bytes/s caller -> callee")
    response_bytes = models.FloatField(null=True, blank=True, help_text="bytes/s callee -> caller")
    p50 = models.FloatField(null=True, blank=True, help_text="median call duration, seconds")
    p99 = models.FloatField(null=True, blank=True, help_text="99th percentile call duration, seconds")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ts", "source", "source_namespace", "source_workload", "target_namespace",
                                            "target_workload"], name="edgesample_unique_point"),
            models.CheckConstraint(
                condition=(Q(requests__isnull=True) | Q(requests__gte=0))
                & (Q(request_bytes__isnull=True) | Q(request_bytes__gte=0))
                & (Q(response_bytes__isnull=True) | Q(response_bytes__gte=0))
                & (Q(error_ratio__isnull=True) | (Q(error_ratio__gte=0) & Q(error_ratio__lte=1))),
                name="edgesample_rates_valid"),
        ]
        indexes = [BrinIndex(fields=["ts"], name="edgesample_ts_brin")]

    def __str__(self) -> str:
        return f"{self.source} {self.edge_label} @ {self.ts:%Y-%m-%d %H:%M:%S}"


class EdgeRollup(EdgeNames):
    """One hour of an edge's raw samples, kept after they are dropped (means; the busiest window's rate)."""

    bucket = models.DateTimeField()
    source = models.CharField(max_length=16)
    count = models.PositiveIntegerField()
    requests_mean = models.FloatField(null=True, blank=True)
    requests_max = models.FloatField(null=True, blank=True)
    request_bytes_mean = models.FloatField(null=True, blank=True)
    response_bytes_mean = models.FloatField(null=True, blank=True)
    p50_mean = models.FloatField(null=True, blank=True)
    p99_max = models.FloatField(null=True, blank=True)
    error_ratio_mean = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bucket", "source", "source_namespace", "source_workload",
                                            "target_namespace", "target_workload"], name="edgerollup_unique"),
        ]
        indexes = [BrinIndex(fields=["bucket"], name="edgerollup_bucket_brin")]

    def __str__(self) -> str:
        return f"{self.source} {self.edge_label} hour {self.bucket:%Y-%m-%d %H}:00"


class TrafficWatermark(models.Model):
    """End of the newest window pulled and learned from; the next pull starts there."""

    key = models.CharField(max_length=32, unique=True)
    last_end = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.last_end:%Y-%m-%d %H:%M:%S}"


class TrafficSource(models.Model):
    """A traffic source (adapter) as last discovered: its metric present in Prometheus or not."""

    name = models.CharField(max_length=16, unique=True)
    enabled = models.BooleanField(default=True, help_text="Configured to be read (NETAWARE_TRAFFIC_SOURCES)")
    present = models.BooleanField(default=False, help_text="Its metric had series at the last discovery")
    series = models.PositiveIntegerField(default=0, help_text="Series of its presence metric")
    checked_at = models.DateTimeField(null=True, blank=True)
    rejected_last_run = models.PositiveIntegerField(default=0)
    rejection_reasons = models.TextField(blank=True, help_text="Why series were refused in the last pull")
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({'present' if self.present else 'absent'})"


class LearnedEdge(EdgeNames):
    """The smoothed state of one observed edge (learning.EdgeState); forgotten after the idle time."""

    source = models.CharField(max_length=16)
    requests = models.FloatField()
    error_ratio = models.FloatField(null=True, blank=True)
    request_bytes = models.FloatField()
    response_bytes = models.FloatField()
    p50 = models.FloatField(null=True, blank=True)
    p99 = models.FloatField(null=True, blank=True)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source_namespace", "source_workload", "target_namespace",
                                            "target_workload"], name="learnededge_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.edge_label}: {self.requests:.3g} req/s"


class ObservedAppGroup(models.Model):
    """An application as observed: its AppGroup document, edges with rates, and the diff to the declared one."""

    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    document = models.JSONField(help_text="The observed AppGroup document (origin observed)")
    edges = models.JSONField(default=list, help_text="[{source, target, requests, request_bytes, ...}]")
    declared = models.CharField(max_length=253, blank=True, help_text="The declared AppGroup compared with")
    diff = models.JSONField(default=dict)
    hot_missing = models.PositiveIntegerField(default=0, help_text="Hot edges the declared AppGroup misses")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.SUGGEST)
    adopted_hash = models.CharField(max_length=64, blank=True, help_text="spec hash last adopted")
    adopt_error = models.TextField(blank=True)
    learned_at = models.DateTimeField(help_text="End of the newest window learned from")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("namespace", "name")
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="observedappgroup_unique"),
            models.CheckConstraint(condition=Q(mode__in=Mode.values), name="observedappgroup_mode_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} (observed)"


class LearningMode(models.Model):
    """suggest / adopt / off for a namespace (``application`` empty) or one application in it."""

    namespace = models.CharField(max_length=63)
    application = models.CharField(max_length=253, blank=True, help_text="Empty: the whole namespace")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.SUGGEST)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("namespace", "application")
        constraints = [
            models.UniqueConstraint(fields=["namespace", "application"], name="learningmode_unique"),
            models.CheckConstraint(condition=Q(mode__in=Mode.values), name="learningmode_mode_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.application or '*'}: {self.mode}"
