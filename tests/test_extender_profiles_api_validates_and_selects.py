"""Scheduler profiles: seeded from the engine's built-ins, CRUD through /api/scheduler/profiles/
with 400 field errors, one default, and selected per pod by the netaware.io/profile annotation."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from apps.scheduler.models import Decision, SchedulerProfile
from apps.scheduler.scoring import engine
from tests.support.extender_wire import extender_args, k8s_pod, load_kep_fixture


def test_builtin_profiles_are_seeded_with_one_default(db):
    assert set(SchedulerProfile.objects.values_list("name", flat=True)) == set(engine.BUILTIN_PROFILES)
    assert list(SchedulerProfile.objects.filter(is_default=True).values_list("name", flat=True)) == [
        engine.DEFAULT_PROFILE
    ]


@pytest.mark.parametrize(
    ("payload", "field", "fragment"),
    [
        ({"scorers": [{"name": "telepathy", "weight": 1}]}, "scorers[0].name", "unknown scorer 'telepathy'"),
        ({"scorers": [{"name": "water-level", "weight": -1}]}, "scorers[0].weight", ">= 0"),
        ({"scorers": [{"name": "water-level", "weight": 1, "params": {"average_weight": "x"}}]},
         "scorers[0].params.average_weight",
         "average_weight"),
        ({"scorers": [{"name": "water-level", "weight": 1, "params": {"colour": 1}}]}, "scorers[0].params.colour",
         "unknown parameter"),
        ({"scorers": []}, "scorers", "at least one scorer"),
        ({"scorers": [{"name": "water-level"}], "filters": ["moat"]}, "filters[0]", "unknown filter 'moat'"),
        ({"scorers": [{"name": "water-level"}], "params": {"overload": {"cpu_threshold": 2}}}, "params.overload",
         "filter the profile does not use"),
        ({"scorers": [{"name": "water-level"}], "name": "Not A Slug"}, "name", ""),
    ],
)
def test_invalid_profiles_get_400_naming_the_field(client, payload, field, fragment):
    body = {"name": "mine", **payload}
    response = client.post("/api/scheduler/profiles/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert list(errors) == [field], errors
    assert fragment in " ".join(errors[field])


def test_create_update_default_and_delete(client):
    body = {
        "name": "latency-first",
        "description": "network with a little load",
        "scorers": [{"name": "network-score", "weight": 4, "params": {"same_node_score": 0.9}},
                    {"name": "water-level", "weight": 1}],
        "filters": ["overload"],
        "params": {"overload": {"cpu_threshold": 0.9}},
        "is_default": True,
    }
    created = client.post("/api/scheduler/profiles/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert SchedulerProfile.objects.get(is_default=True).name == "latency-first"  # the old default was unset
    assert client.post("/api/scheduler/profiles/", body, content_type="application/json").status_code == 400

    patched = client.patch("/api/scheduler/profiles/latency-first/", {"scorers": [{"name": "nope"}]},
                           content_type="application/json")
    assert patched.status_code == 400 and "scorers[0].name" in patched.json()["errors"]
    patched = client.patch("/api/scheduler/profiles/latency-first/", {"filters": []},
                           content_type="application/json")
    assert patched.status_code == 400 and "params.overload" in patched.json()["errors"]  # an unused filter's
    ok = client.patch("/api/scheduler/profiles/latency-first/", {"filters": [], "params": {}},
                      content_type="application/json")
    assert ok.status_code == 200 and ok.json()["filters"] == []
    assert client.delete("/api/scheduler/profiles/latency-first/").status_code == 204


def test_model_clean_refuses_a_second_default(db):
    profile = SchedulerProfile(name="second", is_default=True, scorers=[{"name": "water-level", "weight": 1}])
    with pytest.raises(ValidationError) as raised:
        profile.full_clean()
    assert "is_default" in raised.value.message_dict


def test_the_annotation_selects_an_edited_profile(client, start_extender):
    ext = start_extender()
    nodes = load_kep_fixture()
    body = {"name": "overhead-only", "scorers": [{"name": "network-overhead", "weight": 1}],
            "filters": ["network-overhead"]}
    assert client.post("/api/scheduler/profiles/", body, content_type="application/json").status_code == 201
    pod = k8s_pod("p1-prof", labels={"app": "p1"}, annotations={"netaware.io/profile": "overhead-only"})
    response = ext.post("/scheduler/filter", extender_args(pod, node_names=nodes))
    assert response.json()["NodeNames"] == ["n-5", "n-6"]
    ext.drain_decisions()
    assert Decision.objects.get(verb="filter").profile == "overhead-only"
    # Without the annotation the default profile ("network": no network-overhead filter) applies.
    plain = k8s_pod("p1-plain", labels={"app": "p1"})
    response = ext.post("/scheduler/filter", extender_args(plain, node_names=nodes))
    assert response.json()["NodeNames"] == nodes


def test_scheduler_endpoints_are_in_the_schema(client):
    paths = client.get("/api/schema/?format=json").json()["paths"]
    for path in ("/api/scheduler/profiles/", "/api/scheduler/profiles/{name}/", "/api/scheduler/decisions/",
                 "/api/scheduler/decisions/{id}/", "/api/scheduler/diagnose"):
        assert path in paths, path
    assert {p["name"] for p in paths["/api/scheduler/diagnose"]["get"]["parameters"]} >= {"pod", "labels", "profile"}


def test_a_v1_profile_document_is_accepted_and_every_answer_carries_one(client, db):
    body = {
        "apiVersion": "netaware.io/v1", "kind": "SchedulingProfile", "name": "zoned",
        "description": "hard zones", "is_default": False,
        "plugins": {"filter": [{"name": "min-bandwidth"}, {"name": "plan", "args": {"mode": "zone"}}],
                    "score": [{"name": "network-score", "weight": 2}, {"name": "plan", "weight": 1}]},
    }
    created = client.post("/api/scheduler/profiles/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    row = SchedulerProfile.objects.get(name="zoned")
    assert (row.description, row.filters, row.params) == ("hard zones", ["min-bandwidth", "plan"],
                                                          {"plan": {"mode": "zone"}})
    assert [s["name"] for s in row.scorers] == ["network-score", "plan"]
    document = created.json()["document"]
    assert document["apiVersion"] == "netaware.io/v1"
    assert engine.parse_profile(document) == engine.parse_profile(
        {k: v for k, v in body.items() if k not in ("description", "is_default")})
    listed = client.get("/api/scheduler/profiles/network/").json()["document"]
    assert engine.parse_profile(listed) == engine.BUILTIN_PROFILES["network"]


@pytest.mark.parametrize(
    ("document", "field", "fragment"),
    [
        ({"plugins": {"score": [{"name": "network-score"}, {"name": "water-level", "args": {"cpu_weight": -1}}]}},
         "plugins.score[1].args.cpu_weight", "must be >= 0"),
        ({"plugins": {"score": [{"name": "overload"}]}}, "plugins.score[0].name", "unknown scorer 'overload'"),
        ({"plugins": {"score": [{"name": "water-level"}], "filter": [{"name": "plan", "args": {"mode": "sea"}}]}},
         "plugins.filter[0].args.mode", "must be one of"),
        ({"apiVersion": "netaware.io/v9", "plugins": {}}, "apiVersion", "unknown version"),
    ],
)
def test_invalid_profile_documents_get_400_naming_the_document_field(client, db, document, field, fragment):
    body = {"apiVersion": "netaware.io/v1", "kind": "SchedulingProfile", "name": "mine", **document}
    response = client.post("/api/scheduler/profiles/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert list(errors) == [field], errors
    assert fragment in " ".join(errors[field])


def test_the_admin_shows_a_stored_profile_as_its_v1_document(client, db):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_superuser("admin", "admin@example.com", "pw"))
    row = SchedulerProfile.objects.get(name="hybrid")
    page = client.get(f"/admin/scheduler/schedulerprofile/{row.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "&quot;apiVersion&quot;: &quot;netaware.io/v1&quot;" in text and "&quot;plugins&quot;" in text
