"""Topology API: the current NetworkTopology, imports, snapshot history and the node list."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors, services
from ..filtersets import NodeFilterSet, TopologySnapshotFilterSet
from .serializers import (
    ErrorSerializer,
    NetworkTopologySerializer,
    NodeSerializer,
    TopologySnapshotSerializer,
)

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from ..models import Node, TopologySnapshot


class ORJSONRenderer(BaseRenderer):
    """A 1,000-node topology is 3M numbers: orjson renders it ~10x faster than json."""

    media_type = "application/json"
    format = "json"
    charset = None

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if data is None:
            return b""
        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)


_RENDERERS = [ORJSONRenderer, BrowsableAPIRenderer]
_NOT_FOUND = {"detail": "No NetworkTopology yet: wait for the first rebuild (every 60 s) or POST one to "
                        "/api/topology/import."}


class CurrentTopologyView(APIView):
    renderer_classes = _RENDERERS

    @extend_schema(
        summary="Current NetworkTopology",
        responses={200: NetworkTopologySerializer, 404: OpenApiResponse(ErrorSerializer, description="none yet")},
    )
    def get(self, request: Request) -> Response:
        snapshot = selectors.current_snapshot()
        if snapshot is None:
            return Response(_NOT_FOUND, status=status.HTTP_404_NOT_FOUND)
        return Response(selectors.topology_document(snapshot=snapshot))


class ImportTopologyView(APIView):
    renderer_classes = _RENDERERS
    write_permissions = ("topology.add_topologysnapshot",)

    @extend_schema(
        summary="Import a user-defined NetworkTopology (JSON or YAML; a full document or its spec)",
        request={"application/json": OpenApiTypes.OBJECT, "application/yaml": OpenApiTypes.OBJECT},
        responses={201: NetworkTopologySerializer},
    )
    def post(self, request: Request) -> Response:
        snapshot = services.import_topology(document=request.data)  # a TopologyDocumentError is a 400
        return Response(selectors.topology_document(snapshot=snapshot), status=status.HTTP_201_CREATED)


class ImportTopologySlashView(ImportTopologyView):
    """``/api/topology/import/``: same endpoint (APPEND_SLASH is off, so no redirect); kept out of the schema."""

    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        return super().post(request)


class SnapshotListView(generics.ListAPIView):
    serializer_class = TopologySnapshotSerializer
    filterset_class = TopologySnapshotFilterSet

    def get_queryset(self) -> QuerySet[TopologySnapshot]:
        return selectors.snapshots()


class SnapshotDetailView(APIView):
    renderer_classes = _RENDERERS

    @extend_schema(summary="One stored NetworkTopology version",
                   responses={200: NetworkTopologySerializer, 404: ErrorSerializer})
    def get(self, request: Request, version: int) -> Response:
        snapshot = selectors.snapshot_of_version(version=version)
        if snapshot is None:
            return Response({"detail": f"No topology snapshot with version {version} (older versions are "
                                       f"pruned)."}, status=status.HTTP_404_NOT_FOUND)
        return Response(selectors.topology_document(snapshot=snapshot))


class NodeListView(generics.ListAPIView):
    """All cached nodes as a plain list (the probe agent discovers its peers here)."""

    serializer_class = NodeSerializer
    filterset_class = NodeFilterSet
    pagination_class = None

    def get_queryset(self) -> QuerySet[Node]:
        return selectors.nodes()
