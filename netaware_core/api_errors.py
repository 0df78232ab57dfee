"""The one shape of an API 400, and its place in the OpenAPI schema.

Every 400 of the API, whoever raises it, leaves ``api_exception_handler``
(``REST_FRAMEWORK["EXCEPTION_HANDLER"]``) as ``{"detail": "<summary>", "errors": {"<field.path>":
["message", ...]}}`` with dotted/indexed paths (``spec.workloads[2].selector``); problems with the body
as a whole are under ``BODY`` (docs/api.md). Kept apart from the parsers: DRF's views module reads
the parser setting when it is imported.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from netaware_core.fielderrors import BODY, FieldError, error_body

__all__ = ["ERROR_SCHEMA", "api_exception_handler", "document_error_responses", "flatten_errors"]


def _key(raw_key: object) -> str:
    # ListSerializer and ListField report item errors as {index: ...}: render them as [index].
    return f"[{raw_key}]" if isinstance(raw_key, int) or str(raw_key).isdigit() else str(raw_key)


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error structure as {"workloads[1].dependencies[0].target": [...]}.

    Keys that already are paths (``spec.workloads[2].name``) pass through; ``non_field_errors``
    belongs to the object it is under (``BODY`` at the top).
    """
    result: dict[str, list[str]] = {}

    def add(path: str, messages: list[str]) -> None:
        result.setdefault(path or BODY, []).extend(messages)

    if isinstance(detail, Mapping):
        for raw_key, value in detail.items():
            key = _key(raw_key)
            if key in ("non_field_errors", BODY):
                path = prefix
            elif key.startswith("[") or not prefix:
                path = f"{prefix}{key}"
            else:
                path = f"{prefix}.{key}"
            for sub_key, messages in flatten_errors(value, path).items():
                add(sub_key, messages)
    elif isinstance(detail, list | tuple):
        if all(not isinstance(item, Mapping | list | tuple) for item in detail):
            if detail:
                add(prefix, [str(item) for item in detail])
        else:
            for index, item in enumerate(detail):
                if item:
                    for sub_key, messages in flatten_errors(item, f"{prefix}[{index}]").items():
                        add(sub_key, messages)
    else:
        add(prefix, [str(detail)])
    return result


def api_exception_handler(exc: Exception, context: Any) -> Response | None:
    """DRF's handler, with every 400 (ValidationError, ParseError, and our own ``FieldError`` from
    any parser, validator or service) in the one shape."""
    if isinstance(exc, FieldError):
        exc = exceptions.ValidationError(exc.errors)
    response = exception_handler(exc, context)
    if response is None or response.status_code != status.HTTP_400_BAD_REQUEST:
        return response
    if isinstance(exc, exceptions.ValidationError):
        response.data = error_body(flatten_errors(exc.detail))
    elif isinstance(exc, exceptions.APIException):
        message = str(exc.detail)
        response.data = error_body({BODY: [message]}, message)
    return response


# --- the OpenAPI side ----------------------------------------------------------------------------

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every 400 of the API: a summary and the messages by field path (docs/api.md).",
    "properties": {
        "detail": {"type": "string", "description": "One-line summary: the first problem, and how many more."},
        "errors": {
            "type": "object",
            "description": f"Field path (`spec.workloads[2].selector`, a query parameter, or `{BODY}` for the "
                           "body as a whole) -> messages.",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
    },
    "required": ["detail", "errors"],
}


