"""The production WSGI entry point answers the extender paths without Django's middleware
(netaware_site.wsgi → apps.scheduler.extender_views.extender_app). It must answer exactly as the Django
views do: same status, headers and body for every verb with and without the trailing slash, 405
JSON for GET, the body-size limit, bad input, and the decision written after the response."""

from __future__ import annotations

import io
import re
from typing import Any

import orjson
import pytest
from django.core import signals
from django.db import close_old_connections

from apps.scheduler.models import Decision
from tests.support.extender_wire import (
    binding_args,
    extender_args,
    k8s_pod,
    load_kep_fixture,
    use_extender_test_settings,
)


@pytest.fixture
def nodes(settings, db):
    use_extender_test_settings(settings)
    return load_kep_fixture(placements={"p1": "n-2", "p2": "n-5", "p3": "n-8"})


def lean(method: str, path: str, body: bytes | None, *, content_length: bool = True) -> tuple[int, dict[str, str], bytes]:
    from netaware_site import wsgi

    environ: dict[str, Any] = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "testserver", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body or b""),
        "wsgi.errors": io.StringIO(), "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    if body is not None:
        environ["CONTENT_TYPE"] = "application/json"
        if content_length:
            environ["CONTENT_LENGTH"] = str(len(body))
    seen: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        seen["status"], seen["headers"] = status, headers

    # As Django's test client does: the request signals must not close the test's transaction.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        iterable = wsgi.application(environ, start_response)
        try:
            data = b"".join(iterable)
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
    return int(seen["status"].split()[0]), dict(seen["headers"]), data


def django(client, method: str, path: str, body: bytes | None) -> tuple[int, dict[str, str], bytes]:
    if method == "GET":
        response = client.get(path)
    else:
        response = client.post(path, body, content_type="application/json")
    return response.status_code, dict(response.headers), response.content


def same(client, method: str, path: str, body: bytes | None) -> tuple[int, dict[str, str], bytes]:
    ours = lean(method, path, body)
    theirs = django(client, method, path, body)
    if ours[0] == 200:  # the server-side time differs by nature; both send it
        assert re.fullmatch(r"app;dur=\d+\.\d{3}", ours[1].pop("Server-Timing"))
        assert re.fullmatch(r"app;dur=\d+\.\d{3}", theirs[1].pop("Server-Timing"))
    assert ours == theirs
    return ours


def test_the_wsgi_entry_point_uses_the_lean_dispatch():
    from apps.scheduler import extender_views
    from netaware_site import wsgi

    assert wsgi.application is not wsgi.django_application
    assert set(extender_views.EXTENDER_PATHS.values()) == {"filter", "prioritize", "bind", "preempt"}


@pytest.mark.parametrize("slash", ["", "/"])
def test_filter_and_prioritize_answer_identically(client, nodes, slash):
    pod = k8s_pod("p1-lean", labels={"app": "p1"}, annotations={"netaware.io/profile": "network-overhead"})
    body = orjson.dumps(extender_args(pod, node_names=nodes))
    status, headers, data = same(client, "POST", f"/scheduler/filter{slash}", body)
    assert status == 200 and headers["Content-Type"] == "application/json"
    answer = orjson.loads(data)
    assert answer["Error"] == "" and "n-1" in answer["FailedAndUnresolvableNodes"]
    status, _, data = same(client, "POST", f"/scheduler/prioritize{slash}", body)
    scores = {e["Host"]: e["Score"] for e in orjson.loads(data)}
    assert status == 200 and set(scores) == set(nodes) and len(set(scores.values())) > 1


def test_each_lean_call_is_logged_as_a_decision(client, nodes):
    before = Decision.objects.count()
    body = orjson.dumps(extender_args(k8s_pod("p2-lean", labels={"app": "p2"}), node_names=nodes))
    lean("POST", "/scheduler/prioritize", body)
    logged = Decision.objects.filter(pod_name="p2-lean").get()
    assert Decision.objects.count() == before + 1
    assert logged.verb == "prioritize" and logged.duration_ms > 0 and logged.breakdown_data["nodes"] == nodes


@pytest.mark.parametrize("verb", ["filter", "prioritize", "bind", "preempt"])
@pytest.mark.parametrize("slash", ["", "/"])
def test_get_is_405_json_with_allow(client, nodes, verb, slash):
    status, headers, data = same(client, "GET", f"/scheduler/{verb}{slash}", None)
    assert status == 405 and headers["Allow"] == "POST" and "not allowed" in orjson.loads(data)["Error"]


@pytest.mark.parametrize(
    ("verb", "body", "needle"),
    [
        ("filter", b"{not json", "malformed JSON"),
        ("prioritize", b"[]", "expected a JSON object"),
        ("filter", b'{"Pod": null, "NodeNames": ["n-1"]}', "Pod"),
        ("filter", b'{"Pod": {"metadata": {"name": "x"}}, "NodeNames": ["n-1", 3]}', "NodeNames[1]"),
        ("bind", b'{"PodNamespace": "default", "Node": "n-1"}', "PodName"),
        ("preempt", b'{"Pod": {"metadata": {"name": "x"}}, "NodeNameToMetaVictims": []}', "NodeNameToMetaVictims"),
    ],
)
def test_bad_input_is_a_200_with_the_same_error(client, nodes, verb, body, needle):
    status, _, data = same(client, "POST", f"/scheduler/{verb}", body)
    assert status == 200 and needle in orjson.loads(data)["Error"]


@pytest.mark.parametrize("verb", ["filter", "bind"])
def test_body_limit_applies(client, nodes, settings, verb):
    settings.MAX_EXTENDER_BODY = 1000
    body = orjson.dumps(extender_args(k8s_pod("big", labels={"app": "p1"}), node_names=[f"n-{i}" for i in range(300)]))
    status, _, data = same(client, "POST", f"/scheduler/{verb}", body)
    assert status == 200 and "MAX_EXTENDER_BODY" in orjson.loads(data)["Error"]


def test_a_body_without_content_length_is_read_as_empty_like_django(nodes):
    body = orjson.dumps(extender_args(k8s_pod("p3-nolen", labels={"app": "p3"}), node_names=nodes))
    status, _, data = lean("POST", "/scheduler/filter", body, content_length=False)
    assert status == 200 and "malformed JSON" in orjson.loads(data)["Error"]


def test_other_paths_still_go_through_django(client, nodes):
    for path in ("/scheduler/unknown", "/scheduler/", "/healthz"):
        status, _, _ = lean("GET", path, None)
        assert status == client.get(path).status_code
    status, _, _ = lean("POST", "/scheduler/filterx", b"{}")
    assert status == 404


def test_bind_through_the_lean_path_reports_kube_errors(client, nodes, settings):
    settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": "http://127.0.0.1:9", "BIND_ATTEMPTS": 1}
    body = orjson.dumps(binding_args(k8s_pod("p1-bind", labels={"app": "p1"}), "n-1"))
    status, _, data = lean("POST", "/scheduler/bind/", body)
    assert status == 200 and orjson.loads(data)["Error"]
