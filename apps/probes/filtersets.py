import django_filters

from netaware_site.filters import UTCIsoDateTimeFilter

from .choices import NodeSeries, PairSeries
from .models import NodeSample, PairSample, PullWatermark


class PairSampleFilterSet(django_filters.FilterSet):
    source = django_filters.CharFilter(lookup_expr="exact")
    target = django_filters.CharFilter(lookup_expr="exact")
    series = django_filters.MultipleChoiceFilter(choices=PairSeries.choices)
    since = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="gte")
    until = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="lte")

    class Meta:
        model = PairSample
        fields = ["source", "target", "series", "since", "until"]


class NodeSampleFilterSet(django_filters.FilterSet):
    node = django_filters.CharFilter(lookup_expr="exact")
    series = django_filters.MultipleChoiceFilter(choices=NodeSeries.choices)
    since = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="gte")
    until = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="lte")

    class Meta:
        model = NodeSample
        fields = ["node", "series", "since", "until"]


class PullWatermarkFilterSet(django_filters.FilterSet):
    query = django_filters.CharFilter(lookup_expr="exact")

    class Meta:
        model = PullWatermark
        fields = ["query"]
