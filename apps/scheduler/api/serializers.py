"""Serializers of the scheduler API (profiles, decisions, drift)."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import serializers

from ..models import Decision, DriftAssessment, SchedulerProfile
from ..profiles import document_of, is_document, profile_error, stored_fields
from ..scoring import engine
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
    """A profile as the model's fields (a ``netaware.io/v1alpha1`` document's), or, when the body names an
    ``apiVersion``, as a profile document of that version (``netaware.io/v1``: ``plugins.score`` /
    ``plugins.filter``) beside ``description`` and ``is_default``; errors name the document's fields.
    Answers carry both: the fields and ``document``, the profile in the current version."""

    scorers = ProfileJSONField(required=False)
    filters = ProfileJSONField(required=False)
    params = ProfileJSONField(required=False)
    document = serializers.SerializerMethodField()

    class Meta:
        model = SchedulerProfile
        fields = ["id", "name", "description", "is_default", "scorers", "filters", "params", "document", "created",
                  "updated"]
        read_only_fields = ["id", "created", "updated"]
        # Making a profile the default unsets the previous one (services.save_profile), so the
        # conditional unique constraint must not turn that into a 400 here.
        extra_kwargs: dict[str, dict[str, Any]] = {"is_default": {"validators": []}}

    def get_document(self, obj: SchedulerProfile) -> dict[str, Any] | None:
        return document_of(obj)

    def to_internal_value(self, data: Any) -> Any:
        if is_document(data):
            extras = {key: data[key] for key in ("description", "is_default") if key in data}
            try:
                fields = stored_fields({k: v for k, v in data.items() if k not in extras})
            except engine.ProfileError as exc:
                raise serializers.ValidationError(exc.errors) from exc
            data = {**extras, **fields}
        return super().to_internal_value(data)

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


class DriftMoveSerializer(serializers.Serializer):
    """One single-pod move (``evaluation.drift.Move``), in the order to apply."""

    pod = serializers.CharField(help_text="namespace/name of the pod to evict")
    workload = serializers.CharField()
    from_node = serializers.CharField()
    to_node = serializers.CharField(help_text="where its replacement should land")
    expected_gain = serializers.FloatField(help_text="average network score points this move adds, after the ones before it")
    reason = serializers.CharField()


class DriftSerializer(serializers.ModelSerializer):
    """An AppGroup's drift: its placement now vs the best found now, on the current topology."""

    appgroup = serializers.SerializerMethodField()
    moves = DriftMoveSerializer(many=True, read_only=True)
    notes = serializers.ListField(child=serializers.CharField(), read_only=True)
    stored = serializers.SerializerMethodField(help_text="false when computed for this request (?fresh=true)")

    class Meta:
        model = DriftAssessment
        fields = ["appgroup", "computed_at", "stored", "topology_version", "drift", "current_score", "best_score",
                  "score_after_moves", "current_latency_ms", "best_latency_ms", "current_transfer_cost",
                  "best_transfer_cost", "plan_id", "moves", "notes", "elapsed_ms"]
        read_only_fields = fields

    def get_appgroup(self, obj: DriftAssessment) -> str:
        return f"{obj.appgroup.namespace}/{obj.appgroup.name}"

    def get_stored(self, obj: DriftAssessment) -> bool:
        return obj.pk is not None
