"""Request parsing guards shared by every API view."""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, plus: a document nested deeper than Python's recursion limit is a 400
    naming the problem, not a RecursionError escaping as a 500 (the stdlib decoder recurses per
    level; ``[[[[...]]]]`` a few thousand deep is enough)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply") from None
