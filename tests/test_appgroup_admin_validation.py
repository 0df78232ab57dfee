"""The admin edits AppGroups with inline workloads and dependencies, judged as one document by the
service every entry point uses: bad rows are form errors on the row and field, good pages are saved
through it (overlaps refused, new AppGroups created); workloads and dependencies alone are read-only."""

import html
import json

import pytest

from apps.appgroups import selectors
from apps.appgroups.models import AppGroup, AppGroupTombstone, Dependency, Workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def group():
    group = AppGroup.objects.create(namespace="default", name="shop")
    for position, name in enumerate(("web", "db")):
        Workload.objects.create(
            appgroup=group, name=name, position=position, selector={"matchLabels": {"app": name}}
        )
    return group


def change_form(group, dependencies):
    data = {
        "namespace": group.namespace,
        "name": group.name,
        "description": "",
        "topology_sorting_algorithm": group.topology_sorting_algorithm,
        "topology_mode": group.topology_mode,
        "rebalance_mode": group.rebalance_mode,
        "origin": group.origin,
    }
    workloads = list(group.workloads.order_by("position"))
    data.update(
        {
            "workloads-TOTAL_FORMS": len(workloads),
            "workloads-INITIAL_FORMS": len(workloads),
            "workloads-MIN_NUM_FORMS": 0,
            "workloads-MAX_NUM_FORMS": 1000,
        }
    )
    for i, w in enumerate(workloads):
        data.update(
            {
                f"workloads-{i}-id": w.pk,
                f"workloads-{i}-appgroup": group.pk,
                f"workloads-{i}-name": w.name,
                f"workloads-{i}-position": w.position,
                f"workloads-{i}-selector": json.dumps(w.selector),
                f"workloads-{i}-weight": w.weight,
                f"workloads-{i}-controller_kind": "",
                f"workloads-{i}-controller_name": "",
                f"workloads-{i}-replicas": "",
                f"workloads-{i}-cpu_request": "",
                f"workloads-{i}-memory_request": "",
            }
        )
    data.update(
        {
            "dependencies-TOTAL_FORMS": len(dependencies),
            "dependencies-INITIAL_FORMS": 0,
            "dependencies-MIN_NUM_FORMS": 0,
            "dependencies-MAX_NUM_FORMS": 1000,
        }
    )
    for i, dep in enumerate(dependencies):
        data.update(
            {
                f"dependencies-{i}-appgroup": group.pk,
                f"dependencies-{i}-position": i,
                f"dependencies-{i}-max_network_cost": "",
                f"dependencies-{i}-min_bandwidth": "",
            }
        )
        data.update({f"dependencies-{i}-{key}": value for key, value in dep.items()})
    return data


def post(admin_client, group, dependencies, **overrides):
    data = change_form(group, dependencies)
    data.update(overrides)
    return admin_client.post(f"/admin/appgroups/appgroup/{group.pk}/change/", data)


def ids(group):
    return {w.name: w.pk for w in group.workloads.all()}


def test_change_page_renders(admin_client, group):
    assert admin_client.get(f"/admin/appgroups/appgroup/{group.pk}/change/").status_code == 200
    assert admin_client.get("/admin/appgroups/placement/").status_code == 200
    assert admin_client.get(f"/admin/appgroups/workload/{ids(group)['web']}/change/").status_code == 200


