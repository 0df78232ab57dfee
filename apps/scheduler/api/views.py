"""Scheduler API: profiles (CRUD), decisions (read), diagnose, AppGroup drift (read)."""

from __future__ import annotations

from typing import cast

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.throttling import BaseThrottle, ScopedRateThrottle
from rest_framework.views import APIView

from apps.appgroups.models import AppGroup
from apps.topology.api.serializers import ErrorSerializer
from netaware_core.fielderrors import FieldError, error_body

from .. import selectors, services
from ..diagnose import DiagnoseError, diagnose_pod, parse_diagnose_query
from ..filtersets import DecisionFilterSet
from ..models import Decision, SchedulerProfile
from .serializers import (
    DecisionDetailSerializer,
    DecisionSerializer,
    DriftSerializer,
    SchedulerProfileSerializer,
)


class SchedulerProfileViewSet(viewsets.ModelViewSet):
    queryset = SchedulerProfile.objects.all()
    serializer_class = SchedulerProfileSerializer
    lookup_field = "name"

    def perform_create(self, serializer: BaseSerializer[SchedulerProfile]) -> None:
        serializer.instance = services.save_profile(profile=SchedulerProfile(**serializer.validated_data))

    def perform_update(self, serializer: BaseSerializer[SchedulerProfile]) -> None:
        profile = cast(SchedulerProfile, serializer.instance)  # an update has its instance
        for key, value in serializer.validated_data.items():
            setattr(profile, key, value)
        serializer.instance = services.save_profile(profile=profile)

    def perform_destroy(self, instance: SchedulerProfile) -> None:
        services.delete_profile(profile=instance)


class DecisionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    filterset_class = DecisionFilterSet

    def get_queryset(self) -> QuerySet[Decision]:
        # Reads only read: decisions reach Postgres in batches from the Celery drain task
        # (services.drain_decisions, every 5 s), so the newest few seconds may not be listed yet.
        qs = Decision.objects.all().order_by("-id")
        if self.action == "list":
            qs = qs.defer("breakdown")
        return qs

    def get_serializer_class(self) -> type[DecisionSerializer]:
        return DecisionDetailSerializer if self.action == "retrieve" else DecisionSerializer


class DiagnoseView(APIView):
    """GET /api/scheduler/diagnose?pod=ns/name[&labels=k=v,...][&profile=name]"""

    # Reads a pod from the Kubernetes API when it is not in the pod cache.
    read_permissions = ("accounts.diagnose_pod",)

    @extend_schema(
        parameters=[
            OpenApiParameter("pod", str, required=True,
                             description="namespace/name of the pod (pod cache, else the Kubernetes API)"),
            OpenApiParameter("labels", str, description="k=v,k2=v2: the pod's labels (overrides, or for an unknown pod)"),
            OpenApiParameter("profile", str, description="explain under this profile instead of the pod's"),
        ],
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT,
                   503: OpenApiTypes.OBJECT},
        description="Why would every node score 0 or neutral for this pod?",
    )
    def get(self, request: Request) -> Response:
        if not request.query_params.get("pod"):  # the dashboard's page also takes labels alone; the API names the pod
            raise FieldError(errors={"pod": ["required: namespace/name of the pod (labels= only overrides its labels)"]})
        try:
            report = diagnose_pod(parse_diagnose_query(request.query_params))
        except DiagnoseError as exc:
            if exc.status == status.HTTP_400_BAD_REQUEST:
                raise  # the API's one 400 shape (netaware_core/api_errors.py)
            return Response(error_body(exc.errors), status=exc.status)  # 404/503 in the same shape
        return Response(report, status=status.HTTP_200_OK)


_FRESH = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


class AppGroupDriftView(APIView):
    """GET /api/appgroups/{id}/drift[?fresh=true]"""

    throttle_scope = "drift-fresh"

    def get_throttles(self) -> list[BaseThrottle]:
        """Only ``?fresh=true`` plans in the request, so only it is rate-limited (the stored report is a row read)."""
        fresh = _FRESH.get(self.request.query_params.get("fresh", "false").strip().lower(), False)
        return [ScopedRateThrottle()] if fresh else []

    @extend_schema(
        tags=["appgroups"],
        summary="Drift: this AppGroup's placement now vs the best found now, and the moves that close the gap",
        parameters=[OpenApiParameter("fresh", bool, description="compute now (a plan: up to about a second) instead "
                                     "of the stored assessment of the periodic task (every 60 s); at most "
                                     "NETAWARE_DRIFT_FRESH_PER_MINUTE (default 12) a minute per user, then 429")],
        responses={200: DriftSerializer,
                   400: OpenApiResponse(ErrorSerializer, description="a bad query value"),
                   404: OpenApiResponse(ErrorSerializer, description="no such AppGroup, or not assessed yet")},
    )
    def get(self, request: Request, pk: int) -> Response:
        raw = request.query_params.get("fresh", "false").strip().lower()
        if raw not in _FRESH:
            return Response(error_body({"fresh": ["must be true or false"]}), status=status.HTTP_400_BAD_REQUEST)
        appgroup = AppGroup.objects.filter(pk=pk).first()
        if appgroup is None:
            return Response({"detail": f"No AppGroup with id {pk}."}, status=status.HTTP_404_NOT_FOUND)
        assessment = selectors.fresh_drift(appgroup=appgroup) if _FRESH[raw] else selectors.latest_drift(appgroup=appgroup)
        if assessment is None:
            return Response({"detail": f"AppGroup {appgroup.namespace}/{appgroup.name} has no drift assessment yet: the "
                                       "task scheduler.assess_drift stores one every 60 s once its pods are placed "
                                       "(?fresh=true computes it now)."}, status=status.HTTP_404_NOT_FOUND)
        return Response(DriftSerializer(assessment).data)
