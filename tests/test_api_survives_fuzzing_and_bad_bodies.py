"""Every operation of our OpenAPI schema (``/api/schema/``) is fuzzed by schemathesis against a live
server, with schema-conforming and schema-violating inputs: no answer is a 5xx, and every 400
names what is wrong (a field, a parameter, or the body itself). Then every operation that takes a
body gets oversize, deeply nested and malformed bodies: each is refused with a 4xx that says why.

The fuzzer authenticates as a superuser with HTTP Basic (``FUZZ_AUTH``), so it reaches the code
behind the permission checks; switch ``auth_for`` to a token once API tokens exist."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
import requests
import schemathesis
import yaml
from django.conf import settings as django_settings
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode

from netaware_core.fielderrors import BODY

FUZZ_USER, FUZZ_PASSWORD = "fuzzer", "fuzz-Password-9f3kQ2"
# Per operation and generation mode (schema-conforming, schema-violating); raise it for a longer run.
EXAMPLES_PER_MODE = int(os.environ.get("NETAWARE_FUZZ_EXAMPLES", "25"))
BODY_METHODS = {"post", "put", "patch"}


def api_schema() -> dict[str, Any]:
    """The same document /api/schema/ serves (checked against it below)."""
    return json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))


SCHEMA = api_schema()
OPERATIONS = sorted((method, path) for path, ops in SCHEMA["paths"].items() for method in ops
                    if method in {"get", "post", "put", "patch", "delete"})
BODY_OPERATIONS = [(m, p) for m, p in OPERATIONS if "requestBody" in SCHEMA["paths"][p][m]]


@pytest.fixture
def fuzz_user(transactional_db, settings):
    from django.contrib.auth import get_user_model

    # HTTP Basic checks the password on every request: production's PBKDF2 (~1M rounds) would make
    # the password check, not the API, what this test measures.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    get_user_model().objects.create_superuser(FUZZ_USER, "fuzzer@example.com", FUZZ_PASSWORD)
    return (FUZZ_USER, FUZZ_PASSWORD)


def auth_for(user: tuple[str, str]) -> dict[str, Any]:
    return {"auth": user}


def declared_names(method: str, path: str) -> set[str]:
    operation = SCHEMA["paths"][path][method]
    names = {p["name"] for p in operation.get("parameters", [])}

    def properties(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                node = SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[1]]
            names.update((node.get("properties") or {}).keys())
            for value in (node.get("properties") or {}).values():
                properties(value)
            properties(node.get("items"))
            for key in ("allOf", "oneOf", "anyOf"):
                for sub in node.get(key) or []:
                    properties(sub)

    for media in (operation.get("requestBody") or {}).get("content", {}).values():
        properties(media.get("schema"))
    return names


BODY_LEVEL = re.compile(
    r"(JSON parse error|YAML|parse error|Unsupported media type|Expected a (dictionary|list)|body|document|"
    r"must be an? (object|mapping|list)|Invalid data|request body)", re.IGNORECASE)


def assert_names_what_is_wrong(method: str, path: str, sent: dict[str, Any], response: Any) -> None:
    """A 400 body is JSON and points at a declared field/parameter, one that was sent, or the body."""
    try:  # errors come in the format the client asked for (the AppGroup export answers YAML too)
        content_type = response.headers.get("content-type") or response.headers.get("Content-Type") or ""
        yaml_answer = "yaml" in (",".join(content_type) if isinstance(content_type, list) else content_type)
        body = yaml.safe_load(response.text) if yaml_answer else response.json()
    except ValueError:
        pytest.fail(f"{method.upper()} {path}: 400 without a JSON/YAML body: {response.headers!r} {response.text[:300]!r}")
    assert isinstance(body, dict) and set(body) == {"detail", "errors"} and body["errors"], (
        f"{method.upper()} {path}: 400 body not in the one shape: {body!r}")
    names = declared_names(method, path) | {str(k) for k in sent.get("query") or {}} | (
        {str(k) for k in sent["body"]} if isinstance(sent.get("body"), dict) else set())
    if set(body["errors"]) - {BODY}:  # keyed by the field (path) they concern: {"spec.workloads[0].name": [...]}
        return
    text = json.dumps(body)
    if BODY_LEVEL.search(text) or any(re.search(rf"\b{re.escape(n)}\b", text) for n in names):
        return
    pytest.fail(f"{method.upper()} {path}: 400 names nothing that was sent or declared: {text[:500]} (sent {sent})")


def fuzz(operation: Any, mode: GenerationMode, method: str, path: str, base_url: str, user: tuple[str, str],
         seen: dict[int, int]) -> None:
    """Run EXAMPLES_PER_MODE generated requests of one mode against the live server."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @hypothesis_settings(max_examples=EXAMPLES_PER_MODE, deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(HealthCheck))
    def run(case):
        response = case.call(base_url=base_url, timeout=30, **auth_for(user))
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        sent = {"query": case.query, "path": case.path_parameters, "body": getattr(case, "body", None)}
        assert response.status_code < 500, (
            f"{mode.value}: {response.status_code} for {case.as_curl_command()}\n{response.text[:1000]}")
        if response.status_code == 400:
            assert_names_what_is_wrong(method, path, sent, response)

    run()


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m.upper()} {p}" for m, p in OPERATIONS])
def test_fuzzing_finds_no_server_error(method, path, live_server, fuzz_user):
    operation = schemathesis.openapi.from_dict(SCHEMA)[path][method.upper()]
    seen: dict[int, int] = {}
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        fuzz(operation, mode, method, path, live_server.url, fuzz_user, seen)
    assert sum(seen.values()) >= 2, seen


