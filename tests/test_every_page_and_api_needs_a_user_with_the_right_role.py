"""Every page and API needs a logged-in user (session or API token) except the health endpoints and
the extender verbs; viewers read everything and change nothing, with a clear refusal; editors
change AppGroups and profiles; reads that touch the cluster are permission-checked; tokens are
stored hashed and can be revoked or expire."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.accounts.roles import EDITOR_PERMISSIONS, VIEWER_PERMISSIONS
from tests.support.dashboard_seed import boutique_document, seed_boutique, seed_topology

pytestmark = pytest.mark.django_db

# /metrics has its own bearer token (tests/test_web_metrics_endpoint.py), no login.
OPEN = re.compile(r"^/(healthz|readyz|metrics|login|admin/|static/)")
TOPOLOGY = {"apiVersion": "netaware.io/v1alpha1", "kind": "NetworkTopology", "metadata": {"name": "t"},
            "spec": {"latency": {"a": {"b": 1.0}}, "bandwidth": {"a": {"b": 100.0}}, "lossrate": {"a": {"b": 0.0}}}}


def user_with(role: str | None, name: str | None = None):
    user = get_user_model().objects.create_user(name or f"{role or 'nobody'}-user", password="pw")
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def every_path() -> list[str]:
    """One concrete path per URL pattern of the site (parameters filled with plausible values)."""
    samples = {"pk": "1", "version": "1", "source": "a1", "target": "b1", "name": "network", "format": "json"}
    out: list[str] = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            regex = p.pattern.regex.pattern if hasattr(p.pattern, "regex") else str(p.pattern)
            text = str(p.pattern)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + _concrete(text, regex, samples))
            elif isinstance(p, URLPattern):
                out.append("/" + prefix + _concrete(text, regex, samples))

    walk(get_resolver().url_patterns, "")
    return sorted(set(out))


def _concrete(text: str, regex: str, samples: dict[str, str]) -> str:
    if text.startswith("^") or "(?P<" in text:  # re_path / router regex
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: samples.get(m.group(1), "x"), text)
        path = path.replace("^", "").replace("$", "").replace("/?", "/").replace("\\.", ".")
        return re.sub(r"\[[^\]]*\]\+?|\\", "", path)
    return re.sub(r"<(?:\w+:)?(\w+)>", lambda m: samples.get(m.group(1), "x"), text)


def test_roles_are_created_by_the_migration():
    viewer, editor = Group.objects.get(name="viewer"), Group.objects.get(name="editor")
    def perms(group):
        return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}
    assert perms(viewer) == set(VIEWER_PERMISSIONS)
    assert perms(editor) == set(EDITOR_PERMISSIONS)
    assert "appgroups.change_appgroup" in perms(editor) and "appgroups.change_appgroup" not in perms(viewer)


def test_anonymous_gets_nothing_but_health_and_the_extender(anonymous_client):
    paths = every_path()
    assert len(paths) > 40 and "/api/topology/" in paths and "/dashboard/data/heatmap" in paths
    checked = 0
    for path in paths:
        if OPEN.match(path):
            continue
        response = anonymous_client.get(path)
        checked += 1
        if (path.startswith("/api/") and not path.startswith(("/api/docs/", "/api/redoc/"))) or path.startswith("/dashboard/data/"):
            assert response.status_code == 401, (path, response.status_code)
            assert "log in" in response.json()["detail"].lower(), path
        else:
            assert response.status_code == 302 and response["Location"].startswith("/login?next="), (path, response.status_code)
    assert checked > 35
    assert anonymous_client.get("/healthz").status_code == 200
    assert anonymous_client.get("/login/").status_code == 200
    # Writes too: nothing anonymous gets through.
    assert anonymous_client.post("/api/topology/import", TOPOLOGY, content_type="application/json").status_code == 401
    assert anonymous_client.post("/api/appgroups/import", boutique_document(), content_type="application/json").status_code == 401


def test_viewer_reads_everything_and_is_refused_every_change_clearly():
    seed_topology()
    group = seed_boutique()
    viewer = logged_in(user_with("viewer"))
    for path in ("/", "/placements/", "/appgroups/", f"/appgroups/{group.pk}", "/decisions/", "/diagnose/", "/evaluation/",
                 "/links/a1/b1/", "/account/", "/api/topology/", "/api/appgroups/", "/api/scheduler/decisions/",
                 "/dashboard/data/heatmap", "/dashboard/data/placements", "/api/docs/", "/api/schema/"):
        assert viewer.get(path).status_code == 200, path
    page = viewer.get(f"/appgroups/{group.pk}").content.decode()
    assert 'id="edit-appgroup"' not in page  # no edit button for a viewer
    for path in (f"/appgroups/{group.pk}/edit", "/appgroups/new", f"/appgroups/{group.pk}/yaml", f"/appgroups/{group.pk}/delete"):
        response = viewer.get(path)
        assert response.status_code == 403, path
        text = response.content.decode()
        assert "needs the editor role" in text and 'id="refusal-reason"' in text and "Traceback" not in text, path
    refused = viewer.post("/api/appgroups/import", boutique_document(), content_type="application/json")
    assert refused.status_code == 403 and "editor role" in refused.json()["detail"]
    refused = viewer.post("/dashboard/data/appgroups/save", {"document": boutique_document()}, content_type="application/json")
    assert refused.status_code == 403 and "editor role" in refused.json()["detail"]
    assert viewer.delete(f"/api/appgroups/{group.pk}/").status_code == 403
    assert viewer.post("/evaluation/", {"seeds": "1"}).status_code == 403
    evaluation = viewer.get("/evaluation/").content.decode()  # no Run button a viewer may not use
    assert 'id="run-evaluation"' not in evaluation and "needs the editor role" in evaluation
    assert viewer.post("/api/scheduler/profiles/", {"name": "x"}, content_type="application/json").status_code == 403


def test_editor_changes_appgroups_and_profiles_but_not_the_topology():
    editor = logged_in(user_with("editor"))
    created = editor.post("/api/appgroups/import", boutique_document(), content_type="application/json")
    assert created.status_code == 201, created.content
    assert editor.get("/appgroups/new").status_code == 200
    profile = editor.post("/api/scheduler/profiles/", {"name": "mine", "scorers": [{"name": "network-score", "weight": 1}]},
                          content_type="application/json")
    assert profile.status_code == 201, profile.content
    topology = editor.post("/api/topology/import", TOPOLOGY, content_type="application/json")
    assert topology.status_code == 403 and "administrator" in topology.json()["detail"]


def test_a_user_without_a_role_is_told_to_ask_for_one():
    nobody = logged_in(user_with(None))
    response = nobody.get("/")
    assert response.status_code == 403 and "no role yet" in response.content.decode()
    assert nobody.get("/api/topology/").status_code == 403


def test_diagnose_reads_the_cluster_only_with_its_permission():
    from django.contrib.auth.models import Permission

    reader = user_with(None, "reader-only")
    reader.user_permissions.add(Permission.objects.get(codename="view_netaware"))
    client = logged_in(reader)
    assert client.get("/api/topology/").status_code in (200, 404)
    refused = client.get("/api/scheduler/diagnose", {"pod": "default/frontend-0"})
    assert refused.status_code == 403 and "accounts.diagnose_pod" in refused.json()["detail"]
    assert client.get("/diagnose/", {"pod": "default/frontend-0"}).status_code == 403
    viewer = logged_in(user_with("viewer"))
    assert viewer.get("/api/scheduler/diagnose", {"pod": "default/frontend-0"}).status_code != 403


def test_api_tokens_authenticate_automation_and_can_be_revoked(anonymous_client, capsys):
    editor = user_with("editor")
    call_command("create_api_token", user=editor.username, name="ci export")
    raw = capsys.readouterr().out.strip()
    assert raw.startswith("nat_") and len(raw) > 40
    token = ApiToken.objects.get(user=editor, name="ci export")
    assert raw not in str(ApiToken.objects.values_list().get(pk=token.pk))  # only a digest is stored
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    assert anonymous_client.get("/api/appgroups/", **headers).status_code == 200
    created = anonymous_client.post("/api/appgroups/import", boutique_document(), content_type="application/json", **headers)
    assert created.status_code == 201  # a token needs no CSRF token
    wrong = anonymous_client.get("/api/appgroups/", HTTP_AUTHORIZATION="Bearer nat_not-a-real-token")
    assert wrong.status_code == 401 and "Invalid" in wrong.json()["detail"]
    assert anonymous_client.get("/", **headers).status_code == 302  # tokens are for the API, not the pages
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert anonymous_client.get("/api/appgroups/", **headers).status_code == 401
    token.delete()
    assert anonymous_client.get("/api/appgroups/", **headers).status_code == 401
    with pytest.raises(Exception, match="no user named"):
        call_command("create_api_token", user="ghost", name="x")


def test_viewer_token_cannot_write(anonymous_client):
    from apps.accounts.services import create_api_token

    _token, raw = create_api_token(user=user_with("viewer"), name="dashboards")
    refused = anonymous_client.post("/api/appgroups/import", boutique_document(), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert refused.status_code == 403


def test_login_page_shows_the_user_everywhere_and_logout_is_a_post(anonymous_client):
    user_with("viewer", "alice")
    bad = anonymous_client.post("/login/", {"username": "alice", "password": "nope"})
    assert bad.status_code == 200 and "Wrong username or password" in bad.content.decode()
    ok = anonymous_client.post("/login/", {"username": "alice", "password": "pw", "next": "/appgroups/"})
    assert ok.status_code == 302 and ok["Location"] == "/appgroups/"
    page = anonymous_client.get("/appgroups/").content.decode()
    assert 'id="current-user"' in page and ">alice<" in page and "viewer" in page
    assert anonymous_client.get("/logout/").status_code == 405  # no GET that changes state
    assert anonymous_client.post("/logout/").status_code == 302
    assert anonymous_client.get("/appgroups/").status_code == 302


def test_users_manage_their_own_tokens_on_the_account_page():
    client = logged_in(user_with("viewer", "bob"))
    response = client.post("/account/tokens/", {"name": "grafana"})
    assert response.status_code == 201
    raw = re.search(r'id="new-token-value">(nat_[^<]+)<', response.content.decode()).group(1)
    assert client.get("/account/").content.decode().count(raw) == 0  # shown once
    token = ApiToken.objects.get(name="grafana")
    other = logged_in(user_with("viewer", "carol"))
    assert other.post(f"/account/tokens/{token.pk}/revoke").status_code == 404  # not hers
    assert client.post(f"/account/tokens/{token.pk}/revoke").status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()


def test_development_switch_allows_anonymous_reads_never_writes(anonymous_client, settings):
    settings.REQUIRE_AUTH = False
    seed_topology()
    assert anonymous_client.get("/").status_code == 200
    assert anonymous_client.get("/api/topology/").status_code == 200
    assert anonymous_client.post("/api/topology/import", TOPOLOGY, content_type="application/json").status_code in (401, 403)
    assert anonymous_client.get("/appgroups/new").status_code == 302
