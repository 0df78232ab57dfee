"""Filters of the scheduler API."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from .choices import Verb
from .models import Decision


class DecisionFilterSet(django_filters.FilterSet):
    pod = django_filters.CharFilter(method="filter_pod", help_text="namespace/name, or a bare pod name")
    verb = django_filters.ChoiceFilter(choices=Verb.choices)
    since = django_filters.IsoDateTimeFilter(field_name="ts", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="ts", lookup_expr="lt")
    profile = django_filters.CharFilter()
    errors = django_filters.BooleanFilter(method="filter_errors", help_text="only decisions with an error")

    class Meta:
        model = Decision
        fields = ["pod", "verb", "since", "until", "profile", "errors"]

    def filter_pod(self, queryset: QuerySet[Decision], name: str, value: str) -> QuerySet[Decision]:
        namespace, _, pod = value.rpartition("/")
        if namespace:
            return queryset.filter(pod_namespace=namespace, pod_name=pod)
        return queryset.filter(pod_name=pod)

    def filter_errors(self, queryset: QuerySet[Decision], name: str, value: bool | None) -> QuerySet[Decision]:
        if value is None:
            return queryset
        return queryset.exclude(error="") if value else queryset.filter(error="")


__all__ = ["DecisionFilterSet", "Q"]
