"""One place serves the extender verbs: the extender server's WSGI app
(``apps.scheduler.extender_views.application``, what ``manage.py run_extender`` serves through
``netaware_site.extender_wsgi``) answers /scheduler/{filter,prioritize,bind,preempt}[/] without Django's
middleware or URL resolver; the web server (``netaware_site.wsgi``) has no such route. The app answers
405 JSON for GET, a JSON 404 for any other path, reads no body without a Content-Length, adds the
security headers, and logs every call as a decision."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import orjson
import pytest

from apps.scheduler import extender_views
from apps.scheduler.management.commands.run_extender import EXTENDER_APP
from apps.scheduler.models import Decision
from tests.support.extender_wire import binding_args, extender_args, k8s_pod, load_kep_fixture

VERBS = ("filter", "prioritize", "bind", "preempt")


@pytest.fixture
def ext(start_extender):
    extender = start_extender()
    load_kep_fixture(placements={"p1": "n-2", "p2": "n-5", "p3": "n-8"})
    extender.settle()
    return extender


def test_run_extender_serves_the_extender_app():
    """(Read, not imported: importing extender_wsgi starts a runtime and a health server.)"""
    module, attribute = EXTENDER_APP.split(":")
    source = Path(__file__).resolve().parents[1].joinpath(*module.split(".")).with_suffix(".py").read_text()
    imports = [(node.module, alias.name) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
               for alias in node.names]
    assert ("apps.scheduler.extender_views", attribute) in imports
    assert set(extender_views.EXTENDER_PATHS.values()) == set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("slash", ["", "/"])
def test_the_web_server_does_not_answer_the_extender_verbs(client, anonymous_client, verb, slash):
    path = f"/scheduler/{verb}{slash}"
    assert client.post(path, b"{}", content_type="application/json").status_code == 404
    refused = anonymous_client.post(path, b"{}", content_type="application/json")
    assert refused.status_code == 302 and refused["Location"].startswith("/login?next=")


@pytest.mark.parametrize("slash", ["", "/"])
def test_filter_and_prioritize_answer_with_headers_and_timing(ext, slash):
    pod = k8s_pod("p1-app", labels={"app": "p1"}, annotations={"netaware.io/profile": "network-overhead"})
    body = extender_args(pod, node_names=["n-1", "n-5"])
    answer = ext.post(f"/scheduler/filter{slash}", body)
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    assert answer["X-Content-Type-Options"] == "nosniff" and answer["X-Frame-Options"] == "DENY"
    assert re.fullmatch(r"app;dur=\d+\.\d{3}", answer["Server-Timing"])
    assert int(answer["Content-Length"]) == len(answer.content)
    assert answer.json()["NodeNames"] == ["n-5"] and "n-1" in answer.json()["FailedAndUnresolvableNodes"]
    scores = {e["Host"]: e["Score"] for e in ext.post(f"/scheduler/prioritize{slash}", body).json()}
    assert scores == {"n-1": 0, "n-5": 10}


def test_each_call_is_logged_as_a_decision(ext):
    nodes = [f"n-{i}" for i in range(1, 9)]
    ext.post("/scheduler/prioritize", extender_args(k8s_pod("p2-app", labels={"app": "p2"}), node_names=nodes))
    ext.drain_decisions()
    logged = Decision.objects.filter(pod_name="p2-app").get()
    assert logged.verb == "prioritize" and logged.duration_ms > 0 and logged.breakdown_data["nodes"] == nodes


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("slash", ["", "/"])
def test_get_is_405_json_with_allow(ext, verb, slash):
    answer = ext.get(f"/scheduler/{verb}{slash}")
    assert answer.status_code == 405 and answer["Allow"] == "POST"
    assert "not allowed" in answer.json()["Error"]


def test_a_body_without_content_length_is_read_as_empty(ext):
    body = orjson.dumps(extender_args(k8s_pod("p3-nolen", labels={"app": "p3"}), node_names=["n-1"]))
    answer = ext.request("POST", "/scheduler/filter", body, content_length=False)
    assert answer.status_code == 200 and "malformed JSON" in answer.json()["Error"]


@pytest.mark.parametrize("path", ["/scheduler/unknown", "/scheduler/", "/healthz", "/scheduler/filterx", "/"])
def test_other_paths_are_a_json_404(ext, path):
    for answer in (ext.get(path), ext.request("POST", path, b"{}")):
        assert answer.status_code == 404 and "not an extender path" in answer.json()["Error"]


def test_bind_reports_kube_errors(start_extender):
    load_kep_fixture()
    ext = start_extender(KUBE_API_URL="http://127.0.0.1:9", EXTENDER_SOURCE="database")
    answer = ext.post("/scheduler/bind/", binding_args(k8s_pod("p1-bind", labels={"app": "p1"}), "n-1"))
    assert answer.status_code == 200 and "could not be read" in answer.json()["Error"]
