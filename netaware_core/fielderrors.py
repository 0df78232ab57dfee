"""The one error type for input that is wrong at a field path (framework-free).

Every parser and validator of user input (resource documents, selectors, profiles, scenarios,
queries files, topology documents, the AppGroup service) raises a subclass: the subclass says which
kind of input, ``errors`` maps dotted/indexed field paths (``spec.workloads[2].selector``; "" for the
input as a whole) to messages. The API turns any of them into its one 400 shape
(netaware_core/api_errors.py); the CLIs print ``str(exc)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["BODY", "FieldError", "error_body"]

# The field path of the input as a whole (a body that does not parse, is not an object, is too large).
BODY = "(document)"


class FieldError(ValueError):
    """Input wrong at one field (``FieldError(path, message)``) or at several (``errors=``).

    ``field_path`` and ``message`` are the first problem; ``errors`` holds them all.
    """

    def __init__(
        self, field_path: str = "", message: str = "", *, errors: Mapping[str, str | Sequence[str]] | None = None
    ) -> None:
        raw = errors if errors else {field_path: [message]}
        self.errors: dict[str, list[str]] = {
            path: [messages] if isinstance(messages, str) else list(messages) for path, messages in raw.items()
        }
        self.field_path, messages = next(iter(self.errors.items()))
        self.message = messages[0] if messages else ""
        super().__init__(f"{self.field_path}: {self.message}" if self.field_path else self.message)


def error_body(errors: Mapping[str, list[str]], summary: str | None = None) -> dict[str, Any]:
    """The API's error document (every 400; docs/api.md): a one-line ``detail`` and the messages by
    field path."""
    if summary is None:
        first_path, first_messages = next(iter(errors.items()), (BODY, ["invalid request"]))
        count = sum(len(messages) for messages in errors.values())
        more = f" (and {count - 1} more)" if count > 1 else ""
        summary = f"{first_path}: {first_messages[0]}{more}" if first_path not in ("", BODY) else f"{first_messages[0]}{more}"
    return {"detail": summary, "errors": {path: list(messages) for path, messages in errors.items()}}
