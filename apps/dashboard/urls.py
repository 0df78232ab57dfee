"""Dashboard pages (mounted under ""), their JSON data under /dashboard/data/, login and account.
APPEND_SLASH is off, so pages answer with and without a trailing slash."""

from django.urls import path, re_path

from .views import account, appgroups, decisions, evaluation, objects, placements, topology, traffic

_NODE = r"(?P<source>[A-Za-z0-9][-A-Za-z0-9_.]*)"
_PEER = r"(?P<target>[A-Za-z0-9][-A-Za-z0-9_.]*)"

urlpatterns = [
    re_path(r"^login/?$", account.LoginView.as_view(), name="login"),
    path("logout/", account.logout_view, name="logout"),
    re_path(r"^account/?$", account.account_page, name="account"),
    path("account/tokens/", account.token_create, name="account-token-create"),
    path("account/tokens/<int:pk>/revoke", account.token_revoke, name="account-token-revoke"),

    path("", topology.topology_page, name="dashboard-topology"),
    re_path(rf"^links/{_NODE}/{_PEER}/?$", topology.link_page, name="dashboard-link"),
    re_path(rf"^nodes/{_NODE.replace('source', 'name')}/?$", objects.node_page, name="dashboard-node"),
    re_path(r"^zones/(?P<name>[^/]+)/?$", objects.zone_page, name="dashboard-zone"),
    re_path(r"^search/?$", objects.search_page, name="dashboard-search"),
    re_path(r"^placements/?$", placements.placements_page, name="dashboard-placements"),
    re_path(r"^decisions/?$", decisions.decisions_page, name="dashboard-decisions"),
    re_path(r"^diagnose/?$", decisions.diagnose_page, name="dashboard-diagnose"),
    re_path(r"^evaluation/?$", evaluation.evaluation_page, name="dashboard-evaluation"),
    re_path(r"^evaluation/runs/(?P<pk>\d+)/?$", evaluation.evaluation_run_page, name="dashboard-evaluation-run"),
    path("dashboard/data/evaluation/runs/<int:pk>", evaluation.evaluation_run_data, name="dashboard-data-evaluation-run"),

    re_path(r"^appgroups/?$", appgroups.appgroup_list, name="dashboard-appgroups"),
    re_path(r"^appgroups/new/?$", appgroups.appgroup_new, name="dashboard-appgroup-new"),
    re_path(r"^appgroups/import/?$", appgroups.appgroup_import, name="dashboard-appgroup-import"),
    re_path(r"^appgroups/(?P<pk>\d+)/?$", appgroups.appgroup_detail, name="dashboard-appgroup-detail"),
    re_path(r"^appgroups/(?P<pk>\d+)/edit/?$", appgroups.appgroup_edit, name="dashboard-appgroup-edit"),
    re_path(r"^appgroups/(?P<pk>\d+)/history/?$", appgroups.appgroup_history, name="dashboard-appgroup-history"),
    re_path(r"^appgroups/(?P<pk>\d+)/yaml/?$", appgroups.appgroup_yaml, name="dashboard-appgroup-yaml"),
    re_path(r"^appgroups/(?P<pk>\d+)/delete/?$", appgroups.appgroup_delete, name="dashboard-appgroup-delete"),

    re_path(r"^traffic/?$", traffic.traffic_list, name="dashboard-traffic"),
    re_path(r"^traffic/(?P<namespace>[-a-z0-9]+)/(?P<name>[-a-z0-9.]+)/?$", traffic.traffic_detail,
            name="dashboard-traffic-detail"),
    re_path(r"^traffic/(?P<namespace>[-a-z0-9]+)/(?P<name>[-a-z0-9.]+)/adopt/?$", traffic.traffic_adopt,
            name="dashboard-traffic-adopt"),

    path("dashboard/data/heatmap", topology.heatmap_data, name="dashboard-data-heatmap"),
    path("dashboard/data/pairs", topology.worst_pairs_data, name="dashboard-data-pairs"),
    path("dashboard/data/zones", topology.zones_data, name="dashboard-data-zones"),
    re_path(rf"^dashboard/data/links/{_NODE}/{_PEER}$", topology.link_data, name="dashboard-data-link"),
    path("dashboard/data/placements", placements.placements_data, name="dashboard-data-placements"),
    path("dashboard/data/appgroups/validate", appgroups.appgroup_validate, name="dashboard-appgroup-validate"),
    path("dashboard/data/appgroups/save", appgroups.appgroup_save, name="dashboard-appgroup-save"),
    path("dashboard/data/selector-preview", appgroups.label_selector_preview, name="dashboard-selector-preview"),
]
