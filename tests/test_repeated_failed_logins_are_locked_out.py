"""Brute force against the web server as the run command starts it (``manage.py run_web``): after
NETAWARE_LOGIN_FAILURE_LIMIT wrong passwords (Basic auth, the login page) or wrong API tokens, the
same client and user name get 429 with Retry-After, even with the right password; the same user from
another client address is not blocked; one address guessing across many user names is stopped at
NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT (issue 21)."""

from __future__ import annotations

import base64
import http.client
import random
import re
import uuid
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.services import create_api_token
from tests.support.web_server import web_server

LIMIT = 3
ADDRESS_LIMIT = 10  # above what this module's shared ATTACKER address collects (2 x LIMIT)


def _address() -> str:
    """A loopback address of this run's own (the kernel lets a test connect from any 127/8 address):
    the per-address counters outlive a test in Redis, and other tests fail logins from 127.0.0.1."""
    return f"127.{random.randrange(1, 255)}.{random.randrange(1, 255)}.{random.randrange(2, 255)}"


ATTACKER = _address()
OTHER_CLIENT = _address()


def request(url: str, method: str, path: str, *, source: str = ATTACKER, headers: dict[str, str] | None = None,
            body: str | None = None) -> http.client.HTTPResponse:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30, source_address=(source, 0))
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


@pytest.fixture(scope="module")
def web():
    """One server for the module: each test has its own user, hence its own lockout counters."""
    with web_server(env={"NETAWARE_LOGIN_FAILURE_LIMIT": str(LIMIT), "NETAWARE_LOGIN_COOLOFF_SECONDS": "120",
                         "NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT": str(ADDRESS_LIMIT)}) as server:
        yield server


@pytest.fixture
def user(transactional_db):
    name = f"bf-{uuid.uuid4().hex[:8]}"  # its own lockout counters, whatever ran before in this Redis
    get_user_model().objects.create_superuser(name, "", "right-password")
    return name


def test_wrong_basic_auth_passwords_lock_out_that_client_and_user_but_not_another_client(web, user):
    statuses = [request(web.url, "GET", "/api/appgroups/", headers=basic(user, f"wrong-{i}")).status
                for i in range(LIMIT)]
    assert statuses == [401] * LIMIT
    locked = request(web.url, "GET", "/api/appgroups/", headers=basic(user, "right-password"))
    assert locked.status == 429, locked.status
    assert int(locked.headers["Retry-After"]) > 0
    other = request(web.url, "GET", "/api/appgroups/", source=OTHER_CLIENT, headers=basic(user, "right-password"))
    assert other.status == 200, other.status


def test_wrong_api_tokens_are_locked_out_per_client_but_valid_ones_pass(web, user):
    user_token = create_api_token(user=get_user_model().objects.get(username=user), name="t")[1]
    guesser = _address()  # token failures count per address alone: not the other tests' addresses
    statuses = [request(web.url, "GET", "/api/appgroups/", source=guesser,
                        headers={"Authorization": f"Bearer nat_guess{i}"}).status for i in range(LIMIT)]
    assert statuses == [401] * LIMIT
    locked = request(web.url, "GET", "/api/appgroups/", source=guesser,
                     headers={"Authorization": "Bearer nat_another-guess"})
    assert locked.status == 429 and int(locked.headers["Retry-After"]) > 0
    other = request(web.url, "GET", "/api/appgroups/", source=OTHER_CLIENT,
                    headers={"Authorization": "Bearer nat_another-guess"})
    assert other.status == 401
    valid = request(web.url, "GET", "/api/appgroups/", source=guesser, headers={"Authorization": f"Bearer {user_token}"})
    assert valid.status == 200, "a valid token is never locked out"


def _login(url: str, username: str, password: str, *, source: str = ATTACKER) -> http.client.HTTPResponse:
    page = http.client.HTTPConnection(*url.removeprefix("http://").split(":"), timeout=30,
                                      source_address=(source, 0))
    page.request("GET", "/login")
    got = page.getresponse()
    html = got.read().decode()
    cookie = got.headers["Set-Cookie"].split(";", 1)[0]
    page.close()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token, html[:300]
    return request(url, "POST", "/login", source=source, body=urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Referer": f"{url}/login"})


def test_wrong_login_page_passwords_lock_out_that_client_and_user_but_not_another_client(web, user):
    first = [_login(web.url, user, f"wrong-{i}").status for i in range(LIMIT - 1)]
    assert first == [200] * (LIMIT - 1)  # the form again, with its error
    assert _login(web.url, user, "wrong-last").status == 429  # the attempt that reaches the limit
    locked = _login(web.url, user, "right-password")
    assert locked.status == 429 and int(locked.headers["Retry-After"]) > 0
    assert _login(web.url, user, "right-password", source=OTHER_CLIENT).status == 302


def test_one_address_guessing_across_user_names_is_capped_but_valid_tokens_pass(web, user):
    sprayer = _address()
    names = [f"spray-{uuid.uuid4().hex[:6]}-{i}" for i in range(ADDRESS_LIMIT)]
    statuses = [request(web.url, "GET", "/api/appgroups/", source=sprayer, headers=basic(name, "guess")).status
                for name in names]
    assert statuses == [401] * ADDRESS_LIMIT, "one failure per user name: no (user, address) pair is near its limit"
    capped = request(web.url, "GET", "/api/appgroups/", source=sprayer, headers=basic(user, "right-password"))
    assert capped.status == 429 and int(capped.headers["Retry-After"]) > 0, capped.status
    assert request(web.url, "GET", "/api/appgroups/", source=OTHER_CLIENT,
                   headers=basic(user, "right-password")).status == 200
    token = create_api_token(user=get_user_model().objects.get(username=user), name="t")[1]
    valid = request(web.url, "GET", "/api/appgroups/", source=sprayer, headers={"Authorization": f"Bearer {token}"})
    assert valid.status == 200, "a valid token is never locked out"
