"""AppGroup documents for the API: one nested document (workloads with their dependencies).

Serializer fields only check types. A write is turned into our AppGroup document (``api_document``)
and read by the one validator, ``documents.spec_from_document``, then saved by
``services.save_appgroup``; their errors come back with the paths mapped to this document's fields
(``workloads[1].dependencies[0].target``), so the API says what the import, the editors, the admin
and the sync say about the same problem.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .. import documents, services
from ..choices import Origin, RebalanceMode, TopologyMode, TopologySortingAlgorithm
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
    weight = serializers.FloatField(
        required=False, default=1.0, help_text="How much this edge counts against the others (> 0; default 1)."
    )


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
    min_zones = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text="Replicas over at least this many zones (null: the AppGroup's min_zones; 1 exempts).")
    dependencies = DependencySerializer(many=True, required=False, default=list, source="dependencies.all")


class AppGroupSerializer(serializers.ModelSerializer):
    workloads = WorkloadSerializer(many=True, source="workloads.all")
    topology_sorting_algorithm = serializers.ChoiceField(
        choices=TopologySortingAlgorithm.choices, required=False, default=TopologySortingAlgorithm.KAHN
    )
    topology_mode = serializers.ChoiceField(choices=TopologyMode.choices, required=False, default=TopologyMode.SOFT)
    min_zones = serializers.IntegerField(
        required=False, default=1,
        help_text="High availability: every workload's replicas over at least this many zones (1 = none).")
    rebalance_mode = serializers.ChoiceField(choices=RebalanceMode.choices, required=False, default=RebalanceMode.OFF)

    class Meta:
        model = AppGroup
        read_only_fields = ("origin", *AppGroup.BOOKKEEPING_FIELDS)
        fields = ("id", "namespace", "name", "description", "topology_sorting_algorithm", "topology_mode", "min_zones",
                  "rebalance_mode", *read_only_fields, "workloads")
        # Uniqueness of (namespace, name) is services.check_appgroup's, like every other rule.
        validators: list[Any] = []

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        document, paths = api_document(attrs)
        try:
            attrs["spec"] = documents.spec_from_document(document)
        except documents.DocumentError as exc:
            raise serializers.ValidationError(paths.errors(exc.errors)) from None
        attrs["paths"] = paths
        return attrs

    def _save(self, validated_data: dict[str, Any], instance: AppGroup | None) -> AppGroup:
        try:
            return services.save_appgroup(
                spec=validated_data["spec"],
                origin=Origin.NETAWARE,
                appgroup=instance,
                description=validated_data.get("description", instance.description if instance else ""),
                create_only=instance is None,
            )
        except documents.DocumentError as exc:
            raise serializers.ValidationError(validated_data["paths"].errors(exc.errors)) from None

    def create(self, validated_data: dict[str, Any]) -> AppGroup:
        return self._save(validated_data, None)

    def update(self, instance: AppGroup, validated_data: dict[str, Any]) -> AppGroup:
        if self.partial:
            # A partial update keeps the stored graph unless workloads are sent.
            raise serializers.ValidationError(
                {"non_field_errors": ["PATCH is not supported; PUT the whole document."]}
            )
        return self._save(validated_data, instance)


# This document's field for each field of ours (under a workload, under a dependency).
_WORKLOAD_FIELDS = {"resources.cpu": "cpu_request", "resources.memory": "memory_request",
                    "controller.kind": "controller_kind", "controller.name": "controller_name", "minZones": "min_zones"}
_DEPENDENCY_FIELDS = {"name": "target", "metrics": "", "metrics.latency": "latency", "metrics.bandwidth": "bandwidth",
                      "metrics.lossrate": "lossrate", "maxNetworkCost": "max_network_cost", "minBandwidth": "min_bandwidth",
                      "weight": "weight"}


def api_document(attrs: dict[str, Any]) -> tuple[dict[str, Any], documents.PathMap]:
    """Type-checked serializer data as our AppGroup document, and the map of its paths back to this one's."""
    paths = documents.PathMap({"metadata.name": "name", "metadata.namespace": "namespace", "spec.workloads": "workloads",
                               "spec.topologySortingAlgorithm": "topology_sorting_algorithm",
                               "spec.topologyMode": "topology_mode", "spec.minZones": "min_zones",
                               "spec.rebalanceMode": "rebalance_mode"})
    workloads = [_workload(raw, index, paths) for index, raw in enumerate((attrs.get("workloads") or {}).get("all", []))]
    spec: dict[str, Any] = {
        "topologySortingAlgorithm": attrs.get("topology_sorting_algorithm") or TopologySortingAlgorithm.KAHN,
        "topologyMode": attrs.get("topology_mode") or TopologyMode.SOFT}
    if attrs.get("min_zones") not in (None, 1):
        spec["minZones"] = attrs["min_zones"]
    if attrs.get("rebalance_mode") not in (None, "", RebalanceMode.OFF):
        spec["rebalanceMode"] = attrs["rebalance_mode"]
    spec["workloads"] = workloads
    document = {
        "apiVersion": documents.API_VERSION, "kind": documents.APPGROUP_KIND,
        "metadata": {"namespace": attrs.get("namespace", ""), "name": attrs.get("name", "")}, "spec": spec,
    }
    return document, paths


def _workload(raw: dict[str, Any], index: int, paths: documents.PathMap) -> dict[str, Any]:
    ours, theirs = f"spec.workloads[{index}]", f"workloads[{index}]"
    paths[ours] = theirs
    for field, api_field in _WORKLOAD_FIELDS.items():
        paths[f"{ours}.{field}"] = f"{theirs}.{api_field}"
    workload: dict[str, Any] = {"name": raw["name"], "selector": raw["selector"], "weight": raw.get("weight", 1.0)}
    controller = {key: raw[f"controller_{key}"] for key in ("kind", "name") if raw.get(f"controller_{key}")}
    requests = {key: raw[f"{key}_request"] for key in ("cpu", "memory") if raw.get(f"{key}_request")}
    optional = {"controller": controller, "resources": requests, "replicas": raw.get("replicas"),
                "minZones": raw.get("min_zones"),
                "dependencies": [_dependency(dep, f"{ours}.dependencies[{i}]", f"{theirs}.dependencies[{i}]", paths)
                                 for i, dep in enumerate((raw.get("dependencies") or {}).get("all", []))]}
    workload.update({key: value for key, value in optional.items() if value not in (None, {}, [])})
    return workload


def _dependency(dep: dict[str, Any], ours: str, theirs: str, paths: documents.PathMap) -> dict[str, Any]:
    paths[ours] = theirs
    for field, api_field in _DEPENDENCY_FIELDS.items():
        paths[f"{ours}.{field}"] = f"{theirs}.{api_field}" if api_field else theirs
    entry: dict[str, Any] = {"name": dep["target"]["name"],
                             "metrics": {key: dep[key] for key in ("latency", "bandwidth", "lossrate")}}
    if dep.get("max_network_cost") is not None:
        entry["maxNetworkCost"] = dep["max_network_cost"]
    if dep.get("min_bandwidth"):
        entry["minBandwidth"] = dep["min_bandwidth"]
    if dep.get("weight") is not None:
        entry["weight"] = dep["weight"]
    return entry


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

