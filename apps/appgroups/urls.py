"""AppGroup dashboard pages (mounted under ""). APPEND_SLASH is off, so each page answers with and
without a trailing slash."""

from django.urls import re_path

from . import views

urlpatterns = [
    re_path(r"^appgroups/?$", views.appgroup_list, name="dashboard-appgroups"),
    re_path(r"^appgroups/new/?$", views.appgroup_new, name="dashboard-appgroup-new"),
    re_path(r"^appgroups/(?P<pk>\d+)/?$", views.appgroup_detail, name="dashboard-appgroup-detail"),
    re_path(r"^appgroups/(?P<pk>\d+)/edit/?$", views.appgroup_edit, name="dashboard-appgroup-edit"),
    re_path(r"^appgroups/(?P<pk>\d+)/yaml/?$", views.appgroup_yaml, name="dashboard-appgroup-yaml"),
    re_path(r"^appgroups/(?P<pk>\d+)/delete/?$", views.appgroup_delete, name="dashboard-appgroup-delete"),
]
