"""Extender verbs, with and without a trailing slash (APPEND_SLASH is off: never a redirect)."""

from django.urls import path

from . import extender_views

urlpatterns = []
for _verb, _view in (
    ("filter", extender_views.filter_view),
    ("prioritize", extender_views.prioritize_view),
    ("bind", extender_views.bind_view),
    ("preempt", extender_views.preempt_view),
):
    urlpatterns += [
        path(_verb, _view, name=f"extender-{_verb}"),
        path(f"{_verb}/", _view, name=f"extender-{_verb}-slash"),
    ]
