"""Syntax rules shared by the models, the API and the CR conversion (no Django imports).

Every check returns or raises messages that name what is wrong; callers prefix the field path.
Label syntax follows k8s.io/apimachinery/pkg/util/validation (IsQualifiedName, IsValidLabelValue).
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping
from typing import Any

from netaware_core.fielderrors import FieldError

# Used verbatim in the CRD schemas so the API server enforces the same syntax.
DNS1123_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
LABEL_KEY_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
# Maximum of a dependency's maxNetworkCost (scheduler-plugins' AppGroup CRD bound).
MAX_NETWORK_COST = 10000

_NAME_PART_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_PATTERN)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_PATTERN)

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(FieldError):
    """An invalid label selector; ``field_path`` is relative to the selector (``matchExpressions[0].values``)."""


_SHORT = reprlib.Repr()
_SHORT.maxstring = 50
_SHORT.maxother = 50
_SHORT.maxlong = 30
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 3
_SHORT.maxlevel = 2
SHORT_LIMIT = 80


def short(value: object) -> str:
    """``repr(value)`` of at most SHORT_LIMIT characters: messages echo user input, which may be huge."""
    text = _SHORT.repr(value)
    return text if len(text) <= SHORT_LIMIT else text[: SHORT_LIMIT - 3] + "..."


def _dns_error(value: object, what: str, limit: int, pattern: re.Pattern[str], allowed: str) -> str | None:
    if not isinstance(value, str) or not value:
        return f"{what} must be a non-empty string"
    if len(value) > limit:
        return f"{what} {short(value)} is longer than {limit} characters"
    if not pattern.match(value):
        return f"{what} {short(value)} must consist of {allowed}, and start and end with an alphanumeric"
    return None


def dns1123_label_error(value: str, what: str = "name") -> str | None:
    return _dns_error(value, what, 63, _DNS1123_LABEL_RE, "lower case alphanumerics or '-'")


def dns1123_subdomain_error(value: str, what: str = "name") -> str | None:
    return _dns_error(value, what, 253, _DNS1123_SUBDOMAIN_RE, "lower case alphanumerics, '-' or '.'")


def label_key_error(key: object) -> str | None:
    if not isinstance(key, str) or not key:
        return "label key must be a non-empty string"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"label key {short(key)} has an empty prefix"
        prefix_error = dns1123_subdomain_error(prefix, "label key prefix")
        if prefix_error:
            return prefix_error
    if not name:
        return f"label key {short(key)} has an empty name part"
    return _name_part_error(name, f"label key {short(key)}: name part")


def label_value_error(value: object) -> str | None:
    if not isinstance(value, str):
        return f"label value {short(value)} must be a string"
    if value == "":
        return None
    return _name_part_error(value, f"label value {short(value)}")


def _name_part_error(value: str, what: str) -> str | None:
    """The rule a label value and a label key's name part share (Kubernetes' qualified name)."""
    if len(value) > 63:
        return f"{what} is longer than 63 characters"
    if not _NAME_PART_RE.match(value):
        return f"{what} must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
    return None


_IN_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")


def split_requirements(text: str) -> list[str]:
    """Split on commas that are not inside parentheses ("a in (x,y),b=c" -> two requirements)."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts]


