"""AppGroup documents for the API: one nested document (workloads with their dependencies).

Writes are converted to an ``AppGroupSpec`` and handed to ``services.save_appgroup``, which runs the
model rules (full_clean) on every row; serializer fields only check types. Errors are keyed by
flat field paths such as ``workloads[1].dependencies[0].target``.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from netaware_core import quantity

from .. import resources, services
from ..choices import Origin, TopologyMode, TopologySortingAlgorithm
from ..graph import AppGroupSpec, DependencySpec, Sensitivity, WorkloadSpec
from ..models import AppGroup, Placement


class DependencySerializer(serializers.Serializer):
    target = serializers.CharField(
        source="target.name", max_length=63, help_text="Name of the workload depended on."
    )
    latency = serializers.FloatField(help_text="Latency sensitivity (>= 0).")
    bandwidth = serializers.FloatField(help_text="Bandwidth sensitivity (>= 0).")
    lossrate = serializers.FloatField(help_text="Loss sensitivity (>= 0).")
    max_network_cost = serializers.IntegerField(required=False, allow_null=True, default=None)
    min_bandwidth = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=32,
        help_text="Kubernetes quantity (bit/s), e.g. 100M",
    )
    min_bandwidth_bps = serializers.FloatField(read_only=True)


class WorkloadSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=63)
    selector = serializers.JSONField(
        help_text="{matchLabels: {...}, matchExpressions: [{key, operator, values}]} or a string such as 'app=frontend'."
    )
    weight = serializers.FloatField(required=False, default=1.0)
    controller_kind = serializers.CharField(required=False, allow_blank=True, default="", max_length=63)
    controller_name = serializers.CharField(required=False, allow_blank=True, default="", max_length=253)
    replicas = serializers.IntegerField(required=False, allow_null=True, default=None)
    cpu_request = serializers.CharField(required=False, allow_blank=True, default="", max_length=32)
    memory_request = serializers.CharField(required=False, allow_blank=True, default="", max_length=32)
    dependencies = DependencySerializer(many=True, required=False, default=list, source="dependencies.all")


class AppGroupSerializer(serializers.ModelSerializer):
    workloads = WorkloadSerializer(many=True, source="workloads.all")
    topology_sorting_algorithm = serializers.ChoiceField(
        choices=TopologySortingAlgorithm.choices, required=False, default=TopologySortingAlgorithm.KAHN
    )
    topology_mode = serializers.ChoiceField(choices=TopologyMode.choices, required=False, default=TopologyMode.SOFT)

    class Meta:
        model = AppGroup
        read_only_fields = ("origin", *AppGroup.BOOKKEEPING_FIELDS)
        fields = ("id", "namespace", "name", "description", "topology_sorting_algorithm", "topology_mode",
                  *read_only_fields, "workloads")
        # Uniqueness (namespace, name) is checked by the service's full_clean with the model message.
        validators: list[Any] = []

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["spec"] = spec_from_validated(attrs)
        return attrs

    def _save(self, validated_data: dict[str, Any], instance: AppGroup | None) -> AppGroup:
        # An AppGroupValidationError is a FieldError: the API's exception handler makes it the 400.
        return services.save_appgroup(
            spec=validated_data["spec"],
            origin=Origin.NETAWARE,
            appgroup=instance,
            description=validated_data.get("description", instance.description if instance else ""),
            create_only=instance is None,
        )

    def create(self, validated_data: dict[str, Any]) -> AppGroup:
        return self._save(validated_data, None)

    def update(self, instance: AppGroup, validated_data: dict[str, Any]) -> AppGroup:
        if self.partial:
            # A partial update keeps the stored graph unless workloads are sent.
            raise serializers.ValidationError(
                {"non_field_errors": ["PATCH is not supported; PUT the whole document."]}
            )
        return self._save(validated_data, instance)


def spec_from_validated(attrs: dict[str, Any]) -> AppGroupSpec:
    """Type-checked serializer data -> AppGroupSpec; conversion errors keyed by field path."""
    errors: dict[str, list[str]] = {}
    workloads: list[WorkloadSpec] = []
    raw_workloads = (attrs.get("workloads") or {}).get("all", [])
    for index, raw in enumerate(raw_workloads):
        base = f"workloads[{index}]"
        try:
            selector = resources.parse_selector(raw.get("selector"), f"{base}.selector")
        except resources.ResourceError as exc:
            errors.setdefault(exc.field_path, []).append(exc.message)
            continue
        hints: dict[str, int] = {}
        for field, convert in (
            ("cpu_request", quantity.cpu_millicores),
            ("memory_request", quantity.memory_bytes),
        ):
            value = raw.get(field) or ""
            try:
                hints[field] = convert(value) if value else 0
            except quantity.QuantityError as exc:
                errors.setdefault(f"{base}.{field}", []).append(str(exc))
        replicas = raw.get("replicas")
        if replicas is not None and replicas < 1:
            errors.setdefault(f"{base}.replicas", []).append(
                "Ensure this value is greater than or equal to 1."
            )
        dependencies: list[DependencySpec] = []
        for dep_index, dep in enumerate((raw.get("dependencies") or {}).get("all", [])):
            dep_base = f"{base}.dependencies[{dep_index}]"
            min_bandwidth = dep.get("min_bandwidth") or ""
            bps: float | None = None
            if min_bandwidth:
                try:
                    bps = quantity.bandwidth_bps(min_bandwidth)
                except quantity.QuantityError as exc:
                    errors.setdefault(f"{dep_base}.min_bandwidth", []).append(str(exc))
            cost = dep.get("max_network_cost")
            dependencies.append(
                DependencySpec(
                    target=dep["target"]["name"],
                    sensitivity=Sensitivity(dep["latency"], dep["bandwidth"], dep["lossrate"]),
                    max_network_cost=float(cost) if cost is not None else None,
                    min_bandwidth_bps=bps,
                )
            )
        if errors:
            continue
        workloads.append(
            WorkloadSpec(
                name=raw["name"],
                selector=selector,
                weight=raw.get("weight", 1.0),
                dependencies=tuple(dependencies),
                controller_kind=raw.get("controller_kind") or "",
                controller_name=raw.get("controller_name") or "",
                replicas=replicas if replicas is not None else 1,
                cpu_request_millicores=hints.get("cpu_request", 0),
                memory_request_bytes=hints.get("memory_request", 0),
            )
        )
    if not raw_workloads:
        errors.setdefault("workloads", []).append("An AppGroup needs at least one workload.")
    if errors:
        raise serializers.ValidationError(errors)
    return AppGroupSpec(
        namespace=attrs.get("namespace", ""),
        name=attrs.get("name", ""),
        workloads=tuple(workloads),
        topology_sorting_algorithm=attrs.get("topology_sorting_algorithm") or TopologySortingAlgorithm.KAHN,
        topology_mode=attrs.get("topology_mode") or TopologyMode.SOFT,
    )


class PlacementSerializer(serializers.ModelSerializer):
    appgroup = serializers.CharField(source="appgroup.__str__", read_only=True)
    workload = serializers.CharField(source="workload.name", read_only=True)

    class Meta:
        model = Placement
        fields = (
            "id",
            "pod_namespace",
            "pod_name",
            "pod_uid",
            "node_name",
            "appgroup",
            "workload",
            "bound_at",
            "source",
            "updated_at",
        )
        read_only_fields = fields


class TopologyOrderSerializer(serializers.Serializer):
    algorithm = serializers.CharField(help_text="One of the topology sorting algorithms.")
    order = serializers.ListField(child=serializers.CharField())
    index = serializers.DictField(child=serializers.IntegerField())
    cyclic = serializers.BooleanField()
    cycle_nodes = serializers.ListField(child=serializers.CharField())


class ImportResultSerializer(serializers.Serializer):
    created = serializers.BooleanField()
    appgroup = AppGroupSerializer()
