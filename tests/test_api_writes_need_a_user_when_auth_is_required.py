"""With NETAWARE_REQUIRE_AUTH on (the production default) anyone may read, only users may write;
the extender verbs stay open to kube-scheduler."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db

DOC = {
    "apiVersion": "netaware.io/v1alpha1",
    "kind": "NetworkTopology",
    "metadata": {"name": "static"},
    "spec": {"latency": {"a": {"b": 1.0}}, "bandwidth": {"a": {"b": 100.0}}, "lossrate": {"a": {"b": 0.0}}},
}


@pytest.fixture
def auth_required(settings):
    settings.REQUIRE_AUTH = True


def test_anonymous_write_allowed_when_auth_not_required(client, settings):
    settings.REQUIRE_AUTH = False
    assert client.post("/api/topology/import", DOC, content_type="application/json").status_code == 201


def test_anonymous_write_is_refused_and_read_allowed(client, auth_required):
    assert client.post("/api/topology/import", DOC, content_type="application/json").status_code in (401, 403)
    assert client.get("/api/appgroups/").status_code == 200
    assert client.get("/api/nodes/").status_code == 200


def test_user_may_write(client, auth_required):
    user = get_user_model().objects.create_user("sre", password="pw")
    client.force_login(user)
    response = client.post("/api/topology/import", DOC, content_type="application/json")
    assert response.status_code == 201, response.content


def test_extender_stays_open(client, auth_required):
    response = client.post("/scheduler/filter", b"{}", content_type="application/json")
    assert response.status_code == 200


def test_dashboard_edits_need_a_user_reads_do_not(client, auth_required):
    assert client.get("/").status_code == 200
    assert client.get("/appgroups/").status_code == 200
    response = client.get("/appgroups/new")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    user = get_user_model().objects.create_user("sre2", password="pw")
    client.force_login(user)
    assert client.get("/appgroups/new").status_code == 200
