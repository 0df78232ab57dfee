"""AppGroup documents <-> ``AppGroupSpec`` (pure; no Django).

A *document* is an AppGroup as a Kubernetes object (YAML or JSON). Two flavours are read and written:

* ``netaware``: our CRD ``appgroups.netaware.io`` (k8s/crds/appgroup.yaml), the source paper's shape
  (workloads with selector and weight; dependencies with latency/bandwidth/lossrate sensitivities)
  plus the KEP fields (topologySortingAlgorithm, controller reference, maxNetworkCost, minBandwidth)
  and optional replicas/resources hints.
* ``diktyo``: scheduler-plugins' ``appgroup.diktyo.x-k8s.io/v1alpha1`` AppGroup. It has no selector
  object, importance weight, sensitivities or per-dependency weight; on export those travel in the
  ``netaware.io/appgroup-extras`` annotation so a diktyo export re-imports without loss. The diktyo
  ``workload.selector`` (the value of the pod label ``appgroup.diktyo.x-k8s.io.workload``) is our
  workload name.

``spec_from_document`` is the one validator of AppGroups: every entry point (the API's own JSON, the
admin's forms, the dashboard's editors, the API import, the cluster sync, the demo and evaluation
commands) turns its input into our document and reads it here, so the same problem gets the same
message everywhere:

1. structure: the CRD's openAPIV3Schema through ``netaware_core.crdschema`` (types, required fields,
   enums, patterns, bounds such as ``replicas >= 1``), every violation at once;
2. semantics: ``validators.semantic_errors``, what the schema cannot state (its CEL rules, names,
   selectors, quantities, the dependency graph), every violation at once;
3. conversion into the frozen ``AppGroupSpec``, which cannot fail after 1 and 2.

A diktyo document is first translated into ours (its own structure checked by ``DIKTYO_SCHEMA``).
Errors are a ``DocumentError`` by field path of the document read
(``spec.workloads[2].dependencies[0].metrics``); a caller that built our document from another shape
maps the paths back to its own fields with a ``PathMap``. Rules that need the database (a name
already taken, selectors that overlap other AppGroups) are ``services.check_appgroup``'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from netaware_core import crdschema, quantity
from netaware_core.fielderrors import FieldError

from . import toposort, validators
from .graph import (
    DEFAULT_DEPENDENCY_WEIGHT,
    AppGroupSpec,
    DependencySpec,
    LabelSelector,
    Sensitivity,
    WorkloadSpec,
)

GROUP = "netaware.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
APPGROUP_KIND = "AppGroup"
APPGROUP_PLURAL = "appgroups"

DIKTYO_APPGROUP_GROUP = "appgroup.diktyo.x-k8s.io"
DIKTYO_APPGROUP_API_VERSION = f"{DIKTYO_APPGROUP_GROUP}/v1alpha1"

# Pod labels naming the AppGroup a pod belongs to (ours, and scheduler-plugins').
APPGROUP_LABEL = "netaware.io/appgroup"
DIKTYO_APPGROUP_LABEL = DIKTYO_APPGROUP_GROUP
DIKTYO_WORKLOAD_LABEL = f"{DIKTYO_APPGROUP_GROUP}.workload"

EXTRAS_ANNOTATION = "netaware.io/appgroup-extras"
MAX_NETWORK_COST = validators.MAX_NETWORK_COST

Flavor = Literal["netaware", "diktyo"]
# Sensitivity given to dependencies read from diktyo documents without our extras annotation.
DEFAULT_SENSITIVITY = Sensitivity(1.0, 1.0, 1.0)


class DocumentError(FieldError):
    """An AppGroup document that cannot be accepted; ``errors`` maps its field paths to messages."""


class PathMap:
    """Field paths of our document -> the paths of the input it was built from (longest prefix wins,
    the rest of the path is kept): ``spec.workloads[1].dependencies[0].name`` ->
    ``workloads[1].dependencies[0].target``. Paths without a matching prefix are kept as they are."""

    def __init__(self, prefixes: Mapping[str, str] | None = None) -> None:
        self.prefixes: dict[str, str] = dict(prefixes or {})

    def __setitem__(self, ours: str, theirs: str) -> None:
        self.prefixes[ours] = theirs

    def __call__(self, path: str) -> str:
        probe = path
        while probe:
            if probe in self.prefixes:
                return self.prefixes[probe] + path[len(probe):]
            probe = probe[: max(probe.rfind("."), probe.rfind("["), 0)]
        return path

    def errors(self, errors: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        mapped: dict[str, list[str]] = {}
        for path, messages in errors.items():
            mapped.setdefault(self(path), []).extend(messages)
        return mapped


# --- reading: the one validator ----------------------------------------------------------------


def detect_flavor(doc: Mapping[str, Any]) -> Flavor:
    """Which AppGroup shape a document is, from apiVersion and kind (DocumentError otherwise)."""
    if not isinstance(doc, Mapping):
        raise DocumentError("", "the document must be an object (a Kubernetes object)")
    kind = doc.get("kind")
    if kind != APPGROUP_KIND:
        raise DocumentError("kind", f"must be {APPGROUP_KIND!r} (got {validators.short(kind)})")
    api_version = doc.get("apiVersion")
    if api_version == API_VERSION:
        return "netaware"
    if api_version == DIKTYO_APPGROUP_API_VERSION:
        return "diktyo"
    raise DocumentError(
        "apiVersion", f"must be {API_VERSION!r} or {DIKTYO_APPGROUP_API_VERSION!r} (got {validators.short(api_version)})"
    )


def spec_from_document(doc: Mapping[str, Any], *, default_namespace: str = "default") -> AppGroupSpec:
    """Our or the scheduler-plugins AppGroup document as a validated AppGroupSpec (DocumentError naming
    every problem by field path otherwise)."""
    paths = PathMap()
    if detect_flavor(doc) == "diktyo":
        doc = _diktyo_as_ours(doc, paths)
    try:
        ours = _with_label_selector_objects(doc)
    except DocumentError as exc:
        raise DocumentError(errors=paths.errors(exc.errors)) from None
    errors = crdschema.document_errors(ours)
    errors = _merged(errors, _semantic_best_effort(ours)) if errors else validators.semantic_errors(ours)
    if errors:
        raise DocumentError(errors=paths.errors(errors))
    return _spec(ours, default_namespace)


def _semantic_best_effort(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    """The semantic rules on a document that failed its schema: whatever they can judge (duplicate
    names, unknown dependency targets...) is reported with the schema's errors, so a user sees every
    mistake at once instead of one stage per fix. Rules that trip over a schema violation say nothing."""
    try:
        return validators.semantic_errors(doc)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError):
        return {}


def _merged(schema: dict[str, list[str]], semantic: dict[str, list[str]]) -> dict[str, list[str]]:
    """Schema errors plus the semantic ones about other fields: a semantic error on a field that
    holds a schema error (e.g. "positive sum" over a negative latency) would only repeat it."""
    out = {path: list(messages) for path, messages in schema.items()}
    for path, messages in semantic.items():
        if any(p == path or p.startswith((path + ".", path + "[")) for p in schema):
            continue
        out.setdefault(path, []).extend(messages)
    return out


def _with_label_selector_objects(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """``doc`` with the paper's ``app=frontend`` selector strings (our extension of the CRD) parsed
    into selector objects, so the CRD's schema can judge the rest."""
    spec = doc.get("spec")
    workloads = spec.get("workloads") if isinstance(spec, Mapping) else None
    if not isinstance(workloads, list) or not any(
        isinstance(w, Mapping) and isinstance(w.get("selector"), str) for w in workloads
    ):
        return doc
    items: list[Any] = []
    errors: dict[str, list[str]] = {}
    for index, workload in enumerate(workloads):
        if isinstance(workload, Mapping) and isinstance(workload.get("selector"), str):
            try:
                workload = {**workload, "selector": validators.parse_label_selector(workload["selector"])}
            except validators.SelectorError as exc:
                errors[f"spec.workloads[{index}].selector"] = [exc.message]
        items.append(workload)
    if errors:
        raise DocumentError(errors=errors)
    return {**doc, "spec": {**spec, "workloads": items}}  # type: ignore[dict-item]


