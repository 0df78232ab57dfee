"""AppGroup API: nested CRUD, document import/export, placements and topological order.

Views stay thin: documents live in documents.py, writes in services.py, reads in selectors.py.
Every 400 leaves through netaware_core.api_errors' handler: {"detail", "errors": {field path: messages}}.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, renderers, viewsets
from rest_framework.decorators import action
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from netaware_core.fielderrors import BODY

from .. import documents, selectors, services, toposort
from ..filtersets import AppGroupFilterSet, PlacementFilterSet
from ..models import AppGroup, Placement
from .serializers import AppGroupSerializer, PlacementSerializer, TopologyOrderSerializer

if TYPE_CHECKING:
    from django.db.models import QuerySet


def plain_data(data: Any) -> Any:
    """``data`` with DRF's ErrorDetail/ReturnDict (str/dict subclasses) as plain types SafeDumper accepts."""
    if isinstance(data, Mapping):
        return {plain_data(key): plain_data(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [plain_data(item) for item in data]
    if isinstance(data, str):
        return str(data)
    return data


class YAMLRenderer(renderers.BaseRenderer):
    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None) -> bytes:
        if data is None:
            return b""
        return yaml.safe_dump(
            plain_data(data), sort_keys=False, default_flow_style=False, allow_unicode=True
        ).encode()


class ExportNegotiation(DefaultContentNegotiation):
    """``?format=`` picks YAML or JSON; anything else is a 400, not DRF's default 404."""

    def select_renderer(self, request: Request, renderers: Any, format_suffix: str | None = None) -> Any:
        fmt = format_suffix or request.query_params.get("format")
        if fmt and fmt not in ("yaml", "json"):
            raise exceptions.ValidationError({"format": [f"{fmt!r} is not one of yaml, json"]})
        if fmt:
            for renderer in renderers:
                if renderer.format == fmt:
                    return renderer, renderer.media_type
        return super().select_renderer(request, renderers, format_suffix)


@extend_schema(tags=["appgroups"])
class AppGroupViewSet(viewsets.ModelViewSet):
    serializer_class = AppGroupSerializer
    filterset_class = AppGroupFilterSet
    http_method_names = ["get", "post", "put", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[AppGroup]:
        return selectors.appgroups_with_graph()

    def perform_destroy(self, instance: AppGroup) -> None:
        services.delete_appgroup(appgroup=instance)

    @extend_schema(
        summary="Import an AppGroup document (ours or scheduler-plugins'), upsert by namespace/name",
        request={"application/json": OpenApiTypes.OBJECT, "application/yaml": OpenApiTypes.OBJECT},
        responses={200: AppGroupSerializer, 201: AppGroupSerializer},
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_document(self, request: Request) -> Response:
        document = request.data
        if not isinstance(document, Mapping):
            raise exceptions.ValidationError({BODY: ["the body must be one AppGroup document (an object)"]})
        with transaction.atomic():  # a documents.DocumentError is a 400 with the document's paths
            spec = documents.spec_from_document(document)
            existed = AppGroup.objects.filter(namespace=spec.namespace, name=spec.name).exists()
            appgroup = services.import_document(document=document, origin="netaware")
        appgroup = selectors.appgroups_with_graph().get(pk=appgroup.pk)
        return Response(AppGroupSerializer(appgroup).data, status=200 if existed else 201)

    @extend_schema(
        summary="The AppGroup as a document (our CR or scheduler-plugins' CR)",
        parameters=[
            OpenApiParameter("format", str, enum=["yaml", "json"], description="default yaml"),
            OpenApiParameter("flavor", str, enum=["netaware", "diktyo"], description="default netaware"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(
        detail=True,
        methods=["get"],
        renderer_classes=[YAMLRenderer, renderers.JSONRenderer],
        content_negotiation_class=ExportNegotiation,
    )
    def export(self, request: Request, pk: str | None = None) -> Response:
        flavor = request.query_params.get("flavor", "netaware")
        if flavor not in ("netaware", "diktyo"):
            raise exceptions.ValidationError({"flavor": [f"{flavor!r} is not one of netaware, diktyo"]})
        appgroup = self.get_object()
        document = services.export_document(appgroup=appgroup, flavor=flavor)  # type: ignore[arg-type]
        filename = f"{appgroup.namespace}-{appgroup.name}-{flavor}.{request.accepted_renderer.format}"
        return Response(document, headers={"Content-Disposition": f'inline; filename="{filename}"'})

    @extend_schema(
        summary="Pods of this AppGroup and the nodes they are bound to",
        responses=PlacementSerializer(many=True),
    )
    @action(detail=True, methods=["get"])
    def placements(self, request: Request, pk: str | None = None) -> Response:
        """Paginated like every list (limit / offset, bounded page size), as the schema says: an
        AppGroup of thousands of pods is never one unbounded answer."""
        appgroup = self.get_object()
        rows = Placement.objects.filter(appgroup=appgroup).select_related("appgroup", "workload")
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(PlacementSerializer(page, many=True).data)

    @extend_schema(
        summary="Topological order of the workloads (the AppGroup's algorithm unless ?algorithm= is given)",
        parameters=[OpenApiParameter("algorithm", str, enum=list(toposort.ALGORITHMS))],
        responses=TopologyOrderSerializer,
    )
    @action(detail=True, methods=["get"])
    def order(self, request: Request, pk: str | None = None) -> Response:
        appgroup = self.get_object()
        algorithm = request.query_params.get("algorithm") or appgroup.topology_sorting_algorithm
        if algorithm not in toposort.ALGORITHMS:
            raise exceptions.ValidationError(
                {"algorithm": [f"{algorithm!r} is not one of {', '.join(toposort.ALGORITHMS)}"]}
            )
        result = documents.topology_order(selectors.appgroup_spec(appgroup=appgroup), algorithm)
        data = {
            "algorithm": result.algorithm,
            "order": list(result.order),
            "index": result.index(),
            "cyclic": result.cyclic,
            "cycle_nodes": list(result.cycle_nodes),
        }
        return Response(TopologyOrderSerializer(data).data)


@extend_schema(tags=["appgroups"])
class PlacementViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = PlacementSerializer
    filterset_class = PlacementFilterSet
    queryset = Placement.objects.select_related("appgroup", "workload")
