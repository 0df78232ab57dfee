import django_filters

from .models import Node, TopologySnapshot


class NodeFilterSet(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="exact")
    zone = django_filters.CharFilter(lookup_expr="exact")
    region = django_filters.CharFilter(lookup_expr="exact")

    class Meta:
        model = Node
        fields = ["name", "zone", "region", "ready", "source"]


class TopologySnapshotFilterSet(django_filters.FilterSet):
    class Meta:
        model = TopologySnapshot
        fields = ["source", "stale"]
