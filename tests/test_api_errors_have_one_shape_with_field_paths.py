"""Every 400 of the API has one shape, ``{"detail": "<summary>", "errors": {"<field.path>": [...]}}``,
whoever found the problem: the body loader (malformed, deeply nested, aliased, several documents,
oversize), a serializer, a service, a filter set or a query parser. Semantic errors name the dotted/
indexed field path, the same for a JSON and a YAML body; the OpenAPI schema documents the shape on
every operation that takes input."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from drf_spectacular.generators import SchemaGenerator

from apps.appgroups.models import AppGroup
from apps.scheduler.models import SchedulerProfile
from apps.topology.models import TopologySnapshot
from netaware_core.fielderrors import BODY

pytestmark = pytest.mark.django_db

BOUTIQUE = yaml.safe_load((Path(__file__).resolve().parent.parent / "scenarios" / "online-boutique-appgroup.yaml")
                          .read_text())
BODY_OPERATIONS = [
    ("post", "/api/appgroups/"),
    ("put", "/api/appgroups/{id}/"),
    ("post", "/api/appgroups/import"),
    ("post", "/api/scheduler/profiles/"),
    ("put", "/api/scheduler/profiles/{name}/"),
    ("patch", "/api/scheduler/profiles/{name}/"),
    ("post", "/api/topology/import"),
]


@pytest.fixture
def existing(client) -> dict[str, str]:
    """Path parameters of rows that exist, so the body (not a 404) is what gets judged."""
    response = client.post("/api/appgroups/import", data=BOUTIQUE, content_type="application/json")
    assert response.status_code == 201, response.content
    return {"id": str(response.json()["id"]), "name": SchedulerProfile.objects.values_list("name", flat=True)[0]}


def send(client, method: str, path: str, body: bytes | str, content_type: str, params: dict[str, str]):
    return getattr(client, method)(path.format(**params), data=body, content_type=content_type)


def errors_of(response, *, status: int = 400) -> dict[str, list[str]]:
    """The response's field errors, after checking the one shape."""
    assert response.status_code == status, response.content[:500]
    body = response.json()
    assert set(body) == {"detail", "errors"}, body
    assert isinstance(body["detail"], str) and body["detail"], body
    errors = body["errors"]
    assert errors and all(isinstance(path, str) and path for path in errors), body
    assert all(isinstance(messages, list) and messages and all(isinstance(m, str) and m for m in messages)
               for messages in errors.values()), body
    return errors


BAD_BODIES = [
    ("malformed-json", b'{"name": "x", ', "application/json", "JSON parse error - Expecting property name"),
    ("nan-literal", b'{"name": NaN}', "application/json", "NaN is not a JSON number"),
    ("deep-json", b"[" * 50_000 + b"]" * 50_000, "application/json", "nested too deeply"),
    ("not-utf8", b'{"name": "\xff"}', "application/json", "not UTF-8"),
    ("malformed-yaml", b"spec: [unclosed", "application/yaml", "YAML parse error (line 2, column 1)"),
    ("deep-yaml", b"a: " + b"[" * 500 + b"]" * 500, "application/x-yaml", "nested deeper than 100 levels"),
    ("alias-yaml", b"a: &x [1]\nb: *x\n", "text/yaml", "YAML aliases are not accepted"),
    ("two-yaml-documents", b"a: 1\n---\nb: 2\n", "application/yaml", "exactly one YAML document, got 2"),
]


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS, ids=[f"{m} {p}" for m, p in BODY_OPERATIONS])
def test_bodies_the_loader_refuses_are_400s_about_the_body(client, existing, method, path):
    for name, body, content_type, message in BAD_BODIES:
        errors = errors_of(send(client, method, path, body, content_type, existing))
        assert list(errors) == [BODY], (name, errors)
        assert message in errors[BODY][0], (name, errors)
    assert AppGroup.objects.count() == 1 and TopologySnapshot.objects.count() == 0


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS, ids=[f"{m} {p}" for m, p in BODY_OPERATIONS])
def test_oversize_bodies_get_the_same_shape(client, existing, settings, method, path):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    errors = errors_of(send(client, method, path, b'{"a": "' + b"x" * 4096 + b'"}', "application/json", existing),
                       status=413)
    assert "MAX_REQUEST_BYTES" in errors[BODY][0]


