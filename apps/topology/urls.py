from django.urls import path

from netaware_site.dashboard import dashboard_css, dashboard_js, plotly_js

from . import views

urlpatterns = [
    path("", views.topology_page, name="dashboard-topology"),
    path("dashboard/plotly.min.js", plotly_js, name="plotly-js"),
    path("dashboard/dashboard.css", dashboard_css, name="dashboard-css"),
    path("dashboard/dashboard.js", dashboard_js, name="dashboard-js"),
]
