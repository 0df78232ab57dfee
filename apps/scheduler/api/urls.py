"""Scheduler API under /api/scheduler/, and each AppGroup's drift under /api/appgroups/{id}/drift."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("scheduler/profiles", views.SchedulerProfileViewSet, basename="scheduler-profile")
router.register("scheduler/decisions", views.DecisionViewSet, basename="scheduler-decision")

urlpatterns = [
    # Both spellings answer (APPEND_SLASH is off: never redirect); only one is in the OpenAPI schema.
    path("scheduler/diagnose", views.DiagnoseView.as_view(), name="scheduler-diagnose"),
    path("scheduler/diagnose/", views.DiagnoseView.as_view(schema=None), name="scheduler-diagnose-slash"),
    path("appgroups/<int:pk>/drift", views.AppGroupDriftView.as_view(), name="appgroup-drift"),
    path("appgroups/<int:pk>/drift/", views.AppGroupDriftView.as_view(schema=None), name="appgroup-drift-slash"),
    *router.urls,
]
