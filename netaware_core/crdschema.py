"""Structural validation of custom resources by their CRD's ``openAPIV3Schema`` (framework-free).

The one reader of the schemas in k8s/crds/: every reader of our documents checks their structure
here before its semantic rules (``apps.appgroups.documents`` with ``apps.appgroups.validators``,
``apps.topology.documents``), and the fake Kubernetes API server of the tests and the demo
(``apps.demo.kubeapi``) applies them as the real server does. The CRD subset is checked
directly (fast enough for 1 MiB objects); anything outside it falls back to ``jsonschema``. CEL
``x-kubernetes-validations`` and ``format`` are not enforced here: those rules are semantic and live
with the code that owns them.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = ["CRD_DIR", "check", "crd_schemas", "document_errors", "prune_and_default", "value_errors"]

CRD_DIR = Path(__file__).resolve().parent.parent / "k8s" / "crds"

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
}
_HANDLED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "maxProperties",
    "minProperties",
    "description",
    "format",
    "default",
    "nullable",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "anyOf",
    "allOf",
    "oneOf",
    "title",
    "example",
}


def _short(value: Any) -> str:
    """The value as the API server echoes it (JSON), cut so a message stays small whatever the input."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else f"{text[:45]}... ({len(text)} chars)"


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | list | dict) else 0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# (keyword, applies to, fails when, message): the API server's bounds and its wording.
_BOUNDS: tuple[tuple[str, Callable[[Any], bool], Callable[[Any, Any], bool], str], ...] = (
    ("minimum", _is_number, lambda v, b: v < b, "Invalid value: {value}: should be greater than or equal to {bound}"),
    ("maximum", _is_number, lambda v, b: v > b, "Invalid value: {value}: should be less than or equal to {bound}"),
    ("minLength", lambda v: isinstance(v, str), lambda v, b: len(v) < b,
     "Invalid value: {value}: should be at least {bound} chars long"),
    ("maxLength", lambda v: isinstance(v, str), lambda v, b: len(v) > b, "Too long: may not be longer than {bound}"),
    ("pattern", lambda v: isinstance(v, str), lambda v, b: not re.search(b, v),
     "Invalid value: {value}: should match '{bound}'"),
    ("minItems", lambda v: isinstance(v, list), lambda v, b: len(v) < b, "should have at least {bound} items"),
    ("maxItems", lambda v: isinstance(v, list), lambda v, b: len(v) > b,
     "Too many: {size}: must have at most {bound} items"),
)


def check(
    schema: dict[str, Any], value: Any, path: str, causes: list[dict[str, str]], *, unknown_fields: bool = False
) -> None:
    """Structural OpenAPI v3 (CRD subset) validation; fast enough for 1 MiB objects.

    CEL ``x-kubernetes-validations`` and ``format`` are not enforced (documented limitation);
    anything outside the subset falls back to jsonschema. A number must be finite (JSON, and so the
    API server, has no NaN or infinity; YAML has). ``unknown_fields`` reports fields an object's
    ``properties`` do not declare, as the API server's strict field validation does (it prunes them
    otherwise)."""

    def bad(message: str) -> None:
        causes.append({"reason": "FieldValueInvalid", "message": message, "field": path.lstrip(".")})

    if value is None and schema.get("nullable"):
        return
    if not _HANDLED.issuperset(schema):
        for error in jsonschema.Draft4Validator(schema).iter_errors(value):
            bad(error.message)
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            bad(f"must be an integer or a string, got {_short(value)}")
        return
    kind = schema.get("type")
    if kind:
        expected = _TYPES.get(kind, object)
        if not isinstance(value, expected) or (kind in {"integer", "number"} and isinstance(value, bool)):
            bad(f"Invalid value: {_short(value)}: must be of type {kind}")
            return
        if isinstance(value, float) and not math.isfinite(value):
            bad(f"Invalid value: {value}: must be a finite number")
            return
    for sub in ("anyOf", "oneOf"):
        if sub in schema:
            options = schema[sub]
            if not any(not _causes(option, value) for option in options):
                bad(f"must match {sub} of the allowed schemas")
    for option in schema.get("allOf", ()):
        check(option, value, path, causes, unknown_fields=unknown_fields)
    if "enum" in schema and value not in schema["enum"]:
        bad(f"Unsupported value: {_short(value)}: supported values: {schema['enum']}")
    for keyword, applies, fails, message in _BOUNDS:
        if keyword in schema and applies(value) and fails(value, schema[keyword]):
            bad(message.format(value=_short(value), bound=schema[keyword], size=_size(value)))
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            fits = _fits(items)
            for index, item in enumerate(value):
                if not fits(item):
                    check(items, item, f"{path}[{index}]", causes, unknown_fields=unknown_fields)
    elif isinstance(value, dict):
        for required in schema.get("required", ()):
            if required not in value:
                causes.append(
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value",
                        "field": f"{path}.{required}".lstrip("."),
                    }
                )
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            bad(f"must have at most {schema['maxProperties']} properties")
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        fits = _fits(extra) if isinstance(extra, dict) else _never
        for key, item in value.items():
            if key in properties:
                check(properties[key], item, f"{path}.{key}", causes, unknown_fields=unknown_fields)
            elif isinstance(extra, dict):
                if not fits(item):
                    check(extra, item, f"{path}.{key}", causes, unknown_fields=unknown_fields)
            elif unknown_fields and properties and not extra and not schema.get("x-kubernetes-preserve-unknown-fields"):
                causes.append({"reason": "FieldValueInvalid", "field": f"{path}.{key}".lstrip("."),
                               "message": f"unknown field (declared: {', '.join(sorted(properties))})"})


