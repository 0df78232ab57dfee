from rest_framework import serializers

from ..models import NodeSample, PairSample, PullWatermark


class PairSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = PairSample
        fields = ["ts", "series", "source", "target", "value"]


class NodeSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = NodeSample
        fields = ["ts", "series", "node", "value"]


class PullWatermarkSerializer(serializers.ModelSerializer):
    class Meta:
        model = PullWatermark
        fields = ["query", "last_end", "updated_at"]
