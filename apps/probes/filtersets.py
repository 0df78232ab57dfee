import django_filters

from netaware_core.filters import UTCIsoDateTimeFilter

from .choices import NodeSeries, PairSeries
from .models import NodeSample, PairSample, PullWatermark


class SampleWindowFilterSet(django_filters.FilterSet):
    """Samples whose window end lies in [since, until] (UTC ISO 8601)."""

    since = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="gte")
    until = UTCIsoDateTimeFilter(field_name="ts", lookup_expr="lte")


class PairSampleFilterSet(SampleWindowFilterSet):
    source = django_filters.CharFilter(lookup_expr="exact")
    target = django_filters.CharFilter(lookup_expr="exact")
    series = django_filters.MultipleChoiceFilter(choices=PairSeries.choices)

    class Meta:
        model = PairSample
        fields = ["source", "target", "series", "since", "until"]


class NodeSampleFilterSet(SampleWindowFilterSet):
    node = django_filters.CharFilter(lookup_expr="exact")
    series = django_filters.MultipleChoiceFilter(choices=NodeSeries.choices)

    class Meta:
        model = NodeSample
        fields = ["node", "series", "since", "until"]


class PullWatermarkFilterSet(django_filters.FilterSet):
    query = django_filters.CharFilter(lookup_expr="exact")

    class Meta:
        model = PullWatermark
        fields = ["query"]
