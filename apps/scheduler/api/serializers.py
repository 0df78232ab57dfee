"""Serializers of the scheduler API (profiles, decisions)."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import serializers

from ..models import Decision, SchedulerProfile
from ..profiles import profile_error
from ..services import decision_breakdown_by_node


class ProfileJSONField(serializers.JSONField):
    """DRF's JSONField rejects inf/NaN (JSON ``1e999`` parses to inf) as "Value must be valid JSON";
    let them through so validate() answers with the exact path (``scorers[0].weight``)."""

    def to_internal_value(self, data: Any) -> Any:
        try:
            json.dumps(data, allow_nan=True)
        except (TypeError, ValueError):
            self.fail("invalid")
        return data


class SchedulerProfileSerializer(serializers.ModelSerializer):
    scorers = ProfileJSONField(required=False)
    filters = ProfileJSONField(required=False)
    params = ProfileJSONField(required=False)

    class Meta:
        model = SchedulerProfile
        fields = ["id", "name", "description", "is_default", "scorers", "filters", "params", "created", "updated"]
        read_only_fields = ["id", "created", "updated"]
        # Making a profile the default unsets the previous one (services.save_profile), so the
        # conditional unique constraint must not turn that into a 400 here.
        extra_kwargs: dict[str, dict[str, Any]] = {"is_default": {"validators": []}}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance = self.instance
        scorers = attrs.get("scorers", instance.scorers if instance else [])
        filters = attrs.get("filters", instance.filters if instance else [])
        params = attrs.get("params", instance.params if instance else {})
        error = profile_error(scorers=scorers, filters=filters, params=params)
        if error is not None:
            raise serializers.ValidationError(error.errors)
        return attrs


class DecisionSerializer(serializers.ModelSerializer):
    pod = serializers.SerializerMethodField()

    class Meta:
        model = Decision
        fields = [
            "id", "ts", "verb", "pod", "pod_namespace", "pod_name", "pod_uid", "profile", "workload", "node",
            "candidates", "result", "error", "duration_ms",
        ]

    def get_pod(self, obj: Decision) -> str:
        return f"{obj.pod_namespace}/{obj.pod_name}" if obj.pod_name else ""


class DecisionDetailSerializer(DecisionSerializer):
    breakdown = serializers.SerializerMethodField(help_text="node → {scorer: score, total, extender, reason}")

    class Meta(DecisionSerializer.Meta):
        fields = [*DecisionSerializer.Meta.fields, "breakdown"]

    def get_breakdown(self, obj: Decision) -> dict[str, dict[str, Any]]:
        return decision_breakdown_by_node(obj)