def _spec(doc: Mapping[str, Any], default_namespace: str) -> AppGroupSpec:
    """A document that passed both checks as the frozen spec (nothing left to refuse)."""
    metadata = doc.get("metadata") or {}
    spec = doc["spec"]
    return AppGroupSpec(
        namespace=metadata.get("namespace") or default_namespace,
        name=metadata["name"],
        workloads=tuple(_workload(item) for item in spec["workloads"]),
        topology_sorting_algorithm=spec.get("topologySortingAlgorithm") or toposort.DEFAULT_ALGORITHM,
        topology_mode=spec.get("topologyMode") or "soft",
        min_zones=int(spec.get("minZones") or 1),
        rebalance_mode=spec.get("rebalanceMode") or "off",
    )


def _workload(item: Mapping[str, Any]) -> WorkloadSpec:
    controller = item.get("controller") or {}
    requests = item.get("resources") or {}
    return WorkloadSpec(
        name=item["name"],
        selector=label_selector_from_mapping(item["selector"]),  # the schema and the semantic step passed it
        weight=float(item.get("weight", 1.0)),
        dependencies=tuple(_dependency(dep) for dep in item.get("dependencies") or ()),
        controller_kind=controller.get("kind") or "",
        controller_name=controller.get("name") or "",
        replicas=int(item.get("replicas") or 1),
        cpu_request_millicores=quantity.cpu_millicores(requests["cpu"]) if requests.get("cpu") is not None else 0,
        memory_request_bytes=quantity.memory_bytes(requests["memory"]) if requests.get("memory") is not None else 0,
        min_zones=int(item["minZones"]) if item.get("minZones") is not None else None,
    )


