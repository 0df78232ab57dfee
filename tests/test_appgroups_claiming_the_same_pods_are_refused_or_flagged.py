"""Two AppGroups of a namespace whose selectors can claim the same pod: refused when written through
the API or the dashboard (with a field error naming the other AppGroup and an example pod),
accepted but flagged when they come from the cluster, and named by the diagnosis."""

from __future__ import annotations

import copy

import pytest

from apps.appgroups import services
from apps.appgroups.choices import Origin
from apps.appgroups.graph import LabelSelector
from apps.appgroups.overlap import common_pod
from tests.support.dashboard_seed import boutique_document

E = LabelSelector


@pytest.mark.parametrize(("a", "b", "overlap"), [
    (E({"app": "web"}), E({"app": "web", "tier": "x"}), True),
    (E({"app": "web"}), E({"app": "db"}), False),
    (E({}, (("app", "In", ("web", "api")),)), E({}, (("app", "NotIn", ("web",)),)), True),
    (E({}, (("app", "In", ("web",)),)), E({}, (("app", "NotIn", ("web",)),)), False),
    (E({"app": "web"}), E({}, (("app", "DoesNotExist", ()),)), False),
    (E({}, (("team", "Exists", ()),)), E({}, (("team", "NotIn", ("a", "b")),)), True),
    (E({"app": "web", "netaware.io/appgroup": "one"}), E({"app": "web"}), False),  # pinned pods are unambiguous
    (E({}), E({"app": "web"}), False),  # an empty selector matches nothing
])
def test_common_pod_decides_by_satisfiability(a, b, overlap):
    example = common_pod(a, b)
    assert (example is not None) == overlap
    if example is not None:
        assert a.matches(example) and b.matches(example)


def other_group(name: str, selector: dict) -> dict:
    return {"apiVersion": "netaware.io/v1alpha1", "kind": "AppGroup", "metadata": {"namespace": "default", "name": name},
            "spec": {"workloads": [{"name": "front", "selector": selector}]}}


@pytest.mark.django_db
def test_api_and_dashboard_refuse_an_overlapping_appgroup(client):
    assert client.post("/api/appgroups/import", boutique_document(), content_type="application/json").status_code == 201
    overlapping = other_group("shop-copy", {"matchLabels": {"app": "frontend"}})
    response = client.post("/api/appgroups/import", overlapping, content_type="application/json")
    assert response.status_code == 400
    message = str(response.json())
    assert "default/online-boutique" in message and "app=frontend" in message and "selector" in message
    answer = client.post("/dashboard/data/appgroups/validate", {"document": overlapping}, content_type="application/json").json()
    assert "overlaps workload 'frontend' of AppGroup default/online-boutique" in " ".join(answer["errors"]["spec.workloads[0].selector"])
    # Selecting on the pin label makes them disjoint; another namespace never overlaps.
    pinned = other_group("shop-copy", {"matchLabels": {"app": "frontend", "netaware.io/appgroup": "shop-copy"}})
    assert client.post("/api/appgroups/import", pinned, content_type="application/json").status_code == 201
    elsewhere = copy.deepcopy(overlapping)
    elsewhere["metadata"]["namespace"] = "staging"
    assert client.post("/api/appgroups/import", elsewhere, content_type="application/json").status_code == 201


@pytest.mark.django_db
def test_cluster_appgroups_that_overlap_are_kept_and_flagged(client):
    services.import_document(document=boutique_document())
    spec = services.documents.spec_from_document(other_group("from-kubectl", {"matchLabels": {"app": "frontend"}}))
    group = services.save_appgroup(spec=spec, origin=Origin.CLUSTER, notify_cluster=False)  # the sync loop's path
    listing = client.get("/appgroups/").content.decode()
    assert "claims the same pods" in listing and "from-kubectl" in listing
    detail = client.get(f"/appgroups/{group.pk}").content.decode()
    assert "overlaps default/online-boutique workload frontend" in detail
    report = client.get("/diagnose/", {"labels": "app=frontend"})
    assert report.status_code == 200
    claims = [c.appgroup for c in report.context["claims"]]
    assert claims == ["default/from-kubectl", "default/online-boutique"]
    assert "Several AppGroups claim this pod" in report.content.decode()
