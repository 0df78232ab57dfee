from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from . import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/", include("apps.topology.api.urls")),
    path("api/", include("apps.appgroups.api.urls")),
    path("api/", include("apps.scheduler.api.urls")),
    path("api/", include("apps.probes.api.urls")),
    path("scheduler/", include("apps.scheduler.urls")),
    path("", include("apps.topology.urls")),
    path("", include("apps.appgroups.urls")),
    path("", include("apps.scheduler.dashboard_urls")),
]
