"""AppGroups and scheduler profiles keep a change history (django-simple-history): who changed what
and when, whichever writer saved; the AppGroup's history page shows each version's document diff,
and the admin's history views list the changes."""

from __future__ import annotations

import orjson
import pytest

from tests.support.dashboard_seed import boutique_document

pytestmark = pytest.mark.django_db


def save(client, document, pk=None):
    url = "/dashboard/data/appgroups/save" + (f"?pk={pk}" if pk else "")
    response = client.post(url, orjson.dumps({"document": document}), content_type="application/json")
    assert response.status_code in (200, 201), response.content
    return response.json()["id"]


def test_each_save_is_recorded_with_its_author_and_document_diff(client):
    document = boutique_document()
    pk = save(client, document)
    document["spec"]["workloads"][0]["weight"] = 0.25
    save(client, document, pk)
    from apps.appgroups.models import AppGroup

    records = list(AppGroup.objects.get(pk=pk).history.order_by("history_id"))
    assert [r.history_type for r in records] == ["+", "~"]
    assert all(r.history_user.username == "test-admin" for r in records)
    assert records[1].document["spec"]["workloads"][0]["weight"] == 0.25
    body = client.get(f"/appgroups/{pk}/history").content.decode()
    assert body.index("changed") < body.index("created")  # newest first
    assert "+      weight: 0.25" in body or "+    weight: 0.25" in body, body
    assert 'id="appgroup-history"' in client.get(f"/appgroups/{pk}").content.decode()


def test_a_save_through_the_api_is_recorded_too_and_the_admin_shows_history(client):
    response = client.post("/api/appgroups/import", orjson.dumps(boutique_document()), content_type="application/json")
    assert response.status_code in (200, 201), response.content
    from apps.appgroups.models import AppGroup

    group = AppGroup.objects.get()
    assert group.history.count() == 1
    admin = client.get(f"/admin/appgroups/appgroup/{group.pk}/history/")
    assert admin.status_code == 200 and "test-admin" in admin.content.decode()


def test_profile_changes_are_recorded(client):
    from apps.scheduler.models import SchedulerProfile

    profile = SchedulerProfile.objects.order_by("pk").first()
    profile.description = "changed for the history test"
    profile.save()
    assert profile.history.order_by("-history_id").first().description == "changed for the history test"
    admin = client.get(f"/admin/scheduler/schedulerprofile/{profile.pk}/history/")
    assert admin.status_code == 200 and "Changed" in admin.content.decode()


def test_unknown_appgroup_history_is_404(client):
    assert client.get("/appgroups/999999/history").status_code == 404
