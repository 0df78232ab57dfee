from rest_framework import serializers

from ..models import Node, TopologySnapshot


class NodeSerializer(serializers.ModelSerializer):
    allocatable = serializers.SerializerMethodField()

    class Meta:
        model = Node
        fields = ["name", "zone", "region", "address", "labels", "allocatable", "allocatable_cpu_millicores",
                  "allocatable_memory_bytes", "ready", "source", "updated_at"]
        read_only_fields = fields

    def get_allocatable(self, obj: Node) -> dict[str, int]:
        return {"cpu_millicores": obj.allocatable_cpu_millicores, "memory_bytes": obj.allocatable_memory_bytes}


class TopologySnapshotSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = TopologySnapshot
        fields = ["version", "url", "created_at", "source", "latency_quantile", "node_count", "measured_pairs",
                  "inferred_pairs", "stale_pairs", "stale", "stale_reason", "data_until", "min_latency",
                  "max_latency", "min_bandwidth", "max_bandwidth", "min_lossrate", "max_lossrate",
                  "cost_unit_ms"]
        read_only_fields = fields

    def get_url(self, obj: TopologySnapshot) -> str:
        return f"/api/topology/snapshots/{obj.version}/"


class MetadataSerializer(serializers.Serializer):
    name = serializers.CharField()
    generation = serializers.IntegerField()
    creationTimestamp = serializers.DateTimeField()


class NetworkTopologySerializer(serializers.Serializer):
    """Schema only: the document is built by selectors.topology_document (docs/topology.md)."""

    apiVersion = serializers.CharField(default="netaware.io/v1alpha1")
    kind = serializers.CharField(default="NetworkTopology")
    metadata = MetadataSerializer()
    spec = serializers.DictField(help_text="latency/bandwidth/lossrate nested source -> destination maps (ms, "
                                           "Mbps, %), the six extrema, nodes, zones, regions and costs")
    status = serializers.DictField(help_text="version, source, stale, staleReason (both computed when read: a "
                                             "snapshot whose data is older than NETAWARE_STALE_AFTER_SECONDS is "
                                             "stale), ageSeconds, dataUntil, measuredPairs, inferredPairs, "
                                             "stalePairs, inferred, stalePairList")


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = serializers.DictField(child=serializers.CharField(), required=False)  # type: ignore[assignment]  # a schema field named like Serializer.errors
