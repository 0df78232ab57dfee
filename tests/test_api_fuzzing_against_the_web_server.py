"""Schemathesis against the web server as the run command starts it (``manage.py run_web``), its
OpenAPI schema and every operation in it, as four identities: an administrator's API token, an
administrator's session cookie, a viewer's token and nobody. No request, however malformed, gets a
5xx, and every answer is one the schema documents: its status code, content type, headers and body
(schemathesis' response-conformance checks). The lockout after failed logins is raised out of reach:
schemathesis sends wrong credentials on purpose, and a locked-out 429 is tested on its own
(test_repeated_failed_logins_are_locked_out.py).

The seed varies per run and is printed; ``NETAWARE_FUZZ_SEED=<seed>`` replays a run. Random ids
rarely name an object that exists, so every read of one AppGroup is also called for an AppGroup
that has pods placed, and its answer validated against the schema (a bare list where the schema
said a page was found so, by a 15-minute run on the demo's data).
"""

from __future__ import annotations

import http.client
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import schemathesis
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from apps.accounts.roles import VIEWER
from apps.accounts.services import create_api_token, ensure_roles
from tests.support.dashboard_seed import place, seed_boutique
from tests.support.web_server import web_server

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("NETAWARE_FUZZ_SEED") or random.SystemRandom().randrange(2**31))
EXAMPLES = os.environ.get("NETAWARE_FUZZ_EXAMPLES", "3")
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,"
          "response_schema_conformance")
SCHEMATHESIS = str(Path(sys.executable).parent / "schemathesis")
# Wrong credentials are sent on purpose, and other tests' failures from 127.0.0.1 are still counted.
NO_LOCKOUT = {"NETAWARE_LOGIN_FAILURE_LIMIT": "1000000", "NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT": "0"}


def _logged_in_cookies(url: str, username: str, password: str) -> str:
    """Log in through the login page as a browser does; the session and CSRF cookies it got."""
    browser = requests.Session()
    page = browser.get(f"{url}/login", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert page.status_code == 200 and token, page.text[:500]
    done = browser.post(f"{url}/login", data={"username": username, "password": password,
                                              "csrfmiddlewaretoken": token.group(1)},
                        headers={"Referer": f"{url}/login"}, allow_redirects=False, timeout=30)
    assert done.status_code == 302 and "sessionid" in browser.cookies, done.text[:500]
    return "; ".join(f"{k}={v}" for k, v in browser.cookies.items())


@pytest.fixture
def identities(transactional_db):
    ensure_roles()
    users = get_user_model().objects
    admin = users.create_superuser("fuzz-admin", "", "fuzz-admin-password")
    viewer = users.create_user("fuzz-viewer", "", "fuzz-viewer-password")
    viewer.groups.add(Group.objects.get(name=VIEWER))
    return {
        "token": ["-H", f"Authorization: Bearer {create_api_token(user=admin, name='fuzz')[1]}"],
        "session": ("fuzz-admin", "fuzz-admin-password"),
        "viewer": ["-H", f"Authorization: Bearer {create_api_token(user=viewer, name='fuzz')[1]}"],
        "anonymous": [],
    }


def test_no_request_of_any_identity_gets_a_5xx_or_an_answer_the_schema_does_not_document(identities, tmp_path):
    print(f"fuzz seed {SEED} (replay: NETAWARE_FUZZ_SEED={SEED})")
    with web_server(env=NO_LOCKOUT) as web:
        host, port = web.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", "/api/schema/?format=json", headers={"Authorization": identities["token"][1].split(": ", 1)[1]})
        response = conn.getresponse()
        schema = tmp_path / "schema.json"
        schema.write_bytes(response.read())
        assert response.status == 200
        failures = []
        username, password = identities["session"]
        identities["session"] = ["-H", f"Cookie: {_logged_in_cookies(web.url, username, password)}"]
        runs = {}  # the four identities at once: the wall time of one, in CI's budget
        for name, headers in identities.items():
            (tmp_path / name).mkdir()  # its cache stays out of the tree
            runs[name] = subprocess.Popen(
                [SCHEMATHESIS, "run", str(schema), "--url", web.url, "--checks", CHECKS,
                 "--phases", "examples,fuzzing", "--max-examples", EXAMPLES, "--seed", str(SEED),
                 "--request-timeout", "30", "--no-color", *headers],
                stdout=(tmp_path / name / "run.txt").open("w"), stderr=subprocess.STDOUT, cwd=tmp_path / name)
        for name, run in runs.items():
            run.wait(timeout=240)
            if run.returncode != 0:
                output = (tmp_path / name / "run.txt").read_text(errors="replace")
                failures.append(f"--- {name} (seed {SEED}) ---\n{output[-8000:]}")
        assert not failures, "\n".join(failures)


def test_every_read_of_an_appgroup_with_placements_answers_what_the_schema_documents(transactional_db):
    ensure_roles()
    admin = get_user_model().objects.create_superuser("reader-admin", "", "reader-admin-password")
    token = create_api_token(user=admin, name="reader")[1]
    appgroup = seed_boutique()
    assert place("frontend", "n1402") is not None
    headers = {"Authorization": f"Bearer {token}"}
    with web_server(env=NO_LOCKOUT) as web:  # every check runs, wrong credentials (ignored_auth) included
        raw = requests.get(f"{web.url}/api/schema/?format=json", headers=headers, timeout=30).json()
        schema = schemathesis.openapi.from_dict(raw)
        called, failures = [], []
        for result in schema.get_all_operations():
            operation = result.ok()
            if operation.method.upper() != "GET" or not operation.path.startswith("/api/appgroups/{id}"):
                continue
            case = operation.Case(path_parameters={"id": appgroup.pk}, headers=headers)
            called.append(operation.path)
            try:
                case.call_and_validate(base_url=web.url)
            except Exception as exc:  # schemathesis' FailureGroup names every check that failed
                failures.append(f"GET {operation.path}: {exc}")
    assert "/api/appgroups/{id}/placements/" in called, called
    assert not failures, "\n".join(failures)