def both_syntaxes(client, method: str, path: str, document: Any, params: dict[str, str]) -> dict[str, list[str]]:
    """The errors for ``document`` sent as JSON, checked equal to those for the same document as YAML."""
    as_json = errors_of(send(client, method, path, json.dumps(document), "application/json", params))
    as_yaml = errors_of(send(client, method, path, yaml.safe_dump(document), "application/yaml", params))
    assert as_json == as_yaml
    return as_json


def test_semantic_errors_name_the_field_path_in_json_and_yaml(client, existing):
    document = copy.deepcopy(BOUTIQUE)
    document["spec"]["workloads"][2]["selector"] = {"matchExpressions": [{"key": "app", "operator": "In"}]}
    errors = both_syntaxes(client, "post", "/api/appgroups/import", document, existing)
    assert list(errors) == ["spec.workloads[2].selector.matchExpressions[0].values"], errors

    document = copy.deepcopy(BOUTIQUE)
    document["spec"]["workloads"][1]["dependencies"][0]["metrics"]["latency"] = -1
    errors = both_syntaxes(client, "post", "/api/appgroups/import", document, existing)
    assert list(errors) == ["spec.workloads[1].dependencies[0].metrics.latency"], errors

    mini = {"namespace": "shop", "name": "mini", "workloads": [
        {"name": "web", "selector": "app=web", "dependencies": [{"target": "web", "latency": 1, "bandwidth": 0, "lossrate": 0}]}]}
    errors = both_syntaxes(client, "post", "/api/appgroups/", mini, existing)
    assert list(errors) == ["workloads[0].dependencies[0].target"], errors

    profile = {"name": "p", "scorers": [{"name": "water-level", "weight": 1}, {"name": "cold-start", "weight": -2}]}
    errors = both_syntaxes(client, "post", "/api/scheduler/profiles/", profile, existing)
    assert list(errors) == ["scorers[1].weight"] and ">= 0" in errors["scorers[1].weight"][0]
    profile = {"apiVersion": "netaware.io/v1", "kind": "SchedulingProfile", "name": "p",
               "plugins": {"score": [{"name": "water-level"}, {"name": "cold-start", "weight": -2}]}}
    errors = both_syntaxes(client, "post", "/api/scheduler/profiles/", profile, existing)
    assert list(errors) == ["plugins.score[1].weight"] and ">= 0" in errors["plugins.score[1].weight"][0]

    topology = {"kind": "NetworkTopology", "spec": {"latency": {"n1": {"n2": -1}}}}
    errors = both_syntaxes(client, "post", "/api/topology/import", topology, existing)
    assert list(errors) == ["spec.latency.n1.n2"], errors
    assert AppGroup.objects.count() == 1 and TopologySnapshot.objects.count() == 0


def test_a_body_that_is_not_an_object_names_the_body(client, existing):
    for path in ("/api/appgroups/import", "/api/topology/import"):
        errors = errors_of(client.post(path, data="- a\n- b\n", content_type="application/yaml"))
        assert list(errors) == [BODY], errors


def test_query_parameter_errors_name_the_parameter(client, existing):
    cases = [
        ("/api/scheduler/decisions/?verb=jump&since=yesterday", {"verb", "since"}),
        ("/api/probes/samples/?series=rtt_p95", {"series"}),
        (f"/api/appgroups/{existing['id']}/order?algorithm=Bogus", {"algorithm"}),
        (f"/api/appgroups/{existing['id']}/export?format=json&flavor=kubeflow", {"flavor"}),
        ("/api/scheduler/diagnose?pod=a/b/c", {"pod"}),
    ]
    for url, fields in cases:
        assert set(errors_of(client.get(url))) == fields, url


def test_the_openapi_schema_documents_the_shape_on_every_operation_with_input():
    schema = json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))
    assert schema["components"]["schemas"]["ValidationError"]["required"] == ["detail", "errors"]
    with_input = 0
    for operations in schema["paths"].values():
        for method, operation in operations.items():
            takes_input = "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", []))
            if not takes_input:
                continue
            with_input += 1
            content = operation["responses"]["400"]["content"]["application/json"]
            assert content["schema"] == {"$ref": "#/components/schemas/ValidationError"}, (method, operation)
            if "requestBody" in operation and method != "delete":
                assert {"application/json", "application/yaml"} <= set(operation["requestBody"]["content"]), operation
    assert with_input >= 20
