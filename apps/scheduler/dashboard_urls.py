from django.urls import path

from . import dashboard_views

urlpatterns = [
    path("decisions/", dashboard_views.decisions_page, name="dashboard-decisions"),
    path("evaluation/", dashboard_views.evaluation_page, name="dashboard-evaluation"),
]
