"""AppGroups: which workloads talk to which, and how much each conversation cares about the network.

What an AppGroup may contain is decided by its document's one validator (``documents.spec_from_document``:
the CRD schema and ``validators.semantic_errors``) and by ``services.check_appgroup`` for the rules that
need the database; every writer (API, admin, editors, import, sync) goes through ``services.save_appgroup``.
The models carry no validators of their own, so no entry point answers with a second wording:
``Meta.constraints`` are the database's last line of defence, not a place users meet.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.db.models.lookups import GreaterThan
from django.utils import timezone
from simple_history.models import HistoricalRecords

from netaware_core import quantity

from . import validators
from .choices import Origin, PlacementSource, RebalanceMode, TopologyMode, TopologySortingAlgorithm

MAX_NETWORK_COST = validators.MAX_NETWORK_COST


def valid_choice(field: str, choices: type[models.TextChoices], *, name: str, message: str) -> models.CheckConstraint:
    """The database's copy of a choice field's rule: only the choices' values are stored."""
    return models.CheckConstraint(condition=Q(**{f"{field}__in": choices.values}), name=name,
                                  violation_error_message=message)


class AppGroupDocumentSnapshot(models.Model):
    """What each change-history record of an AppGroup adds: the whole document as saved (its
    workloads and dependencies are rewritten on every save, so their rows have no history of their own)."""

    document = models.JSONField(null=True, blank=True)

    class Meta:
        abstract = True