def test_valid_dependency_is_saved(admin_client, group):
    w = ids(group)
    response = post(
        admin_client,
        group,
        [
            {
                "source": w["web"],
                "target": w["db"],
                "latency": 0.7,
                "bandwidth": 0.2,
                "lossrate": 0.1,
                "min_bandwidth": "100M",
            }
        ],
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    dep = Dependency.objects.get()
    assert (dep.source.name, dep.target.name, dep.min_bandwidth_bps) == ("web", "db", 1e8)


@pytest.mark.parametrize(
    "make,message",
    [
        (
            lambda w: {"source": w["web"], "target": w["web"], "latency": 1, "bandwidth": 0, "lossrate": 0},
            "cannot depend on itself",
        ),
        (
            lambda w: {"source": w["web"], "target": w["db"], "latency": 0, "bandwidth": 0, "lossrate": 0},
            "positive sum",
        ),
        (
            lambda w: {"source": w["web"], "target": w["db"], "latency": -1, "bandwidth": 1, "lossrate": 0},
            "greater than or equal to 0",
        ),
        (
            lambda w: {
                "source": w["web"],
                "target": w["db"],
                "latency": 1,
                "bandwidth": 0,
                "lossrate": 0,
                "min_bandwidth": "quick",
            },
            "not a Kubernetes quantity",
        ),
    ],
)
def test_bad_dependency_is_a_form_error(admin_client, group, make, message):
    response = post(admin_client, group, [make(ids(group))])
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Dependency.objects.count() == 0


def test_target_from_another_appgroup_is_refused(admin_client, group):
    other = AppGroup.objects.create(namespace="default", name="other")
    foreign = Workload.objects.create(appgroup=other, name="x", selector={"matchLabels": {"app": "x"}})
    response = post(
        admin_client,
        group,
        [{"source": ids(group)["web"], "target": foreign.pk, "latency": 1, "bandwidth": 0, "lossrate": 0}],
    )
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert Dependency.objects.count() == 0


def test_bad_workload_rows_are_form_errors(admin_client, group):
    response = post(
        admin_client, group, [], **{"workloads-0-selector": json.dumps({"matchLabels": {"app": "-bad"}})}
    )
    assert response.status_code == 200 and "should match" in response.content.decode()  # the CRD's label value pattern
    response = post(admin_client, group, [], **{"workloads-1-name": "web"})
    assert response.status_code == 200
    assert "duplicate workload name 'web' (also workloads[0])" in html.unescape(response.content.decode())
    response = post(admin_client, group, [], **{"workloads-1-weight": "-2"})
    assert response.status_code == 200 and "greater than or equal to 0" in response.content.decode()
    assert set(Workload.objects.values_list("name", flat=True)) == {"web", "db"}


def test_the_page_is_saved_through_the_service_with_its_rules(admin_client, group):
    """A rename leaves a tombstone for the old name (services.save_appgroup), and a selector that
    claims another AppGroup's pods is refused as the API refuses it."""
    w = ids(group)
    dependency = {"source": w["web"], "target": w["db"], "latency": 1, "bandwidth": 0, "lossrate": 0}
    response = post(admin_client, group, [dependency], name="shop-2")
    assert response.status_code == 302, response.content.decode()[:2000]
    group.refresh_from_db()
    assert group.name == "shop-2" and AppGroupTombstone.objects.filter(name="shop").exists()
    assert [d.target for w_ in selectors.appgroup_spec(appgroup=group).workloads for d in w_.dependencies] == ["db"]
    other = AppGroup.objects.create(namespace="default", name="other")
    Workload.objects.create(appgroup=other, name="x", selector={"matchLabels": {"app": "web"}})
    response = post(admin_client, group, [])
    assert response.status_code == 200
    assert "overlaps workload 'x' of AppGroup default/other" in html.unescape(response.content.decode())


def test_a_new_appgroup_is_created_through_the_service(admin_client):
    data = {"namespace": "default", "name": "fresh", "description": "made here", "topology_sorting_algorithm": "KahnSort",
            "topology_mode": "soft", "rebalance_mode": "off", "origin": "netaware",
            "workloads-TOTAL_FORMS": 1, "workloads-INITIAL_FORMS": 0, "workloads-MIN_NUM_FORMS": 0,
            "workloads-MAX_NUM_FORMS": 1000, "workloads-0-name": "web", "workloads-0-position": 0,
            "workloads-0-selector": json.dumps("app=web"), "workloads-0-weight": 1,
            "dependencies-TOTAL_FORMS": 0, "dependencies-INITIAL_FORMS": 0, "dependencies-MIN_NUM_FORMS": 0,
            "dependencies-MAX_NUM_FORMS": 1000}
    response = admin_client.post("/admin/appgroups/appgroup/add/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    fresh = AppGroup.objects.get(name="fresh")
    assert fresh.description == "made here" and fresh.spec_hash
    assert [(w.name, w.selector) for w in fresh.workloads.all()] == [("web", {"matchLabels": {"app": "web"}})]
    data["workloads-0-selector"] = json.dumps({})
    data["name"] = "empty"
    response = admin_client.post("/admin/appgroups/appgroup/add/", data)
    assert response.status_code == 200 and not AppGroup.objects.filter(name="empty").exists()


def test_workloads_and_dependencies_are_read_only_on_their_own_pages(admin_client, group):
    w = ids(group)
    db = Workload.objects.get(pk=w["db"])
    assert admin_client.get(f"/admin/appgroups/workload/{w['db']}/change/").status_code == 200
    data = {"appgroup": group.pk, "name": "db", "position": 1, "selector": json.dumps(db.selector), "weight": 1,
            "dependencies-TOTAL_FORMS": 1, "dependencies-INITIAL_FORMS": 0, "dependencies-MIN_NUM_FORMS": 0,
            "dependencies-MAX_NUM_FORMS": 1000, "dependencies-0-target": w["web"], "dependencies-0-latency": 1,
            "dependencies-0-bandwidth": 0, "dependencies-0-lossrate": 0, "dependencies-0-position": 0}
    assert admin_client.post(f"/admin/appgroups/workload/{w['db']}/change/", data).status_code == 403
    assert admin_client.get("/admin/appgroups/dependency/add/").status_code == 403
    assert Dependency.objects.count() == 0 and Workload.objects.get(pk=w["db"]).weight == db.weight
