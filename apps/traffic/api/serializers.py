"""Serializers of the observed-traffic API (output shapes and the one input: a learning mode)."""

from rest_framework import serializers

from ..choices import Mode
from ..models import LearningMode, ObservedAppGroup


class ObservedAppGroupSerializer(serializers.ModelSerializer):
    edge_count = serializers.SerializerMethodField()

    class Meta:
        model = ObservedAppGroup
        fields = ("namespace", "name", "mode", "declared", "hot_missing", "edge_count", "learned_at", "adopt_error")

    def get_edge_count(self, obj: ObservedAppGroup) -> int:
        return len(obj.edges or [])


class LearningModeSerializer(serializers.ModelSerializer):
    namespace = serializers.RegexField(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    application = serializers.RegexField(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$", max_length=253, required=False,
                                         allow_blank=True, default="")
    mode = serializers.ChoiceField(choices=Mode.choices)

    class Meta:
        model = LearningMode
        fields = ("namespace", "application", "mode", "updated_at")
        read_only_fields = ("updated_at",)
        validators: list = []  # an existing (namespace, application) is updated, not refused
