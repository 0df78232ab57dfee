"""The one YAML loader for user-supplied text (API bodies, dashboard editor, CLI files, scenarios).

``yaml.safe_load`` is safe against code execution but not against size amplification: a 531-byte
"billion laughs" document of nested aliases expands to hundreds of megabytes. None of our formats
(Kubernetes resources, scenarios, topology documents) needs anchors or aliases, so they are rejected
outright, before anything is constructed: the document's events are scanned first (C parser when
available), then loaded. Depth and, optionally, node count are capped too. Framework-free.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["DEFAULT_MAX_DEPTH", "UnsafeYAMLError", "load_yaml", "short_repr"]

DEFAULT_MAX_DEPTH = 100

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UnsafeYAMLError(yaml.YAMLError):
    """Input rejected by a safety rule (alias, anchor, size, depth, node count), not by YAML syntax.

    A ``yaml.YAMLError`` subclass so existing ``except yaml.YAMLError`` handlers report it;
    ``problem`` is the whole message (it names the line when there is one); ``line`` is 1-based or None.
    """

    def __init__(self, problem: str, line: int | None = None) -> None:
        self.problem = problem
        self.line = line
        self.problem_mark = None
        super().__init__(problem)


def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to about ``limit`` characters, so echoed input can't bloat an error message."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: max(limit - 15, 10)]}... ({len(text)} chars)"


def _check_events(text: str, *, max_nodes: int | None, max_depth: int) -> None:
    nodes = 0
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.AliasEvent):
            raise UnsafeYAMLError(f"YAML aliases are not accepted (alias *{str(event.anchor)[:40]}, line {line})", line)
        if isinstance(event, yaml.NodeEvent):
            if event.anchor is not None:
                raise UnsafeYAMLError(f"YAML aliases are not accepted (anchor &{event.anchor[:40]}, line {line})", line)
            nodes += 1
            if max_nodes is not None and nodes > max_nodes:
                raise UnsafeYAMLError(f"YAML document has more than {max_nodes} nodes (line {line})", line)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                raise UnsafeYAMLError(f"YAML document is nested deeper than {max_depth} levels (line {line})", line)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_yaml(
    text: str | bytes,
    *,
    max_bytes: int | None = None,
    multi: bool = False,
    max_nodes: int | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Parse user-supplied YAML: one document (``multi=False``) or the list of all documents.

    Raises ``UnsafeYAMLError`` for aliases/anchors, text over ``max_bytes``, more than ``max_nodes``
    nodes or nesting over ``max_depth``; ``yaml.YAMLError`` for syntax errors; bytes that are not
    UTF-8 raise ``UnsafeYAMLError`` too (one exception type for callers to catch).
    """
    size = len(text)
    if max_bytes is not None and size > max_bytes:
        raise UnsafeYAMLError(f"YAML document is {size} bytes, more than the {max_bytes} accepted")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnsafeYAMLError(f"YAML input is not UTF-8 (byte {exc.start})") from None
    _check_events(text, max_nodes=max_nodes, max_depth=max_depth)
    if multi:
        return list(yaml.load_all(text, Loader=_Loader))
    return yaml.load(text, Loader=_Loader)
