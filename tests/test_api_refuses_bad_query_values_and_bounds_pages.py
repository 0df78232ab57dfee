"""Through the web server as the run command starts it (``manage.py run_web``): every paginated list
has a maximum page size (``MAX_PAGE_SIZE``, docs/api.md) — a larger ``limit`` gets that many; a
``limit`` or ``offset`` that is not a whole number in PostgreSQL's bigint range, a declared filter
given an empty value and a boolean filter given anything but true/false are a 400 naming the
parameter (they were a 500, or silently ignored); a NUL character in a Basic-auth user name is a
401 (was a 500)."""

from __future__ import annotations

import base64
import http.client

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from apps.accounts.services import create_api_token
from apps.scheduler.models import Decision
from netaware_core.filters import MAX_PAGE_SIZE
from tests.support.web_server import web_server


@pytest.fixture(scope="module")
def web():
    with web_server() as server:
        yield server


@pytest.fixture
def token(transactional_db):
    user = get_user_model().objects.create_superuser("query-admin", "", "query-admin-password")
    return create_api_token(user=user, name="queries")[1]


def get(web, path: str, authorization: str) -> tuple[int, dict]:
    host, port = web.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": authorization, "Accept": "application/json"})
        resp = conn.getresponse()
        return resp.status, orjson.loads(resp.read() or b"{}")
    finally:
        conn.close()


def test_a_page_is_at_most_the_maximum_page_size(web, token):
    now = timezone.now()
    Decision.objects.bulk_create([Decision(ts=now, verb="filter", pod_name=f"p{i}") for i in range(MAX_PAGE_SIZE + 5)])
    status, page = get(web, "/api/scheduler/decisions/?limit=100000000", f"Bearer {token}")
    assert status == 200 and page["count"] == MAX_PAGE_SIZE + 5
    assert len(page["results"]) == MAX_PAGE_SIZE and page["next"]


@pytest.mark.parametrize("query,name", [
    ("limit=99999999999999999999", "limit"), ("offset=99999999999999999999", "offset"), ("limit=false", "limit"),
    ("offset=null", "offset"), ("limit=-1", "limit"), ("limit=0", "limit"), ("until=", "until"),
    ("since=", "since"), ("errors=null", "errors"),
])
def test_bad_query_values_are_a_400_naming_the_parameter(web, token, query, name):
    status, answer = get(web, f"/api/scheduler/decisions/?{query}", f"Bearer {token}")
    assert status == 400 and name in answer["errors"], answer


@pytest.mark.parametrize("query,name", [("ready=null", "ready"), ("ready=", "ready"), ("zone=", "zone")])
def test_bad_node_filters_are_a_400_naming_the_parameter(web, token, query, name):
    status, answer = get(web, f"/api/nodes/?{query}", f"Bearer {token}")
    assert status == 400 and name in answer["errors"], answer


@pytest.mark.parametrize("user", ["a\x00b", "query-admin\x00"])
def test_a_nul_in_a_basic_auth_user_name_is_401(web, token, user):
    credentials = base64.b64encode(f"{user}:query-admin-password".encode()).decode()
    status, _ = get(web, "/api/scheduler/decisions/", f"Basic {credentials}")
    assert status == 401