def _dependency(dep: Mapping[str, Any]) -> DependencySpec:
    metrics = dep["metrics"]
    return DependencySpec(
        target=dep["name"],
        sensitivity=Sensitivity(*(float(metrics.get(key, 0.0)) for key in ("latency", "bandwidth", "lossrate"))),
        max_network_cost=float(dep["maxNetworkCost"]) if dep.get("maxNetworkCost") is not None else None,
        min_bandwidth_bps=quantity.bandwidth_bps(dep["minBandwidth"]) if dep.get("minBandwidth") is not None else None,
        weight=float(dep["weight"]) if dep.get("weight") is not None else DEFAULT_DEPENDENCY_WEIGHT,
    )


def label_selector_from_mapping(selector: Mapping[str, Any]) -> LabelSelector:
    """A validated selector dict ({matchLabels, matchExpressions}) as the frozen LabelSelector."""
    return LabelSelector(
        match_labels=dict(selector.get("matchLabels") or {}),
        match_expressions=tuple(
            (expr["key"], expr["operator"], tuple(expr.get("values") or ()))
            for expr in selector.get("matchExpressions") or ()
        ),
    )


def label_selector_to_mapping(selector: LabelSelector) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if selector.match_labels:
        result["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        result["matchExpressions"] = [
            {"key": key, "operator": operator, "values": list(values)}
            for key, operator, values in selector.match_expressions
        ]
    return result


# --- the diktyo flavour, read as ours ----------------------------------------------------------

