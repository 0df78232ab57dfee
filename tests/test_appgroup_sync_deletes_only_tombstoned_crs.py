"""The sync never deletes cluster data because netaware's database is empty or behind: a managed CR is
deleted only when a tombstone left by a deliberate deletion in netaware names it; otherwise it is
imported. Every deletion path (service, API, dashboard, admin, the admin's bulk delete — all through
``services.delete_appgroup``) leaves a tombstone, a
deletion made while the API server is down is applied when it returns, and tombstones expire.

Real sync code, real Postgres, the real ``kubernetes`` client; only the API server is faked.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.appgroups import documents, selectors, services, sync
from apps.appgroups.choices import Origin
from apps.appgroups.models import AppGroup, AppGroupTombstone
from netaware_core import kube
from tests.support.appgroup_docs import G, P, V, small_appgroup

pytestmark = pytest.mark.django_db


def _doc(name: str, ns: str = "shop", *, weight: float = 1.0) -> dict:
    return small_appgroup(name, ns, weight=weight, latency=0.5, bandwidth=0.4, lossrate=0.1)


def _cr(fake, name: str, ns: str = "shop") -> dict | None:
    return fake.get(G, V, P, name, ns)


def _deletes(fake) -> int:
    return fake.count("DELETE", "/appgroups/")


def _netaware_created(fake, names: list[str]) -> None:
    """Managed CRs as an earlier netaware wrote them (label + agreed-spec annotation)."""
    for name in names:
        services.import_document(document=_doc(name), origin=Origin.NETAWARE)
    report = sync.sync_once()
    assert sorted(report.created) == sorted(f"shop/{n}" for n in names)
    for name in names:
        assert _cr(fake, name)["metadata"]["labels"][sync.MANAGED_BY_LABEL] == "netaware"


def _wipe_database() -> None:
    """A fresh (or restored-from-nothing) database: no rows and no tombstones."""
    AppGroup.objects.all().delete()
    AppGroupTombstone.objects.all().delete()


def test_an_empty_database_pointed_at_a_live_cluster_imports_managed_crs_and_deletes_nothing(fake_kube):
    _netaware_created(fake_kube, ["cart", "checkout", "edited"])
    kube.custom_objects().create_namespaced_custom_object(G, V, "shop", P, _doc("by-kubectl"))
    live = kube.custom_objects().get_namespaced_custom_object(G, V, "shop", P, "edited")
    live["spec"]["workloads"][0]["weight"] = 0.25  # edited with kubectl since the last sync
    kube.custom_objects().replace_namespaced_custom_object(G, V, "shop", P, "edited", live)
    _wipe_database()
    deletes = _deletes(fake_kube)

    report = sync.sync_once()

    assert report.ok and report.deleted_in_cluster == [] and _deletes(fake_kube) == deletes
    assert sorted(report.imported) == ["shop/by-kubectl", "shop/cart", "shop/checkout", "shop/edited"]
    assert all(_cr(fake_kube, n) is not None for n in ("cart", "checkout", "edited", "by-kubectl"))
    rows = {a.name: a for a in AppGroup.objects.all()}
    assert set(rows) == {"cart", "checkout", "edited", "by-kubectl"}
    # netaware wrote cart/checkout and nobody changed them since: netaware is still their author.
    assert rows["cart"].origin == Origin.NETAWARE and rows["checkout"].origin == Origin.NETAWARE
    assert rows["edited"].origin == Origin.CLUSTER and rows["by-kubectl"].origin == Origin.CLUSTER
    assert rows["edited"].workloads.get(name="web").weight == 0.25
    cart = _cr(fake_kube, "cart")
    assert rows["cart"].resource_uid == cart["metadata"]["uid"]
    assert documents.spec_hash(selectors.appgroup_spec(appgroup=rows["cart"])) == documents.spec_hash(
        documents.spec_from_document(cart)
    )

    again = sync.sync_once()
    assert again.ok and not (again.imported or again.deleted_in_cluster or again.created or again.updated)

    # Adopted rows behave like any other: deleting one in netaware now deletes its CR.
    services.delete_appgroup(appgroup=rows["cart"])
    assert sync.sync_once().deleted_in_cluster == ["shop/cart"]
    assert _cr(fake_kube, "cart") is None and _cr(fake_kube, "checkout") is not None


def test_every_deletion_path_leaves_a_tombstone_and_the_sync_deletes_those_crs(
    fake_kube, client, admin_client
):
    names = ["by-service", "by-api", "by-dashboard", "by-admin", "by-bulk", "kept"]
    _netaware_created(fake_kube, names)
    rows = {a.name: a for a in AppGroup.objects.all()}

    services.delete_appgroup(appgroup=rows["by-service"])
    assert client.delete(f"/api/appgroups/{rows['by-api'].pk}").status_code == 204
    assert client.post(f"/appgroups/{rows['by-dashboard'].pk}/delete").status_code == 302
    response = admin_client.post(f"/admin/appgroups/appgroup/{rows['by-admin'].pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    response = admin_client.post("/admin/appgroups/appgroup/", {  # the admin's "delete selected" action
        "action": "delete_selected", "_selected_action": [rows["by-bulk"].pk], "post": "yes"})
    assert response.status_code == 302 and not AppGroup.objects.filter(name="by-bulk").exists()

    tombstones = {t.name: t for t in AppGroupTombstone.objects.all()}
    assert set(tombstones) == {"by-service", "by-api", "by-dashboard", "by-admin", "by-bulk"}
    stone = tombstones["by-api"]
    assert stone.namespace == "shop" and stone.resource_uid == _cr(fake_kube, "by-api")["metadata"]["uid"]
    assert stone.resource_version == rows["by-api"].resource_version and stone.deleted_at <= timezone.now()

    report = sync.sync_once()
    assert report.ok and sorted(report.deleted_in_cluster) == sorted(f"shop/{n}" for n in tombstones)
    assert [n for n in names if _cr(fake_kube, n) is not None] == ["kept"]
    assert not AppGroupTombstone.objects.exists()
    assert list(AppGroup.objects.values_list("name", flat=True)) == ["kept"]


def test_a_deletion_made_while_the_api_server_is_down_is_applied_when_it_returns(fake_kube):
    _netaware_created(fake_kube, ["cart", "checkout"])
    fake_kube.down()
    services.delete_appgroup(appgroup=AppGroup.objects.get(name="cart"))
    report = sync.sync_once()
    assert not report.ok and report.errors[0].startswith("list: ")
    assert sync.sync_appgroup(namespace="shop", name="cart").errors  # the one-key task fails too
    assert AppGroupTombstone.objects.filter(name="cart").exists()  # kept for the next pass

    fake_kube.up()
    fake_kube.fail(503, method="DELETE", path=r"/appgroups/cart$", times=1)  # still flaky
    report = sync.sync_once()
    assert report.ok and report.deleted_in_cluster == ["shop/cart"] and report.imported == []
    assert _cr(fake_kube, "cart") is None and _cr(fake_kube, "checkout") is not None
    assert not AppGroupTombstone.objects.exists()


def test_a_tombstone_does_not_delete_a_cr_edited_in_the_cluster_or_re_created_there(fake_kube):
    _netaware_created(fake_kube, ["edited", "recreated"])
    api = kube.custom_objects()
    for name in ("edited", "recreated"):
        services.delete_appgroup(appgroup=AppGroup.objects.get(name=name))
    live = api.get_namespaced_custom_object(G, V, "shop", P, "edited")
    live["spec"]["workloads"][0]["weight"] = 3.0
    api.replace_namespaced_custom_object(G, V, "shop", P, "edited", live)
    # Deleted and re-created with kubectl (same labels and annotation, e.g. re-applied from Git):
    # a different object than the one netaware deleted, so it is kept.
    old = api.get_namespaced_custom_object(G, V, "shop", P, "recreated")
    api.delete_namespaced_custom_object(G, V, "shop", P, "recreated")
    again = {
        **_doc("recreated"),
        "metadata": {
            "name": "recreated",
            "namespace": "shop",
            "labels": old["metadata"]["labels"],
            "annotations": old["metadata"]["annotations"],
        },
    }
    again["spec"] = old["spec"]
    api.create_namespaced_custom_object(G, V, "shop", P, again)

    report = sync.sync_once()
    assert report.deleted_in_cluster == [] and sorted(report.imported) == ["shop/edited", "shop/recreated"]
    assert AppGroup.objects.get(name="edited").workloads.get(name="web").weight == 3.0
    assert _cr(fake_kube, "recreated") is not None and not AppGroupTombstone.objects.exists()


def test_tombstones_expire_after_the_retention_period(fake_kube, settings):
    settings.NETAWARE = {**settings.NETAWARE, "APPGROUP_TOMBSTONE_RETENTION_DAYS": 7}
    _netaware_created(fake_kube, ["old", "recent"])
    fake_kube.down()
    for name in ("old", "recent"):
        services.delete_appgroup(appgroup=AppGroup.objects.get(name=name))
    AppGroupTombstone.objects.filter(name="old").update(deleted_at=timezone.now() - timedelta(days=8))
    fake_kube.up()

    report = sync.sync_once()
    assert report.tombstones_expired == 1
    assert report.deleted_in_cluster == ["shop/recent"] and report.imported == ["shop/old"]
    assert _cr(fake_kube, "old") is not None and AppGroup.objects.filter(name="old").exists()
    assert not AppGroupTombstone.objects.exists()


def test_renaming_in_netaware_deletes_the_old_cr_and_creates_the_new_one(fake_kube):
    _netaware_created(fake_kube, ["before"])
    appgroup = AppGroup.objects.get(name="before")
    services.save_appgroup(
        spec=documents.spec_from_document(_doc("after")), origin=Origin.NETAWARE, appgroup=appgroup
    )
    assert list(AppGroupTombstone.objects.values_list("name", flat=True)) == ["before"]
    report = sync.sync_once()
    assert report.deleted_in_cluster == ["shop/before"] and report.created == ["shop/after"]
    assert _cr(fake_kube, "before") is None and _cr(fake_kube, "after") is not None
    assert list(AppGroup.objects.values_list("name", flat=True)) == ["after"]


def test_a_row_created_again_under_a_tombstoned_name_supersedes_the_tombstone(fake_kube):
    _netaware_created(fake_kube, ["cart"])
    services.delete_appgroup(appgroup=AppGroup.objects.get(name="cart"))
    services.import_document(document=_doc("cart", weight=2.0), origin=Origin.NETAWARE)
    assert not AppGroupTombstone.objects.exists()
    report = sync.sync_once()
    assert report.deleted_in_cluster == [] and report.updated == ["shop/cart"]
    assert _cr(fake_kube, "cart")["spec"]["workloads"][0]["weight"] == 2.0
