"""The semantic rules of an AppGroup document: what its CRD schema cannot state (no Django imports).

``apps.appgroups.documents.spec_from_document`` checks a document's structure with the CRD's
openAPIV3Schema, then calls ``semantic_errors`` here: metadata names, label selectors (the schema's
CEL rules and label syntax), quantities, the positive sensitivity sum, positive dependency weights, minZones within replicas, unique workload names and
dependency targets that exist, are not the workload itself and are not repeated. Every entry point
(API, admin, editors, import, cluster sync) reaches these through that one reader.
Label syntax follows k8s.io/apimachinery/pkg/util/validation (IsQualifiedName, IsValidLabelValue).
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Mapping
from typing import Any

from netaware_core import quantity
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


def parse_label_selector(text: str) -> dict[str, Any]:
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
    return _label_selector(match_labels, expressions)


def _label_selector(match_labels: dict[str, str], expressions: list[dict[str, Any]]) -> dict[str, Any]:
    """{matchLabels?, matchExpressions?}, an empty part left out."""
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector


def normalize_label_selector(value: object) -> dict[str, Any]:
    """Validate a selector (string or mapping) and return it as {matchLabels?, matchExpressions?}.

    Raises SelectorError with a path relative to the selector. An empty selector is refused: in
    Kubernetes it would select every pod of the namespace, never what a workload means.
    """
    if isinstance(value, str):
        value = parse_label_selector(value)
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
    return _label_selector(normalized_labels, normalized_expressions)


# --- the document's cross-field rules ----------------------------------------------------------

POSITIVE_SUM = "latency, bandwidth and lossrate must have a positive sum"  # also the CRD's CEL message
POSITIVE_WEIGHT = "weight must be greater than 0"  # also the CRD's CEL message


def semantic_errors(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    """The rules of our AppGroup document that its CRD schema cannot state, by field path, every
    violation at once. ``doc`` has passed the schema: types, required fields and bounds hold."""
    errors: dict[str, list[str]] = {}

    def add(path: str, message: str | None) -> None:
        if message:
            errors.setdefault(path, []).append(message)

    metadata = doc.get("metadata") or {}
    if not metadata.get("name"):
        add("metadata.name", "Required value")
    else:
        add("metadata.name", dns1123_subdomain_error(metadata["name"], "name"))
    if metadata.get("namespace"):
        add("metadata.namespace", dns1123_label_error(metadata["namespace"], "namespace"))
    workloads = doc["spec"]["workloads"]
    first: dict[str, int] = {}
    for index, workload in enumerate(workloads):
        base = f"spec.workloads[{index}]"
        name = workload["name"]
        if name in first:
            add(f"{base}.name", f"duplicate workload name {short(name)} (also workloads[{first[name]}])")
        first.setdefault(name, index)
        _label_selector_errors(workload["selector"], f"{base}.selector", add)
        requests = workload.get("resources") or {}
        for key, parse in (("cpu", quantity.cpu_millicores), ("memory", quantity.memory_bytes)):
            add(f"{base}.resources.{key}", _quantity_error(requests.get(key), parse))
        _min_zones_errors(workload, base, doc["spec"].get("minZones"), add)
    for index, workload in enumerate(workloads):
        _dependency_errors(workload, f"spec.workloads[{index}]", first, add)
    return errors


MIN_ZONES_REPLICAS = "replicas must be at least minZones (one zone per replica at most)"  # the CRD's CEL message


def _min_zones_errors(workload: Mapping[str, Any], base: str, group_min: Any,
                      add: Callable[[str, str | None], None]) -> None:
    """A workload cannot spread over more zones than it has replicas: its own ``minZones``, else the
    AppGroup's (the CRD's two CEL rules)."""
    replicas = workload.get("replicas") or 1
    own = workload.get("minZones")
    if own is not None and own > replicas:
        add(f"{base}.minZones", f"{MIN_ZONES_REPLICAS}: minZones {own}, replicas {replicas}")
    elif own is None and group_min is not None and group_min > replicas:
        add(f"{base}.replicas", f"must be at least spec.minZones ({group_min}) to spread over that many zones, got "
                                f"{replicas} (set this workload's minZones to 1 to exempt it)")


def _label_selector_errors(selector: Any, path: str, add: Callable[[str, str | None], None]) -> None:
    try:
        normalize_label_selector(selector)
    except SelectorError as exc:
        add(f"{path}.{exc.field_path}" if exc.field_path else path, exc.message)


def _quantity_error(value: Any, parse: Callable[[Any], float | int]) -> str | None:
    if value is None:
        return None
    try:
        parse(value)
    except quantity.QuantityError as exc:
        return str(exc)
    return None


def _dependency_errors(
    workload: Mapping[str, Any], base: str, names: Mapping[str, int], add: Callable[[str, str | None], None]
) -> None:
    seen: set[str] = set()
    for index, dependency in enumerate(workload.get("dependencies") or ()):
        path = f"{base}.dependencies[{index}]"
        target = dependency["name"]
        if target == workload["name"]:
            add(f"{path}.name", f"workload {short(target)} cannot depend on itself")
        elif target not in names:
            add(f"{path}.name", f"unknown dependency target {short(target)} (not a workload of this AppGroup)")
        elif target in seen:
            add(f"{path}.name", f"duplicate dependency on {short(target)}")
        seen.add(target)
        metrics = dependency["metrics"]
        if sum(metrics.get(key, 0) for key in ("latency", "bandwidth", "lossrate")) <= 0:
            add(f"{path}.metrics", POSITIVE_SUM)
        add(f"{path}.minBandwidth", _quantity_error(dependency.get("minBandwidth"), quantity.bandwidth_bps))
        if dependency.get("weight") is not None and dependency["weight"] <= 0:
            add(f"{path}.weight", POSITIVE_WEIGHT)
