"""The one shape of an API 400, and its place in the OpenAPI schema.

Every 400 of the API, whoever raises it, leaves ``api_exception_handler``
(``REST_FRAMEWORK["EXCEPTION_HANDLER"]``) as ``{"detail": "<summary>", "errors": {"<field.path>":
["message", ...]}}`` with dotted/indexed paths (``spec.workloads[2].selector``); problems with the body
as a whole are under ``BODY`` (docs/api.md). Kept apart from the parsers: DRF's views module reads
the parser setting when it is imported.
"""

from __future__ import annotations

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
