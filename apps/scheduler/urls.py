"""Extender verbs, with and without a trailing slash (APPEND_SLASH is off: never a redirect)."""

from django.urls import path

from . import views

urlpatterns = []
for _verb, _view in (
    ("filter", views.filter_view),
    ("prioritize", views.prioritize_view),
    ("bind", views.bind_view),
    ("preempt", views.preempt_view),
):
    urlpatterns += [
        path(_verb, _view, name=f"extender-{_verb}"),
        path(f"{_verb}/", _view, name=f"extender-{_verb}-slash"),
    ]
