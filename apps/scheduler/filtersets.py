"""Filters of the scheduler API."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from netaware_core.filters import UTCIsoDateTimeFilter

from .choices import Verb
from .models import Decision


class DecisionFilterSet(django_filters.FilterSet):
    pod = django_filters.CharFilter(method="filter_pod", help_text="namespace/name, or a bare pod name")
    verb = django_filters.ChoiceFilter(choices=Verb.choices)
    since = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="gte")
    until = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="lt")
    profile = django_filters.CharFilter()
    errors = django_filters.BooleanFilter(method="filter_errors", help_text="only decisions with an error")
    appgroup = django_filters.CharFilter(method="filter_appgroup", help_text="namespace/name of an AppGroup")
    outcome = django_filters.ChoiceFilter(
        method="filter_outcome", choices=[("ok", "ok"), ("error", "error"), ("neutral", "neutral")],
        help_text="ok (answered, not neutral), error, or neutral (scores without network data)")

    class Meta:
        model = Decision
        fields = ["pod", "verb", "since", "until", "profile", "errors", "appgroup", "outcome"]

    def filter_appgroup(self, queryset: QuerySet[Decision], name: str, value: str) -> QuerySet[Decision]:
        return queryset.filter(workload__startswith=value.strip().rstrip("/") + "/")

    def filter_outcome(self, queryset: QuerySet[Decision], name: str, value: str) -> QuerySet[Decision]:
        if value == "error":
            return queryset.exclude(error="")
        neutral = Q(result__neutral=True)
        return queryset.filter(error="").filter(neutral) if value == "neutral" else queryset.filter(error="").exclude(neutral)

    def filter_pod(self, queryset: QuerySet[Decision], name: str, value: str) -> QuerySet[Decision]:
        namespace, _, pod = value.rpartition("/")
        if namespace:
            return queryset.filter(pod_namespace=namespace, pod_name=pod)
        return queryset.filter(pod_name=pod)

    @extend_schema_field(OpenApiTypes.BOOL)
    def filter_errors(self, queryset: QuerySet[Decision], name: str, value: bool | None) -> QuerySet[Decision]:
        if value is None:
            return queryset
        return queryset.exclude(error="") if value else queryset.filter(error="")


__all__ = ["DecisionFilterSet", "Q"]
