"""Read-only API over the pipeline's raw samples and watermarks (writes come only from the pipeline)."""

from rest_framework import mixins, viewsets

from ..filtersets import NodeSampleFilterSet, PairSampleFilterSet, PullWatermarkFilterSet
from ..models import NodeSample, PairSample, PullWatermark
from .serializers import NodeSampleSerializer, PairSampleSerializer, PullWatermarkSerializer


class PairSampleViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Raw per-pair samples (seconds, ratio 0..1, bits/s), newest first; filter by source, target, series, since."""

    queryset = PairSample.objects.order_by("-ts", "series", "source", "target")
    serializer_class = PairSampleSerializer
    filterset_class = PairSampleFilterSet


class NodeSampleViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Raw per-node utilisation samples, newest first."""

    queryset = NodeSample.objects.order_by("-ts", "series", "node")
    serializer_class = NodeSampleSerializer
    filterset_class = NodeSampleFilterSet


class PullWatermarkViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """End of the newest window stored per query."""

    queryset = PullWatermark.objects.order_by("query")
    serializer_class = PullWatermarkSerializer
    filterset_class = PullWatermarkFilterSet