def test_the_fuzzed_schema_is_the_served_one(live_server, fuzz_user):
    served = requests.get(f"{live_server.url}/api/schema/", params={"format": "json"}, timeout=30,
                          **auth_for(fuzz_user))
    assert served.status_code == 200
    assert sorted(served.json()["paths"]) == sorted(SCHEMA["paths"])
    assert len(OPERATIONS) >= 25 and len(BODY_OPERATIONS) >= 6


def concrete(path: str) -> str:
    """A path with its parameters filled in (an id that does not exist is fine: the body is read first
    or the 404 is the answer)."""
    return re.sub(r"\{[^}]+\}", "1", path)


def bad_bodies() -> list[tuple[str, bytes, str]]:
    deep = b"[" * 100_000 + b"]" * 100_000
    deep_object = b'{"a":' * 50_000 + b"1" + b"}" * 50_000
    return [
        ("malformed-json", b'{"name": "x", ', "application/json"),
        ("not-utf8", b'{"name": "\xff\xfe"}', "application/json"),
        ("nan", b'{"weight": NaN, "spec": Infinity}', "application/json"),
        ("wrong-type-list", b"[1, 2, 3]", "application/json"),
        ("wrong-type-scalar", b"42", "application/json"),
        ("empty", b"", "application/json"),
        ("deeply-nested-array", deep, "application/json"),
        ("deeply-nested-object", deep_object, "application/json"),
        ("deeply-nested-yaml", b"a: " + b"[" * 20_000 + b"]" * 20_000, "application/yaml"),
        ("wrong-media-type", b"name=x", "text/csv"),
        ("form-instead-of-json", b"name=x&namespace=y", "application/x-www-form-urlencoded"),
    ]


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS, ids=[f"{m.upper()} {p}" for m, p in BODY_OPERATIONS])
def test_bad_bodies_are_refused_with_a_reason(method, path, live_server, fuzz_user, settings):
    url = f"{live_server.url}{concrete(path)}"
    for name, payload, media_type in bad_bodies():
        response = requests.request(method, url, data=payload, headers={"Content-Type": media_type}, timeout=60,
                                    **auth_for(fuzz_user))
        assert 400 <= response.status_code < 500, f"{name}: {response.status_code} {response.text[:500]}"
        detail = response.json()
        if response.status_code in (400, 413):
            assert set(detail) == {"detail", "errors"} and detail["errors"], f"{name}: {detail!r}"
        else:
            assert isinstance(detail, dict) and detail.get("detail"), f"{name}: {detail!r}"


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS, ids=[f"{m.upper()} {p}" for m, p in BODY_OPERATIONS])
def test_oversize_bodies_are_refused_before_parsing(method, path, live_server, fuzz_user, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    body = b'{"name": "' + b"x" * (256 * 1024) + b'"}'
    response = requests.request(method, f"{live_server.url}{concrete(path)}", data=body,
                                headers={"Content-Type": "application/json"}, timeout=60, **auth_for(fuzz_user))
    assert response.status_code == 413, f"{response.status_code} {response.text[:300]}"
    assert "MAX_REQUEST_BYTES" in response.json()["detail"]
    assert django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 64 * 1024
