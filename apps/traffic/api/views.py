"""Observed-traffic API: sources, observed AppGroups (graph, diff against the declared one, adopt) and
learning modes. Reads need a user (viewer); adopting and setting modes write AppGroups, so they need
the editor's AppGroup permissions. Views stay thin: services write, selectors read."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.appgroups import documents

from .. import selectors, services
from ..models import LearningMode, ObservedAppGroup
from .serializers import LearningModeSerializer, ObservedAppGroupSerializer

ADOPT_PERMISSIONS = ("appgroups.add_appgroup", "appgroups.change_appgroup")


class SourcesView(APIView):
    """Traffic sources: configured (NETAWARE_TRAFFIC_SOURCES) and discovered (metric present)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response(selectors.sources())


class ObservedListView(generics.ListAPIView):
    """Observed applications: mode, the declared AppGroup compared with, hot edges it misses."""

    queryset = ObservedAppGroup.objects.order_by("namespace", "name")
    serializer_class = ObservedAppGroupSerializer


def _observed(namespace: str, name: str) -> ObservedAppGroup:
    row = selectors.observed(namespace=namespace, name=name)
    if row is None:
        raise exceptions.NotFound(f"no observed application {namespace}/{name}")
    return row


class ObservedGraphView(APIView):
    """The observed graph of one application: workloads, edges with rates (requests/s, bytes/s each way,
    p50/p99 seconds, error ratio) and the observed AppGroup document."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, namespace: str, name: str) -> Response:
        return Response(selectors.graph(_observed(namespace, name)))


class ObservedDiffView(APIView):
    """Observed vs declared: edges the declared AppGroup misses (with requests/s), declared edges not
    observed, and observed workloads no declared workload selects."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, namespace: str, name: str) -> Response:
        row = _observed(namespace, name)
        return Response({"namespace": row.namespace, "name": row.name, "declared": row.declared or None,
                         "hot_missing": row.hot_missing, **row.diff})


class AdoptView(APIView):
    """Create or update the AppGroup from the observed one (origin observed). 409 when a hand-written
    AppGroup of that name exists: it is never overwritten."""

    write_permissions = ADOPT_PERMISSIONS

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, namespace: str, name: str) -> Response:
        row = _observed(namespace, name)
        try:
            appgroup = services.adopt(observed=row)
        except services.AdoptRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except documents.DocumentError as exc:
            return Response({"detail": "the observed AppGroup is not valid", "errors": exc.errors},
                            status=status.HTTP_400_BAD_REQUEST)
        return Response({"namespace": appgroup.namespace, "name": appgroup.name, "origin": appgroup.origin,
                         "id": appgroup.pk}, status=status.HTTP_200_OK)


class ModesView(generics.ListCreateAPIView):
    """Learning modes per namespace (application empty) or application: suggest, adopt, off. POST sets one."""

    queryset = LearningMode.objects.order_by("namespace", "application")
    serializer_class = LearningModeSerializer
    write_permissions = ("appgroups.change_appgroup",)

    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = services.set_mode(**serializer.validated_data)
        return Response(LearningModeSerializer(row).data, status=status.HTTP_200_OK)