def parse_selector_string(text: str) -> dict[str, Any]:
    """The paper's ``app=frontend`` form (and kubectl's -l syntax) as matchLabels/matchExpressions."""
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    if not text.strip():
        raise SelectorError("", "selector must not be empty")
    for index, requirement in enumerate(split_requirements(text)):
        where = f"requirement {index + 1} ({short(requirement)})"
        if not requirement:
            raise SelectorError("", f"{where} is empty")
        set_match = _IN_RE.match(requirement)
        if set_match:
            key, op, values_text = set_match.groups()
            values = [v.strip() for v in values_text.split(",") if v.strip()]
            expressions.append({"key": key, "operator": "In" if op == "in" else "NotIn", "values": values})
        elif "!=" in requirement:
            key, _, value = requirement.partition("!=")
            expressions.append({"key": key.strip(), "operator": "NotIn", "values": [value.strip()]})
        elif "=" in requirement:
            key, _, value = requirement.partition("==") if "==" in requirement else requirement.partition("=")
            key, value = key.strip(), value.strip()
            if key in match_labels and match_labels[key] != value:
                raise SelectorError("", f"{where} conflicts with an earlier value for {short(key)}")
            match_labels[key] = value
        elif requirement.startswith("!"):
            expressions.append({"key": requirement[1:].strip(), "operator": "DoesNotExist", "values": []})
        else:
            expressions.append({"key": requirement, "operator": "Exists", "values": []})
    return _selector(match_labels, expressions)


def _selector(match_labels: dict[str, str], expressions: list[dict[str, Any]]) -> dict[str, Any]:
    """{matchLabels?, matchExpressions?}, an empty part left out."""
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector


def normalize_selector(value: object) -> dict[str, Any]:
    """Validate a selector (string or mapping) and return it as {matchLabels?, matchExpressions?}.

    Raises SelectorError with a path relative to the selector. An empty selector is refused: in
    Kubernetes it would select every pod of the namespace, never what a workload means.
    """
    if isinstance(value, str):
        value = parse_selector_string(value)
    if not isinstance(value, Mapping):
        raise SelectorError(
            "", "selector must be an object with matchLabels/matchExpressions or a string like 'app=frontend'"
        )
    unknown = sorted(set(value) - {"matchLabels", "matchExpressions"})
    if unknown:
        raise SelectorError(unknown[0], "unknown selector field (expected matchLabels or matchExpressions)")
    labels = value.get("matchLabels") or {}
    expressions = value.get("matchExpressions") or []
    if not isinstance(labels, Mapping):
        raise SelectorError("matchLabels", "must be an object of label key to value")
    if not isinstance(expressions, list | tuple):
        raise SelectorError("matchExpressions", "must be a list")
    normalized_labels: dict[str, str] = {}
    for key, label_value in labels.items():
        error = label_key_error(key)
        if error:
            raise SelectorError(f"matchLabels.{key}", error)
        error = label_value_error(label_value)
        if error:
            raise SelectorError(f"matchLabels.{key}", error)
        normalized_labels[str(key)] = str(label_value)
    normalized_expressions: list[dict[str, Any]] = []
    for index, expression in enumerate(expressions):
        path = f"matchExpressions[{index}]"
        if not isinstance(expression, Mapping):
            raise SelectorError(path, "must be an object with key, operator and values")
        extra = sorted(set(expression) - {"key", "operator", "values"})
        if extra:
            raise SelectorError(f"{path}.{extra[0]}", "unknown field")
        key = expression.get("key")
        error = label_key_error(key)
        if error:
            raise SelectorError(f"{path}.key", error)
        operator = expression.get("operator")
        if operator not in OPERATORS:
            raise SelectorError(f"{path}.operator", f"{short(operator)} is not one of {', '.join(OPERATORS)}")
        values = expression.get("values") or []
        if not isinstance(values, list | tuple):
            raise SelectorError(f"{path}.values", "must be a list of strings")
        if operator in ("In", "NotIn") and not values:
            raise SelectorError(f"{path}.values", f"must be non-empty when operator is {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            raise SelectorError(f"{path}.values", f"must be empty when operator is {operator}")
        for value_index, item in enumerate(values):
            error = label_value_error(item)
            if error:
                raise SelectorError(f"{path}.values[{value_index}]", error)
        normalized_expressions.append(
            {"key": str(key), "operator": operator, "values": [str(v) for v in values]}
        )
    if not normalized_labels and not normalized_expressions:
        raise SelectorError("", "selector must not be empty (it would select every pod)")
    return _selector(normalized_labels, normalized_expressions)