def document_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every operation that takes a body or query parameters
    documents its 400 as ``ValidationError``."""
    result.setdefault("components", {}).setdefault("schemas", {})["ValidationError"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/ValidationError"}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or method not in {"get", "post", "put", "patch", "delete"}:
                continue
            takes_input = "requestBody" in operation or any(
                parameter.get("in") == "query" for parameter in operation.get("parameters", []))
            if not takes_input:
                continue
            response = operation.setdefault("responses", {}).setdefault("400", {})
            response["description"] = response.get("description") or "Invalid input: messages by field path"
            response["content"] = {"application/json": {"schema": reference}}
    return result


# --- what the server answers besides 200/400, for schemathesis' response-conformance checks ---------

DETAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every other error of the API: one message.",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
# Django's resolver answers a path that matches no route (``/api/topology/snapshots/1.9/``) before any
# API view runs: its 404 is the site's HTML page.
HTML_PAGE = {"text/html": {"schema": {"type": "string"}}}
# PostgreSQL's bigint, the bound of limit/offset (netaware_core.filters.BIGINT_MAX: a layer above this one).
BIGINT_MAX = 2**63 - 1
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
# Documents the server parses itself (netaware_core/documents.py): the least every one of them has.
DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {"apiVersion": {"type": "string", "minLength": 1}, "kind": {"type": "string", "minLength": 1},
                   "metadata": {"type": "object"}, "spec": {"type": "object"}},
}
DOCUMENT_KINDS = {"/api/appgroups/import/": {"kind": "AppGroup"},
                  "/api/topology/import": {"kind": "NetworkTopology", "apiVersion": "netaware.io/v1alpha1"}}
# POSTs that update an existing object in place (200) or create it (201).
UPSERTS = {"/api/traffic/modes/"}
# Query parameters the server takes blank (``labels=``: no labels).
BLANK_ALLOWED = {("/api/scheduler/diagnose", "labels"), ("/api/scheduler/diagnose", "profile")}
# Something besides blanks, and no NUL (PostgreSQL cannot compare it: a 400 naming the parameter).
NOT_BLANK_NO_NUL = r"^[^\x00]*\S[^\x00]*$"
QUERY_PATTERNS = {("/api/scheduler/diagnose", "pod"):
                  r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"}
# Names the server refuses blank (component -> properties).
NOT_BLANK = {"AppGroup": ("namespace", "name"), "SchedulerProfile": ("name",)}


def _json_and_yaml(body: dict[str, Any]) -> bool:
    return any("yaml" in media for media in body.get("content", {}))


def document_every_response(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (after ``document_error_responses``): the 401, 403, 404 and
    429 every API operation can answer, its query parameters as strict as the server (issue 21)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Detail"] = DETAIL_SCHEMA
    for component, names in NOT_BLANK.items():
        for name in names:
            prop = schemas.get(component, {}).get("properties", {}).get(name)
            if prop is not None:
                prop["minLength"] = 1
    dependency = schemas.get("Dependency", {}).get("properties", {}).get("min_bandwidth_bps")
    if dependency is not None:
        dependency["nullable"] = True  # no min_bandwidth: no figure
    detail = {"application/json": {"schema": {"$ref": "#/components/schemas/Detail"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            responses.setdefault("401", {"description": "No user, or wrong credentials", "content": detail})
            responses.setdefault("403", {"description": "The user lacks the role this needs", "content": detail})
            responses.setdefault("429", {
                "description": "Locked out after too many failed logins (docs/access.md)", "content": detail,
                "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds"}}})
            if "{" in path:
                found = responses.setdefault("404", {"description": "No such object", "content": detail})
                found["description"] = found.get("description") or "No such object"
                found["content"] = {**detail, **found.get("content", {}), **HTML_PAGE}
            if method == "post" and "201" in responses and "200" not in responses and path in UPSERTS:
                responses["200"] = {**responses["201"], "description": "Updated in place"}
            yaml_answers = [media for media in responses.get("200", {}).get("content", {}) if "yaml" in media]
            for code, response in responses.items():
                if code.startswith("4") and yaml_answers:  # an export renders its errors as YAML too
                    reference = response.get("content", {}).get("application/json", {"schema": detail["application/json"]["schema"]})
                    response["content"] = {**response.get("content", {}), **{media: reference for media in yaml_answers}}
            body = operation.get("requestBody")
            if body:
                for media in FORM_TYPES:
                    body.get("content", {}).pop(media, None)
                if _json_and_yaml(body):
                    for content in body["content"].values():
                        if content.get("schema") == {"type": "object", "additionalProperties": {}}:
                            content["schema"] = _document_schema(path)
                    if "400" in responses:  # a YAML body's 400 is still JSON; a YAML error page never
                        responses["400"]["content"].setdefault("application/yaml", responses["400"]["content"]["application/json"])
            for parameter in operation.get("parameters", []):
                if parameter.get("in") != "query":
                    continue
                schema = parameter.setdefault("schema", {})
                if parameter["name"] in ("limit", "offset"):
                    schema.update(type="integer", minimum=1 if parameter["name"] == "limit" else 0, maximum=BIGINT_MAX)
                elif (schema.get("type") == "string" and "enum" not in schema
                      and (path, parameter["name"]) not in BLANK_ALLOWED):
                    schema.setdefault("minLength", 1)  # StrictFilterBackend, diagnose: an empty value is a 400
                    schema.setdefault("pattern", QUERY_PATTERNS.get((path, parameter["name"]), NOT_BLANK_NO_NUL))
    for component in schemas.values():
        _one_of_strings_to_any_of(component)
    return result


def _document_schema(path: str) -> dict[str, Any]:
    schema = copy.deepcopy(DOCUMENT_SCHEMA)
    for key, value in DOCUMENT_KINDS.get(path, {}).items():
        schema["properties"][key] = {"type": "string", "enum": [value]}
    return schema


def _one_of_strings_to_any_of(node: Any) -> None:
    """A string that is blank *or* matches a pattern allowing blank matches both ``oneOf`` branches."""
    if isinstance(node, dict):
        branches = node.get("oneOf")
        if isinstance(branches, list) and branches and all(b.get("type") == "string" for b in branches):
            node["anyOf"] = node.pop("oneOf")
        for value in node.values():
            _one_of_strings_to_any_of(value)
    elif isinstance(node, list):
        for value in node:
            _one_of_strings_to_any_of(value)