_DIKTYO_WORKLOAD_INFO: dict[str, Any] = {
    "type": "object",
    "required": ["kind", "name", "selector"],
    "properties": {
        "kind": {"type": "string", "minLength": 1},
        "name": {"type": "string", "minLength": 1},
        "selector": {"type": "string", "minLength": 1},
        "apiVersion": {"type": "string"},
        "namespace": {"type": "string"},
    },
}
# The part of scheduler-plugins' AppGroup CRD (appgroup.diktyo.x-k8s.io/v1alpha1) that has no
# counterpart in ours; the rest is checked by our CRD once the document is translated.
DIKTYO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["metadata", "spec"],
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {"annotations": {"type": "object", "additionalProperties": {"type": "string"}}},
        },
        "spec": {
            "type": "object",
            "required": ["numMembers", "topologySortingAlgorithm", "workloads"],
            "properties": {
                "numMembers": {"type": "integer", "minimum": 1},
                "topologySortingAlgorithm": {"type": "string"},
                "workloads": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["workload"],
                        "properties": {
                            "workload": _DIKTYO_WORKLOAD_INFO,
                            "dependencies": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["workload"],
                                    "properties": {"workload": _DIKTYO_WORKLOAD_INFO},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def _diktyo_as_ours(doc: Mapping[str, Any], paths: PathMap) -> dict[str, Any]:
    """A diktyo document translated into ours; ``paths`` learns where each of our fields came from."""
    errors = crdschema.value_errors(DIKTYO_SCHEMA, doc)
    if errors:
        raise DocumentError(errors=errors)
    metadata, spec = doc["metadata"], doc["spec"]
    extras, extras_path = _extras(metadata)
    workloads = [_diktyo_workload(index, item, extras, extras_path, paths) for index, item in enumerate(spec["workloads"])]
    ours: dict[str, Any] = {"topologySortingAlgorithm": spec["topologySortingAlgorithm"], "workloads": workloads}
    for key in ("topologyMode", "minZones", "rebalanceMode"):
        if extras.get(key) is not None:
            ours[key] = extras[key]
            paths[f"spec.{key}"] = f"{extras_path}.{key}"
    return {"apiVersion": API_VERSION, "kind": APPGROUP_KIND,
            "metadata": {key: metadata[key] for key in ("name", "namespace") if key in metadata}, "spec": ours}


def _diktyo_workload(
    index: int, item: Mapping[str, Any], extras: Mapping[str, Any], extras_path: str, paths: PathMap
) -> dict[str, Any]:
    base = f"spec.workloads[{index}]"  # the same index in both shapes
    info = item["workload"]
    name = info["selector"]
    extra_path = f"{extras_path}.{name}"
    extra = (extras.get("workloads") or {}).get(name) or {}
    if not isinstance(extra, Mapping):
        raise DocumentError(extra_path, "must be an object")
    paths[f"{base}.name"] = f"{base}.workload.selector"
    paths[f"{base}.controller"] = f"{base}.workload"
    workload: dict[str, Any] = {"name": name, "controller": {"kind": info["kind"], "name": info["name"]},
                                "selector": {"matchLabels": {DIKTYO_WORKLOAD_LABEL: name}}}
    for key in ("selector", "weight", "replicas", "minZones"):
        if extra.get(key) is not None:
            workload[key] = extra[key]
            paths[f"{base}.{key}"] = f"{extra_path}.{key}"
    resources = {key: extra[key] for key in ("cpu", "memory") if extra.get(key) is not None}
    if resources:
        workload["resources"] = resources
        for key in resources:
            paths[f"{base}.resources.{key}"] = f"{extra_path}.{key}"
    sensitivities = extra.get("dependencies") or {}
    weights = extra.get("dependencyWeights") or {}
    dependencies = []
    for dep_index, dep in enumerate(item.get("dependencies") or ()):
        dep_base = f"{base}.dependencies[{dep_index}]"
        target = dep["workload"]["selector"]
        paths[f"{dep_base}.name"] = f"{dep_base}.workload.selector"
        metrics: Any = {"latency": DEFAULT_SENSITIVITY.latency, "bandwidth": DEFAULT_SENSITIVITY.bandwidth,
                        "lossrate": DEFAULT_SENSITIVITY.lossrate}
        if isinstance(sensitivities, Mapping) and sensitivities.get(target) is not None:
            metrics = sensitivities[target]
            paths[f"{dep_base}.metrics"] = f"{extra_path}.dependencies.{target}"
        entry = {"name": target, "metrics": metrics}
        entry.update({key: dep[key] for key in ("maxNetworkCost", "minBandwidth") if dep.get(key) is not None})
        if isinstance(weights, Mapping) and weights.get(target) is not None:
            entry["weight"] = weights[target]
            paths[f"{dep_base}.weight"] = f"{extra_path}.dependencyWeights.{target}"
        dependencies.append(entry)
    if dependencies:
        workload["dependencies"] = dependencies
    return workload


def _extras(metadata: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """The extras annotation ({topologyMode?, rebalanceMode?, workloads: {name: fields}}: what diktyo has no field for) and its path."""
    path = f"metadata.annotations[{EXTRAS_ANNOTATION}]"
    raw = (metadata.get("annotations") or {}).get(EXTRAS_ANNOTATION)
    if raw in (None, ""):
        return {}, path
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DocumentError(path, f"is not valid JSON: {exc.msg}") from None
    if not isinstance(parsed, Mapping):
        raise DocumentError(path, "must be a JSON object")
    if not isinstance(parsed.get("workloads") or {}, Mapping):
        raise DocumentError(f"{path}.workloads", "must be an object of workload name to fields")
    return parsed, path


# --- writing -----------------------------------------------------------------------------------


def _dependency_document(dependency: DependencySpec) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": dependency.target,
        "metrics": {
            "latency": dependency.sensitivity.latency,
            "bandwidth": dependency.sensitivity.bandwidth,
            "lossrate": dependency.sensitivity.lossrate,
        },
    }
    if dependency.max_network_cost is not None:
        doc["maxNetworkCost"] = int(dependency.max_network_cost)
    if dependency.min_bandwidth_bps is not None:
        doc["minBandwidth"] = quantity.format_bytes(dependency.min_bandwidth_bps)
    if dependency.weight != DEFAULT_DEPENDENCY_WEIGHT:
        # The default is left out, so the canonical document (and spec_hash) of an unweighted AppGroup
        # is what it was before weights existed.
        doc["weight"] = dependency.weight
    return doc


def _workload_document(workload: WorkloadSpec) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": workload.name,
        "selector": label_selector_to_mapping(workload.selector),
        "weight": workload.weight,
    }
    if workload.controller_kind or workload.controller_name:
        controller: dict[str, Any] = {}
        if workload.controller_kind:
            controller["kind"] = workload.controller_kind
        if workload.controller_name:
            controller["name"] = workload.controller_name
        doc["controller"] = controller
    doc["replicas"] = workload.replicas
    if workload.min_zones is not None:
        doc["minZones"] = workload.min_zones
    resources: dict[str, str] = {}
    if workload.cpu_request_millicores:
        resources["cpu"] = quantity.format_cpu(workload.cpu_request_millicores)
    if workload.memory_request_bytes:
        resources["memory"] = quantity.format_bytes(workload.memory_request_bytes)
    if resources:
        doc["resources"] = resources
    if workload.dependencies:
        doc["dependencies"] = [_dependency_document(dep) for dep in workload.dependencies]
    return doc


def spec_document(spec: AppGroupSpec) -> dict[str, Any]:
    """The ``spec`` of our AppGroup document (canonical: same spec -> same document). ``topologyMode`` is
    always written: the API server defaults it, so the cluster's copy carries it too; ``minZones`` only when
    it asks for more than one zone, ``rebalanceMode`` only when not ``off`` (no CRD default; so an AppGroup without
    them keeps its canonical document and hash)."""
    out: dict[str, Any] = {
        "topologySortingAlgorithm": spec.topology_sorting_algorithm,
        "topologyMode": spec.topology_mode,
    }
    if spec.min_zones != 1:
        out["minZones"] = spec.min_zones
    if spec.rebalance_mode != "off":
        out["rebalanceMode"] = spec.rebalance_mode
    out["workloads"] = [_workload_document(workload) for workload in spec.workloads]
    return out


def spec_hash(spec: AppGroupSpec) -> str:
    """SHA-256 of the canonical spec document: equal hashes mean nothing to apply."""
    payload = json.dumps(
        {"namespace": spec.namespace, "name": spec.name, "spec": spec_document(spec)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _diktyo_info(workload: WorkloadSpec, namespace: str) -> dict[str, Any]:
    return {
        "kind": workload.controller_kind or "Deployment",
        "name": workload.controller_name or workload.name,
        "selector": workload.name,
        "apiVersion": "apps/v1",
        "namespace": namespace,
    }


def _extras_document(spec: AppGroupSpec) -> dict[str, Any]:
    workloads: dict[str, Any] = {}
    for workload in spec.workloads:
        entry: dict[str, Any] = {
            "weight": workload.weight,
            "selector": label_selector_to_mapping(workload.selector),
        }
        entry["replicas"] = workload.replicas
        if workload.min_zones is not None:
            entry["minZones"] = workload.min_zones
        if workload.cpu_request_millicores:
            entry["cpu"] = quantity.format_cpu(workload.cpu_request_millicores)
        if workload.memory_request_bytes:
            entry["memory"] = quantity.format_bytes(workload.memory_request_bytes)
        if workload.dependencies:
            entry["dependencies"] = {
                dep.target: {
                    "latency": dep.sensitivity.latency,
                    "bandwidth": dep.sensitivity.bandwidth,
                    "lossrate": dep.sensitivity.lossrate,
                }
                for dep in workload.dependencies
            }
            weights = {dep.target: dep.weight for dep in workload.dependencies
                       if dep.weight != DEFAULT_DEPENDENCY_WEIGHT}
            if weights:
                entry["dependencyWeights"] = weights
        workloads[workload.name] = entry
    out: dict[str, Any] = {}
    if spec.topology_mode != "soft":
        out["topologyMode"] = spec.topology_mode
    if spec.min_zones != 1:
        out["minZones"] = spec.min_zones
    if spec.rebalance_mode != "off":
        out["rebalanceMode"] = spec.rebalance_mode
    out["workloads"] = workloads
    return out


def _diktyo_spec_document(spec: AppGroupSpec) -> dict[str, Any]:
    by_name = {workload.name: workload for workload in spec.workloads}
    workloads = []
    for workload in spec.workloads:
        entry: dict[str, Any] = {"workload": _diktyo_info(workload, spec.namespace)}
        deps = []
        for dep in workload.dependencies:
            dep_doc: dict[str, Any] = {"workload": _diktyo_info(by_name[dep.target], spec.namespace)}
            if dep.min_bandwidth_bps is not None:
                dep_doc["minBandwidth"] = quantity.format_bytes(dep.min_bandwidth_bps)
            if dep.max_network_cost is not None:
                dep_doc["maxNetworkCost"] = int(dep.max_network_cost)
            deps.append(dep_doc)
        if deps:
            entry["dependencies"] = deps
        workloads.append(entry)
    return {
        "numMembers": max(1, sum(workload.replicas for workload in spec.workloads)),
        "topologySortingAlgorithm": spec.topology_sorting_algorithm,
        "workloads": workloads,
    }


def document_from_spec(
    spec: AppGroupSpec,
    *,
    flavor: Flavor = "netaware",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The AppGroup document for ``spec`` in our shape or scheduler-plugins' (diktyo) shape."""
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace}
    if labels:
        metadata["labels"] = dict(labels)
    all_annotations = dict(annotations or {})
    if flavor == "netaware":
        doc: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": APPGROUP_KIND,
            "metadata": metadata,
            "spec": spec_document(spec),
        }
    elif flavor == "diktyo":
        all_annotations[EXTRAS_ANNOTATION] = json.dumps(
            _extras_document(spec), sort_keys=True, separators=(",", ":")
        )
        doc = {
            "apiVersion": DIKTYO_APPGROUP_API_VERSION,
            "kind": APPGROUP_KIND,
            "metadata": metadata,
            "spec": _diktyo_spec_document(spec),
        }
    else:
        raise ValueError(f"unknown flavor {flavor!r} (expected 'netaware' or 'diktyo')")
    if all_annotations:
        metadata["annotations"] = all_annotations
    if status is not None:
        doc["status"] = dict(status)
    return doc


def dependency_tree(spec: AppGroupSpec) -> dict[str, tuple[str, ...]]:
    return toposort.dependency_tree([(w.name, [d.target for d in w.dependencies]) for w in spec.workloads])


def topology_order(spec: AppGroupSpec, algorithm: str | None = None) -> toposort.TopologicalOrder:
    """The spec's workloads ordered by its (or the given) topology sorting algorithm."""
    return toposort.topological_order(dependency_tree(spec), algorithm or spec.topology_sorting_algorithm)


def status_document(
    spec: AppGroupSpec,
    *,
    flavor: Flavor = "netaware",
    placements: Mapping[str, Sequence[Mapping[str, str]]] | None = None,
    running_workloads: int | None = None,
    observed_generation: int | None = None,
    conditions: Sequence[Mapping[str, Any]] = (),
    calculation_time: str | None = None,
) -> dict[str, Any]:
    """The AppGroup ``status`` (our shape or diktyo's), from the spec and the recorded placements.

    ``placements`` maps workload name -> [{"pod": name, "node": node}]; runningWorkloads defaults
    to the number of placed pods. Times are RFC 3339 strings supplied by the caller.
    """
    placements = placements or {}
    order = topology_order(spec)
    running = running_workloads if running_workloads is not None else sum(len(p) for p in placements.values())
    if flavor == "diktyo":
        by_name = {workload.name: workload for workload in spec.workloads}
        indexes = order.index()
        entries: list[dict[str, Any]] = [
            {"workload": _diktyo_info(by_name[name], spec.namespace), "index": indexes[name]}
            for name in order.order
            if name in by_name
        ]
        # The TopologicalSort plugin binary-searches this list by workload selector.
        entries.sort(key=lambda entry: entry["workload"]["selector"])
        status: dict[str, Any] = {"runningWorkloads": running, "topologyOrder": entries}
        if calculation_time:
            status["topologyCalculationTime"] = calculation_time
        return status
    status = {
        "runningWorkloads": running,
        "topologyOrder": [{"workload": name, "index": index} for name, index in order.index().items()],
        "placements": {
            name: [{"pod": p["pod"], "node": p["node"]} for p in pods] for name, pods in placements.items()
        },
    }
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    if conditions:
        status["conditions"] = [dict(condition) for condition in conditions]
    if calculation_time:
        status["topologyCalculationTime"] = calculation_time
    return status
