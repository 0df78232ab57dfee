from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.dashboard.views.apidocs import RedocView, redoc_bundle

from . import health, scrape

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", scrape.metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    # ReDoc with no request to another origin (no web fonts, the bundle's CDN logo replaced).
    path("api/redoc/", RedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/redoc/redoc.standalone.js", redoc_bundle, name="api-redoc-bundle"),
    path("api/", include("apps.topology.api.urls")),
    path("api/", include("apps.appgroups.api.urls")),
    path("api/", include("apps.scheduler.api.urls")),
    path("api/", include("apps.probes.api.urls")),
    path("api/", include("apps.traffic.api.urls")),
    path("", include("apps.dashboard.urls")),
]

handler403 = "apps.dashboard.views.account.permission_denied"
