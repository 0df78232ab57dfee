"""Observed-traffic API routes, mounted under "api/" (with and without a trailing slash)."""

from django.urls import re_path

from . import views

_NS = r"(?P<namespace>[-a-z0-9]+)"
_NAME = r"(?P<name>[-a-z0-9.]+)"

urlpatterns = [
    re_path(r"^traffic/sources/?$", views.SourcesView.as_view(), name="traffic-sources"),
    re_path(r"^traffic/modes/?$", views.ModesView.as_view(), name="traffic-modes"),
    re_path(r"^traffic/observed/?$", views.ObservedListView.as_view(), name="traffic-observed"),
    re_path(rf"^traffic/observed/{_NS}/{_NAME}/?$", views.ObservedGraphView.as_view(), name="traffic-observed-graph"),
    re_path(rf"^traffic/observed/{_NS}/{_NAME}/diff/?$", views.ObservedDiffView.as_view(), name="traffic-observed-diff"),
    re_path(rf"^traffic/observed/{_NS}/{_NAME}/adopt/?$", views.AdoptView.as_view(), name="traffic-observed-adopt"),
]
