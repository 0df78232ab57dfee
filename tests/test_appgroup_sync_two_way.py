"""AppGroups converge between netaware and the cluster in both directions, under the conflict rule.

Real sync code, the real ``kubernetes`` client, real Postgres; only the API server is faked
(apps/demo/kubeapi.py).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from apps.appgroups import documents, selectors, services, sync
from apps.appgroups.choices import Origin, PlacementSource
from apps.appgroups.models import AppGroup
from netaware_core import kube

pytestmark = pytest.mark.django_db

G, V, P = "netaware.io", "v1alpha1", "appgroups"
BOUTIQUE = Path(settings.BASE_DIR) / "scenarios" / "online-boutique-appgroup.yaml"


def _boutique_doc() -> dict:
    return yaml.safe_load(BOUTIQUE.read_text())


def _cr(fake, name="online-boutique", ns="default"):
    return fake.get(G, V, P, name, ns)


def _small(name: str, ns: str = "shop", *, weight: float = 1.0) -> dict:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "AppGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "topologySortingAlgorithm": "KahnSort",
            "workloads": [
                {
                    "name": "web",
                    "selector": {"matchLabels": {"app": "web"}},
                    "weight": weight,
                    "dependencies": [
                        {"name": "db", "metrics": {"latency": 0.5, "bandwidth": 0.4, "lossrate": 0.1}}
                    ],
                },
                {"name": "db", "selector": {"matchLabels": {"app": "db"}}, "weight": 0.5},
            ],
        },
    }


def _writes(fake) -> int:
    return (
        fake.count("POST", "/appgroups") + fake.count("PUT", "/appgroups") + fake.count("PATCH", "/appgroups")
    )


def test_boutique_created_in_netaware_is_applied_to_the_cluster_once(fake_kube):
    appgroup = services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    report = sync.sync_once()
    assert report.ok and report.created == ["default/online-boutique"]

    cr = _cr(fake_kube)
    spec = selectors.appgroup_spec(appgroup=appgroup)
    assert cr["spec"] == documents.spec_document(spec)
    assert cr["metadata"]["labels"][sync.MANAGED_BY_LABEL] == "netaware"
    assert cr["metadata"]["annotations"][sync.SYNCED_HASH_ANNOTATION] == documents.spec_hash(spec)
    order = [entry["workload"] for entry in cr["status"]["topologyOrder"]]
    assert order == selectors.topology_order(appgroup=appgroup) and len(order) == 11
    appgroup.refresh_from_db()
    assert appgroup.resource_version == cr["metadata"]["resourceVersion"] and appgroup.last_synced_at

    writes = _writes(fake_kube)
    again = sync.sync_once()
    assert again.ok and not (again.created or again.updated or again.imported or again.status_written)
    assert _writes(fake_kube) == writes  # level-triggered and idempotent: nothing to do, nothing written


def test_appgroup_created_with_kubectl_is_imported(fake_kube):
    kube.custom_objects().create_namespaced_custom_object(G, V, "shop", P, _small("store"))
    report = sync.sync_once()
    assert report.imported == ["shop/store"]
    appgroup = AppGroup.objects.get(namespace="shop", name="store")
    assert appgroup.origin == Origin.CLUSTER
    assert [w.name for w in appgroup.workloads.order_by("position")] == ["web", "db"]
    cr = _cr(fake_kube, "store", "shop")
    assert sync.MANAGED_BY_LABEL not in (cr["metadata"].get("labels") or {})  # not ours to delete
    assert cr["metadata"]["annotations"][sync.SYNCED_HASH_ANNOTATION] == documents.spec_hash(
        selectors.appgroup_spec(appgroup=appgroup)
    )
    assert sync.sync_once().imported == []


def test_edits_flow_both_ways(fake_kube):
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    sync.sync_once()
    generation = _cr(fake_kube)["metadata"]["generation"]

    # netaware edit -> cluster
    appgroup = _edit_boutique_in_netaware("frontend", 0.25)
    report = sync.sync_once()
    assert report.updated == ["default/online-boutique"] and not report.conflicts
    cr = _cr(fake_kube)
    assert _weight(cr, "frontend") == 0.25 and cr["metadata"]["generation"] == generation + 1
    assert cr["status"]["observedGeneration"] == cr["metadata"]["generation"]

    # kubectl edit -> netaware
    _edit_boutique_with_kubectl("cart", 0.125)
    report = sync.sync_once()
    assert report.imported == ["default/online-boutique"] and not report.conflicts
    appgroup.refresh_from_db()
    assert appgroup.workloads.get(name="cart").weight == 0.125
    assert appgroup.workloads.get(name="frontend").weight == 0.25
    assert appgroup.origin == Origin.CLUSTER and appgroup.sync_error == ""


def test_both_sides_edited_the_cluster_wins_and_the_loss_is_recorded(fake_kube):
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    sync.sync_once()
    appgroup = _edit_boutique_in_netaware("ad", 0.75)
    _edit_boutique_with_kubectl("ad", 0.5)

    report = sync.sync_once()
    assert report.conflicts == ["default/online-boutique"]
    appgroup.refresh_from_db()
    assert appgroup.workloads.get(name="ad").weight == 0.5
    assert appgroup.sync_error.startswith(sync.CONFLICT_PREFIX) and '"weight": 0.75' in appgroup.sync_error
    assert _weight(_cr(fake_kube), "ad") == 0.5
    assert [e["reason"] for e in fake_kube.events("default", "online-boutique")] == ["SyncConflict"]
    assert sync.sync_once().conflicts == []  # settled


def test_conflict_injected_during_apply_is_retried_and_converges(fake_kube):
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    sync.sync_once()
    _edit_boutique_in_netaware("email", 0.3)
    puts_before = fake_kube.count("PUT", r"/appgroups/online-boutique$")
    fake_kube.fail(409, method="PUT", path=r"/appgroups/online-boutique$", times=2, reason="Conflict")
    report = sync.sync_once()
    assert report.ok and report.updated == ["default/online-boutique"]
    assert fake_kube.count("PUT", r"/appgroups/online-boutique$") - puts_before == 3
    assert _weight(_cr(fake_kube), "email") == 0.3


def test_placements_counts_and_order_appear_in_status_only_when_changed(fake_kube):
    appgroup = services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    sync.sync_once()
    for pod, app, node in (
        ("frontend-1", "frontend", "n1"),
        ("cart-1", "cartservice", "n2"),  # upstream manifests label cart pods app=cartservice
        ("cart-2", "cartservice", "n3"),
    ):
        services.record_placement(
            pod_namespace="default",
            pod_name=pod,
            pod_uid="",
            node_name=node,
            labels={"app": app},
            source=PlacementSource.EXTENDER,
        )
    report = sync.sync_once()
    assert report.status_written == ["default/online-boutique"]
    status = _cr(fake_kube)["status"]
    assert status["placements"]["frontend"] == [{"pod": "frontend-1", "node": "n1"}]
    assert status["placements"]["cart"] == [{"pod": "cart-1", "node": "n2"}, {"pod": "cart-2", "node": "n3"}]
    assert status["runningWorkloads"] == 3
    assert [e["workload"] for e in status["topologyOrder"]] == selectors.topology_order(appgroup=appgroup)

    status_writes = fake_kube.count("PUT", r"/status$")
    assert sync.sync_once().status_written == []
    assert fake_kube.count("PUT", r"/status$") == status_writes


def test_invalid_resource_gets_an_event_and_is_skipped_while_valid_ones_sync(fake_kube):
    bad = _small("broken")
    bad["spec"]["workloads"][0]["dependencies"][0]["name"] = "nowhere"  # unknown dependency target
    api = kube.custom_objects()
    api.create_namespaced_custom_object(G, V, "shop", P, bad)
    api.create_namespaced_custom_object(G, V, "shop", P, _small("good"))
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)

    report = sync.sync_once()
    assert report.invalid == ["shop/broken"] and report.ok
    assert "shop/good" in report.imported and "default/online-boutique" in report.created
    assert not AppGroup.objects.filter(name="broken").exists()
    events = fake_kube.events("shop", "broken")
    assert [e["reason"] for e in events] == ["InvalidAppGroup"] and "nowhere" in events[0]["message"]
    assert events[0]["involvedObject"]["kind"] == "AppGroup" and events[0]["type"] == "Warning"
    issues = sync.current_issues()
    assert [(i["namespace"], i["name"]) for i in issues] == [("shop", "broken")] and "nowhere" in issues[0][
        "message"
    ]
    # never rewritten nor deleted (the API server only added the CRD's topologyMode default)
    assert _cr(fake_kube, "broken", "shop")["spec"] == {"topologyMode": "soft", **bad["spec"]}

    # reported once per version, not on every pass
    sync.sync_once()
    assert len(fake_kube.events("shop", "broken")) == 1

    # fixing it with kubectl imports it and clears the issue
    live = api.get_namespaced_custom_object(G, V, "shop", P, "broken")
    live["spec"]["workloads"][0]["dependencies"][0]["name"] = "db"
    api.replace_namespaced_custom_object(G, V, "shop", P, "broken", live)
    assert sync.sync_once().imported == ["shop/broken"]
    assert sync.current_issues() == []


def test_invalid_edit_of_an_imported_group_keeps_the_last_good_version(fake_kube):
    api = kube.custom_objects()
    api.create_namespaced_custom_object(G, V, "shop", P, _small("store"))
    sync.sync_once()
    live = api.get_namespaced_custom_object(G, V, "shop", P, "store")
    live["spec"]["workloads"][1]["name"] = "web"  # duplicate workload name
    api.replace_namespaced_custom_object(G, V, "shop", P, "store", live)
    report = sync.sync_once()
    assert report.invalid == ["shop/store"]
    appgroup = AppGroup.objects.get(name="store")
    assert [w.name for w in appgroup.workloads.order_by("position")] == ["web", "db"]
    assert appgroup.sync_error.startswith("invalid: ")


def test_api_server_down_retries_and_converges_without_losing_anything(fake_kube):
    kube.custom_objects().create_namespaced_custom_object(G, V, "shop", P, _small("store"))
    sync.sync_once()
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)

    fake_kube.down()
    report = sync.sync_once()
    assert not report.ok and report.errors[0].startswith("list: ")
    assert set(AppGroup.objects.values_list("name", flat=True)) == {"store", "online-boutique"}

    fake_kube.up()
    fake_kube.fail(503, path=r"/appgroups", times=2)  # still flaky when it comes back
    report = sync.sync_once()
    assert report.ok and report.created == ["default/online-boutique"]
    assert _cr(fake_kube, "store", "shop") is not None and _cr(fake_kube) is not None
    assert set(AppGroup.objects.values_list("name", flat=True)) == {"store", "online-boutique"}


def test_slow_api_server_times_out_and_is_retried(fake_kube, monkeypatch):
    monkeypatch.setattr(kube, "REQUEST_TIMEOUT", (1.0, 0.3))  # a short read timeout keeps the test quick
    kube.custom_objects().create_namespaced_custom_object(G, V, "shop", P, _small("store"))
    fake_kube.slow(1.0, method="GET", path=r"^/apis/netaware\.io/v1alpha1/appgroups$", times=2)
    report = sync.sync_once()
    assert report.ok and report.imported == ["shop/store"]
    assert fake_kube.count("GET", r"^/apis/netaware\.io/v1alpha1/appgroups$") == 3  # two timed out


def test_failed_write_is_left_pending_and_reapplied_on_the_next_pass(fake_kube):
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    fake_kube.fail(500, method="POST", path=r"/appgroups$", times=10)
    report = sync.sync_once()
    assert not report.ok and _cr(fake_kube) is None
    assert AppGroup.objects.get(name="online-boutique").sync_error.startswith("pending: ")
    fake_kube.clear_faults()
    assert sync.sync_once().created == ["default/online-boutique"]
    assert AppGroup.objects.get(name="online-boutique").sync_error == ""


def test_deletions_follow_ownership(fake_kube):
    api = kube.custom_objects()
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    api.create_namespaced_custom_object(G, V, "shop", P, _small("store"))
    sync.sync_once()

    # deleted in netaware -> its managed CR is deleted
    services.delete_appgroup(appgroup=AppGroup.objects.get(name="online-boutique"))
    assert sync.sync_once().deleted_in_cluster == ["default/online-boutique"]
    assert _cr(fake_kube) is None

    # a cluster-authored CR deleted with kubectl -> removed from netaware
    api.delete_namespaced_custom_object(G, V, "shop", P, "store")
    assert sync.sync_once().deleted_in_netaware == ["shop/store"]
    assert not AppGroup.objects.filter(name="store").exists()

    # a netaware-authored CR deleted with kubectl -> netaware is its source: re-created
    services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    sync.sync_once()
    api.delete_namespaced_custom_object(G, V, "default", P, "online-boutique")
    assert sync.sync_once().created == ["default/online-boutique"]

    # a cluster-authored CR deleted in netaware while unmanaged: the cluster keeps it and re-imports
    api.create_namespaced_custom_object(G, V, "shop", P, _small("kept"))
    sync.sync_once()
    services.delete_appgroup(appgroup=AppGroup.objects.get(name="kept"))
    assert sync.sync_once().imported == ["shop/kept"]
    assert _cr(fake_kube, "kept", "shop") is not None


def test_diktyo_appgroups_are_imported_read_only(fake_kube):
    spec = documents.spec_from_document(_small("legacy"))
    diktyo = documents.document_from_spec(spec, flavor="diktyo")
    api = kube.custom_objects()
    api.create_namespaced_custom_object(documents.DIKTYO_APPGROUP_GROUP, "v1alpha1", "shop", P, diktyo)
    report = sync.sync_once()
    assert report.imported == ["shop/legacy"]
    appgroup = AppGroup.objects.get(name="legacy")
    assert appgroup.origin == Origin.CLUSTER and appgroup.resource_version.startswith(sync.DIKTYO_RV_PREFIX)
    assert _cr(fake_kube, "legacy", "shop") is None  # not mirrored into our CR
    writes = _writes(fake_kube)
    assert sync.sync_once().imported == [] and _writes(fake_kube) == writes

    api.delete_namespaced_custom_object(documents.DIKTYO_APPGROUP_GROUP, "v1alpha1", "shop", P, "legacy")
    assert sync.sync_once().deleted_in_netaware == ["shop/legacy"]


def _with_weight(doc: dict, workload: str, weight: float) -> dict:
    doc = copy.deepcopy(doc)
    for entry in doc["spec"]["workloads"]:
        if entry["name"] == workload:
            entry["weight"] = weight
    return doc


def _weight(cr: dict, workload: str) -> float:
    return next(w["weight"] for w in cr["spec"]["workloads"] if w["name"] == workload)


def _edit_boutique_in_netaware(workload: str, weight: float) -> AppGroup:
    """Change one workload's weight of the synced boutique through netaware's service."""
    appgroup = AppGroup.objects.get(name="online-boutique")
    spec = selectors.appgroup_spec(appgroup=appgroup)
    edited = documents.spec_from_document(_with_weight(documents.document_from_spec(spec), workload, weight))
    services.save_appgroup(spec=edited, origin=Origin.NETAWARE, appgroup=appgroup)
    return appgroup


def _edit_boutique_with_kubectl(workload: str, weight: float) -> None:
    """Change one workload's weight of the boutique CR directly in the cluster, as kubectl would."""
    live = kube.custom_objects().get_namespaced_custom_object(G, V, "default", P, "online-boutique")
    kube.custom_objects().replace_namespaced_custom_object(
        G, V, "default", P, "online-boutique", _with_weight(live, workload, weight)
    )
