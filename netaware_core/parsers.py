"""The one loader of request bodies (JSON or YAML).

Every API view parses bodies with the parser classes here (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``)
and every page that takes a document calls ``load_document``: one set of limits (size, nesting depth,
no YAML aliases) and one set of messages (docs/api.md). Their errors reach the client in the one 400
shape of ``netaware_core.api_errors``, under the path ``BODY``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from django.conf import settings
from rest_framework import exceptions, parsers

from netaware_core.fielderrors import BODY
from netaware_core.yamlsafe import DEFAULT_MAX_DEPTH, UnsafeYAMLError, load_yaml

__all__ = ["BODY", "YAML_MEDIA_TYPES", "BodyError", "JSONParser", "YAMLParser", "load_document"]

YAML_MEDIA_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")


class BodyError(ValueError):
    """A body that is not one acceptable JSON/YAML document; the message says why (and where)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_document(
    data: bytes | str, *, yaml_syntax: bool, max_bytes: int | None = None, max_depth: int = DEFAULT_MAX_DEPTH
) -> Any:
    """The single document in ``data`` (JSON, or YAML when ``yaml_syntax``), or BodyError.

    YAML goes through ``netaware_core.yamlsafe`` (no aliases/anchors, depth-capped) and must hold exactly one
    document; JSON refuses NaN/Infinity literals (as DRF's strict mode does) and a nesting that would
    exhaust the recursion limit. Syntax errors name the line and column.
    """
    if max_bytes is not None and len(data) > max_bytes:
        raise BodyError(f"the body is {len(data)} bytes, more than the {max_bytes} accepted (MAX_REQUEST_BYTES)")
    if not yaml_syntax:
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            return json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError as exc:
            raise BodyError(f"JSON parse error - the body is not UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise BodyError(f"JSON parse error - {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
        except ValueError as exc:
            raise BodyError(f"JSON parse error - {exc}") from None
        except RecursionError:
            raise BodyError("JSON parse error - the document is nested too deeply") from None
    try:
        documents = [doc for doc in load_yaml(data, multi=True, max_depth=max_depth) if doc is not None]
    except UnsafeYAMLError as exc:
        raise BodyError(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise BodyError(f"YAML parse error{where}: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise BodyError("YAML parse error: the document is nested too deeply") from None
    if len(documents) != 1:
        raise BodyError(f"expected exactly one YAML document, got {len(documents)}")
    return documents[0]


class _BodyParser(parsers.BaseParser):
    yaml_syntax = False

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        data = stream.read(limit + 1 if limit else -1) if stream is not None else b""
        try:
            return load_document(data, yaml_syntax=self.yaml_syntax, max_bytes=limit)
        except BodyError as exc:
            raise exceptions.ParseError(str(exc)) from None


class JSONParser(_BodyParser):
    media_type = "application/json"
    renderer_class = parsers.JSONParser.renderer_class


class YAMLParser(_BodyParser):
    """One class per YAML media type: DRF picks a parser by matching its ``media_type``."""

    media_type = "application/yaml"
    yaml_syntax = True


class XYAMLParser(YAMLParser):
    media_type = "application/x-yaml"


class TextYAMLParser(YAMLParser):
    media_type = "text/yaml"


class TextXYAMLParser(YAMLParser):
    media_type = "text/x-yaml"
