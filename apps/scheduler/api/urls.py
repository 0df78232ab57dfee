"""Scheduler API under /api/scheduler/."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("scheduler/profiles", views.SchedulerProfileViewSet, basename="scheduler-profile")
router.register("scheduler/decisions", views.DecisionViewSet, basename="scheduler-decision")

urlpatterns = [
    path("scheduler/diagnose", views.DiagnoseView.as_view(), name="scheduler-diagnose"),
    path("scheduler/diagnose/", views.DiagnoseView.as_view(), name="scheduler-diagnose-slash"),
    *router.urls,
]
