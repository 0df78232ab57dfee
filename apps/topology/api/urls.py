from django.urls import path

from . import views

urlpatterns = [
    path("topology/", views.CurrentTopologyView.as_view(), name="topology-current"),
    path("topology/import", views.ImportTopologyView.as_view(), name="topology-import"),
    path("topology/import/", views.ImportTopologySlashView.as_view(), name="topology-import-slash"),
    path("topology/snapshots/", views.SnapshotListView.as_view(), name="topology-snapshot-list"),
    path("topology/snapshots/<int:version>/", views.SnapshotDetailView.as_view(), name="topology-snapshot-detail"),
    path("nodes/", views.NodeListView.as_view(), name="node-list"),
]
