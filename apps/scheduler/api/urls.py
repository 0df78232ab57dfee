"""Scheduler API under /api/scheduler/."""

from django.urls import re_path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("scheduler/profiles", views.SchedulerProfileViewSet, basename="scheduler-profile")
router.register("scheduler/decisions", views.DecisionViewSet, basename="scheduler-decision")

urlpatterns = [
    # One route, optional trailing slash (APPEND_SLASH is off: never redirect, one OpenAPI operation).
    re_path(r"^scheduler/diagnose/?$", views.DiagnoseView.as_view(), name="scheduler-diagnose"),
    *router.urls,
]
