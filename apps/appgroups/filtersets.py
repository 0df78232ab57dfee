"""Filters for the AppGroup and Placement API lists."""

from __future__ import annotations

import django_filters

from .choices import Origin, PlacementSource
from .models import AppGroup, Placement


class AppGroupFilterSet(django_filters.FilterSet):
    namespace = django_filters.CharFilter()
    name = django_filters.CharFilter()
    name__icontains = django_filters.CharFilter(field_name="name", lookup_expr="icontains")
    origin = django_filters.ChoiceFilter(choices=Origin.choices)

    class Meta:
        model = AppGroup
        fields = ("namespace", "name", "origin")


class PlacementFilterSet(django_filters.FilterSet):
    pod_namespace = django_filters.CharFilter()
    node_name = django_filters.CharFilter()
    appgroup = django_filters.NumberFilter(field_name="appgroup_id")
    workload = django_filters.CharFilter(field_name="workload__name")
    source = django_filters.ChoiceFilter(choices=PlacementSource.choices)

    class Meta:
        model = Placement
        fields = ("pod_namespace", "node_name", "appgroup", "workload", "source")