def _never(value: Any) -> bool:
    return False


_LEAF_KEYWORDS = {"type", "minimum", "maximum", "description", "format"}
_FITS: dict[int, tuple[dict[str, Any], Callable[[Any], bool]]] = {}


def _fits(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """A quick yes for the values of a plain number schema (type and bounds only): the maps of a
    NetworkTopology hold millions. A no, or any other schema, goes to ``check``, which words the error."""
    cached = _FITS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    fits = _never
    if schema.get("type") in ("number", "integer") and _LEAF_KEYWORDS.issuperset(schema):
        types = (int, float) if schema["type"] == "number" else (int,)
        low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)

        def fits(value: Any) -> bool:
            return type(value) in types and low <= value <= high and (type(value) is int or math.isfinite(value))

    _FITS[id(schema)] = (schema, fits)
    return fits


def prune_and_default(schema: dict[str, Any], value: Any, *, root: bool = False) -> Any:
    """What the real API server does to a structural schema's objects before validation: unknown
    fields are dropped (unless ``x-kubernetes-preserve-unknown-fields``) and ``default`` values are
    filled in. ``metadata`` at the root is left alone (the server handles it separately)."""
    if isinstance(value, dict) and schema.get("type") == "object":
        if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
            return value
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key in list(value):
            if root and key in {"metadata", "apiVersion", "kind"}:
                continue
            if key in properties:
                value[key] = prune_and_default(properties[key], value[key])
            elif isinstance(extra, dict):
                value[key] = prune_and_default(extra, value[key])
            elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
                continue
            else:
                del value[key]
        for key, sub in properties.items():
            if key not in value and isinstance(sub, dict) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune_and_default(schema["items"], item) for item in value]
    return value


def _causes(schema: dict[str, Any], value: Any) -> list[dict[str, str]]:
    causes: list[dict[str, str]] = []
    check(schema, value, "", causes)
    return causes


@cache
def crd_schemas(directory: Path = CRD_DIR) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every served version of the CRDs in ``directory``."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(directory.glob("*.y*ml")):
        for crd in yaml.safe_load_all(path.read_text()):
            if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            for version in spec.get("versions", ()):
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if schema is not None:
                    schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = schema
    return schemas


def value_errors(schema: dict[str, Any], value: Any, *, unknown_fields: bool = False) -> dict[str, list[str]]:
    """Structural errors of ``value`` by ``schema``, by field path (``spec.workloads[0].name``); empty
    when it conforms."""
    causes: list[dict[str, str]] = []
    check(schema, value, "", causes, unknown_fields=unknown_fields)
    errors: dict[str, list[str]] = {}
    for cause in causes:
        errors.setdefault(cause["field"], []).append(cause["message"])
    return errors


def document_errors(document: Mapping[str, Any], *, unknown_fields: bool = False) -> dict[str, list[str]]:
    """Structural errors of a resource by its CRD's schema, by field path; empty when it conforms or
    no CRD of ours defines its apiVersion and kind."""
    schema = crd_schemas().get((str(document.get("apiVersion")), str(document.get("kind"))))
    if schema is None:
        return {}
    return value_errors(schema, document, unknown_fields=unknown_fields)