class AppGroup(models.Model):
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    description = models.TextField(blank=True)
    topology_sorting_algorithm = models.CharField(
        max_length=32, choices=TopologySortingAlgorithm.choices, default=TopologySortingAlgorithm.KAHN
    )
    topology_mode = models.CharField(
        max_length=16, choices=TopologyMode.choices, default=TopologyMode.SOFT,
        help_text="soft: the placement plan is a preference; zone / region: all pods in one zone / region, or they wait.",
    )
    rebalance_mode = models.CharField(
        max_length=16, choices=RebalanceMode.choices, default=RebalanceMode.OFF,
        help_text="off: running pods stay; dry-run: the rebalancer reports the moves it would make; on: it evicts "
                  "pods toward the best plan, one at a time per workload (PodDisruptionBudgets hold).",
    )
    min_zones = models.PositiveSmallIntegerField(
        default=1, help_text="High availability: every workload's replicas over at least this many zones (1 = no requirement).",
    )
    # Sync bookkeeping (written by apps.appgroups.sync): the cluster object's resourceVersion we
    # last saw or wrote, who authored the current spec, and a hash of the spec we last applied.
    resource_version = models.CharField(max_length=64, blank=True)
    # metadata.uid of our CR (so a deletion tombstone names that very object, not a re-creation).
    resource_uid = models.CharField(max_length=64, blank=True, editable=False)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.NETAWARE)
    spec_hash = models.CharField(max_length=64, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    sync_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Who changed what and when (django-simple-history): the sync's bookkeeping is left out.
    history = HistoricalRecords(
        bases=[AppGroupDocumentSnapshot],
        excluded_fields=["origin", "resource_version", "resource_uid", "spec_hash", "last_synced_at", "sync_error",
                         "updated_at"],
    )

    # What the sync and the database write; the admin and the API show them but never take them.
    BOOKKEEPING_FIELDS = ("resource_version", "spec_hash", "last_synced_at", "sync_error", "created_at", "updated_at")

    class Meta:
        ordering = ("namespace", "name")
        constraints = [
            models.UniqueConstraint(
                fields=("namespace", "name"),
                name="appgroups_appgroup_unique_namespace_name",
                violation_error_message="An AppGroup with this namespace and name already exists.",
            ),
            valid_choice("topology_sorting_algorithm", TopologySortingAlgorithm, name="appgroups_appgroup_algorithm_valid",
                         message="Unknown topology sorting algorithm."),
            valid_choice("topology_mode", TopologyMode, name="appgroups_appgroup_topology_mode_valid",
                         message="Unknown topology mode."),
            valid_choice("rebalance_mode", RebalanceMode, name="appgroups_appgroup_rebalance_mode_valid",
                         message="Unknown rebalance mode."),
            valid_choice("origin", Origin, name="appgroups_appgroup_origin_valid", message="Unknown origin."),
            models.CheckConstraint(
                condition=Q(min_zones__gte=1), name="appgroups_appgroup_min_zones_positive",
                violation_error_message="minZones must be >= 1.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class AppGroupTombstone(models.Model):
    """A deliberate deletion in netaware that the cluster has not seen yet.

    The sync deletes a managed CR only when a tombstone names it; a managed CR with neither a row nor
    a tombstone is imported instead, so an empty or restored database never deletes cluster data.
    Recorded by every deletion path (``services.delete_appgroup``, which the admin calls too), cleared by the
    sync once the CR is gone (or kept by the cluster), and expired by the periodic resync after
    ``NETAWARE["APPGROUP_TOMBSTONE_RETENTION_DAYS"]``.
    """

    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    resource_version = models.CharField(max_length=64, blank=True)
    resource_uid = models.CharField(max_length=64, blank=True)
    deleted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("namespace", "name")
        constraints = [
            models.UniqueConstraint(
                fields=("namespace", "name"),
                name="appgroups_tombstone_unique_namespace_name",
                violation_error_message="A tombstone for this namespace and name already exists.",
            ),
        ]
        indexes = [models.Index(fields=("deleted_at",), name="appgroups_tombstone_deleted")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} (deleted {self.deleted_at:%Y-%m-%d %H:%M:%S})"


class Workload(models.Model):
    appgroup = models.ForeignKey(AppGroup, on_delete=models.CASCADE, related_name="workloads")
    name = models.CharField(max_length=63)
    # Declaration order: decides the first-matching workload for a pod and ties in the sort.
    position = models.PositiveIntegerField(default=0)
    selector = models.JSONField(
        help_text="Label selector: {matchLabels: {...}, matchExpressions: [...]}, or a string such as app=frontend."
    )
    weight = models.FloatField(default=1.0, help_text="Importance (>= 0).")
    controller_kind = models.CharField(max_length=63, blank=True, help_text="e.g. Deployment")
    controller_name = models.CharField(max_length=253, blank=True)
    replicas = models.PositiveIntegerField(null=True, blank=True)
    cpu_request = models.CharField(max_length=32, blank=True, help_text="e.g. 100m")
    memory_request = models.CharField(max_length=32, blank=True, help_text="e.g. 64Mi")
    min_zones = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Replicas over at least this many zones (empty: the AppGroup's; 1 exempts).",
    )

    class Meta:
        ordering = ("appgroup", "position", "id")
        constraints = [
            models.UniqueConstraint(
                fields=("appgroup", "name"),
                name="appgroups_workload_unique_name",
                violation_error_message="A workload with this name already exists in the AppGroup.",
            ),
            models.CheckConstraint(
                condition=Q(weight__gte=0),
                name="appgroups_workload_weight_non_negative",
                violation_error_message="Workload weight must be >= 0.",
            ),
            models.CheckConstraint(
                condition=Q(replicas__isnull=True) | Q(replicas__gte=1),
                name="appgroups_workload_replicas_positive",
                violation_error_message="Replicas must be >= 1.",
            ),
            models.CheckConstraint(
                condition=Q(min_zones__isnull=True) | (Q(min_zones__gte=1) & Q(min_zones__lte=F("replicas"))),
                name="appgroups_workload_min_zones_within_replicas",
                violation_error_message="minZones must be between 1 and the workload's replicas.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def cpu_request_millicores(self) -> int:
        return quantity.cpu_millicores(self.cpu_request) if self.cpu_request else 0

    @property
    def memory_request_bytes(self) -> int:
        return quantity.memory_bytes(self.memory_request) if self.memory_request else 0


class Dependency(models.Model):
    appgroup = models.ForeignKey(AppGroup, on_delete=models.CASCADE, related_name="dependencies")
    source = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="dependencies")
    target = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="dependents")
    position = models.PositiveIntegerField(default=0)
    latency = models.FloatField(help_text="Latency sensitivity (>= 0).")
    bandwidth = models.FloatField(help_text="Bandwidth sensitivity (>= 0).")
    lossrate = models.FloatField(help_text="Loss sensitivity (>= 0).")
    max_network_cost = models.PositiveIntegerField(null=True, blank=True, help_text="0..10000, as in the KEP")
    min_bandwidth = models.CharField(max_length=32, blank=True, help_text="Kubernetes quantity in bit/s, e.g. 100M")
    min_bandwidth_bps = models.FloatField(null=True, blank=True, editable=False)
    weight = models.FloatField(
        default=1.0, help_text="How much this edge counts against the others (> 0; 1 = the paper's unweighted score)."
    )

    class Meta:
        ordering = ("appgroup", "source__position", "position", "id")
        verbose_name_plural = "dependencies"
        constraints = [
            models.UniqueConstraint(
                fields=("source", "target"),
                name="appgroups_dependency_unique_pair",
                violation_error_message="This dependency is already declared.",
            ),
            models.CheckConstraint(
                condition=~Q(source=F("target")),
                name="appgroups_dependency_not_self",
                violation_error_message="A workload cannot depend on itself.",
            ),
            models.CheckConstraint(
                condition=Q(latency__gte=0) & Q(bandwidth__gte=0) & Q(lossrate__gte=0),
                name="appgroups_dependency_sensitivity_non_negative",
                violation_error_message="Sensitivities must be >= 0.",
            ),
            models.CheckConstraint(
                condition=GreaterThan(F("latency") + F("bandwidth") + F("lossrate"), 0),
                name="appgroups_dependency_sensitivity_positive_sum",
                violation_error_message="Latency, bandwidth and lossrate sensitivities must have a positive sum.",
            ),
            models.CheckConstraint(
                condition=Q(max_network_cost__isnull=True) | Q(max_network_cost__lte=MAX_NETWORK_COST),
                name="appgroups_dependency_max_network_cost_range",
                violation_error_message=f"maxNetworkCost must be between 0 and {MAX_NETWORK_COST}.",
            ),
            models.CheckConstraint(
                condition=Q(weight__gt=0),
                name="appgroups_dependency_weight_positive",
                violation_error_message="Dependency weight must be greater than 0.",
            ),
            models.CheckConstraint(
                condition=Q(min_bandwidth_bps__isnull=True) | Q(min_bandwidth_bps__gte=0),
                name="appgroups_dependency_min_bandwidth_non_negative",
                violation_error_message="minBandwidth must not be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id}->{self.target_id}"

    def _update_derived(self) -> None:
        try:
            self.min_bandwidth_bps = quantity.bandwidth_bps(self.min_bandwidth) if self.min_bandwidth else None
        except quantity.QuantityError:
            self.min_bandwidth_bps = None

    def save(self, *args: Any, **kwargs: Any) -> None:
        self._update_derived()
        super().save(*args, **kwargs)


class Placement(models.Model):
    """Where one pod of an AppGroup workload is bound (recorded by the extender or the pod watcher)."""

    pod_namespace = models.CharField(max_length=63)
    pod_name = models.CharField(max_length=253)
    pod_uid = models.CharField(max_length=64, blank=True)
    node_name = models.CharField(max_length=253)
    appgroup = models.ForeignKey(AppGroup, on_delete=models.CASCADE, related_name="placements")
    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="placements")
    bound_at = models.DateTimeField(default=timezone.now)
    source = models.CharField(
        max_length=16, choices=PlacementSource.choices, default=PlacementSource.EXTENDER
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("appgroup", "workload__position", "pod_namespace", "pod_name")
        constraints = [
            models.UniqueConstraint(
                fields=("pod_namespace", "pod_name"),
                name="appgroups_placement_unique_pod",
                violation_error_message="A placement for this pod already exists.",
            ),
            valid_choice("source", PlacementSource, name="appgroups_placement_source_valid",
                         message="Unknown placement source."),
        ]
        indexes = [models.Index(fields=("node_name",), name="appgroups_placement_node")]

    def __str__(self) -> str:
        return f"{self.pod_namespace}/{self.pod_name}@{self.node_name}"

    def clean(self) -> None:
        super().clean()
        if self.workload_id is not None and self.appgroup_id is not None:
            group = Workload.objects.filter(pk=self.workload_id).values_list("appgroup_id", flat=True).first()
            if group is not None and group != self.appgroup_id:
                raise ValidationError({"workload": "The workload belongs to another AppGroup."})
