"""AppGroup custom resources <-> ``AppGroupSpec`` (pure; no Django).

Two flavours are read and written:

* ``netaware``: our CRD ``appgroups.netaware.io`` (k8s/crds/appgroup.yaml), the source paper's shape
  (workloads with selector and weight; dependencies with latency/bandwidth/lossrate sensitivities)
  plus the KEP fields (topologySortingAlgorithm, controller reference, maxNetworkCost, minBandwidth)
  and optional replicas/resources hints.
* ``diktyo``: scheduler-plugins' ``appgroup.diktyo.x-k8s.io/v1alpha1`` AppGroup. It has no selector
  object, importance weight or sensitivities; on export those travel in the
  ``netaware.io/appgroup-extras`` annotation so a diktyo export re-imports without loss. The diktyo
  ``workload.selector`` (the value of the pod label ``appgroup.diktyo.x-k8s.io.workload``) is our
  workload name.

Every error is a ``ResourceError`` naming the field, e.g.
``spec.workloads[2].dependencies[0].metrics.latency``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from netaware_core import crdschema, quantity
from netaware_core.fielderrors import FieldError

from . import toposort, validators
from .graph import TOPOLOGY_MODES, AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec

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
# Sensitivity given to dependencies imported from diktyo resources without our extras annotation.
DEFAULT_SENSITIVITY = Sensitivity(1.0, 1.0, 1.0)


class ResourceError(FieldError):
    """A resource document that cannot be turned into an AppGroupSpec; ``field_path`` names the field."""


# The service and the models name model fields (``workloads[1].latency``); a document names
# resource keys (``spec.workloads[1].metrics.latency``).
_SERVICE_TO_RESOURCE = {
    "latency": "metrics.latency", "bandwidth": "metrics.bandwidth", "lossrate": "metrics.lossrate",
    "max_network_cost": "maxNetworkCost", "min_bandwidth": "minBandwidth", "target": "name",
    "cpu_request": "resources.cpu", "memory_request": "resources.memory", "selector": "selector",
}


def resource_path(path: str) -> str:
    """A model field path of the service's errors as the path of the same field in our resource."""
    if path in ("name", "namespace"):
        return f"metadata.{path}"
    if path == "topology_sorting_algorithm":
        return "spec.topologySortingAlgorithm"
    if path == "topology_mode":
        return "spec.topologyMode"
    if path.startswith("workloads["):
        head, _, last = path.rpartition(".")
        if head and "[" not in last:
            return f"spec.{head}.{_SERVICE_TO_RESOURCE.get(last, last)}"
        return "spec." + path
    return path


# --- small typed readers ---------------------------------------------------------------------


def _mapping(value: object, path: str, *, required: bool = True) -> Mapping[str, Any]:
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise ResourceError(path, "must be an object" if value is not None else "is required")
    return value


def _list(value: object, path: str, *, required: bool = True) -> Sequence[Any]:
    if value is None and not required:
        return ()
    if not isinstance(value, list | tuple):
        raise ResourceError(path, "must be a list" if value is not None else "is required")
    return value


def _string(value: object, path: str, *, required: bool = True, default: str = "") -> str:
    if value is None or value == "":
        if required:
            raise ResourceError(path, "is required")
        return default
    if not isinstance(value, str):
        raise ResourceError(path, "must be a string")
    return value


def _number(value: object, path: str, *, default: float | None = None, minimum: float | None = 0.0) -> float:
    if value is None:
        if default is None:
            raise ResourceError(path, "is required")
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ResourceError(path, f"must be a number (got {validators.short(value)})") from None
        else:
            raise ResourceError(path, f"must be a number (got {validators.short(value)})")
    number = float(value)
    if not math.isfinite(number):
        raise ResourceError(path, "must be a finite number")
    if minimum is not None and number < minimum:
        raise ResourceError(path, f"must be >= {minimum:g} (got {number:g})")
    return number


def _integer(value: object, path: str, *, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or float(value) != int(value):
        raise ResourceError(path, f"must be an integer (got {validators.short(value)})")
    number = int(value)
    if number < minimum:
        raise ResourceError(path, f"must be >= {minimum} (got {number})")
    if maximum is not None and number > maximum:
        raise ResourceError(path, f"must be <= {maximum} (got {number})")
    return number


def _metadata(doc: Mapping[str, Any], default_namespace: str) -> tuple[str, str, Mapping[str, Any]]:
    metadata = _mapping(doc.get("metadata"), "metadata")
    name = _string(metadata.get("name"), "metadata.name")
    error = validators.dns1123_subdomain_error(name, "name")
    if error:
        raise ResourceError("metadata.name", error)
    namespace = _string(
        metadata.get("namespace"), "metadata.namespace", required=False, default=default_namespace
    )
    error = validators.dns1123_label_error(namespace, "namespace")
    if error:
        raise ResourceError("metadata.namespace", error)
    return namespace, name, metadata


def _algorithm(value: object, path: str, *, required: bool) -> str:
    algorithm = _string(value, path, required=required, default=toposort.DEFAULT_ALGORITHM)
    if algorithm not in toposort.ALGORITHMS:
        raise ResourceError(path, f"{validators.short(algorithm)} is not one of {', '.join(toposort.ALGORITHMS)}")
    return algorithm


def _workload_name(value: object, path: str) -> str:
    name = _string(value, path)
    error = validators.label_value_error(name)
    if error or len(name) > 63:
        raise ResourceError(
            path, (error or "longer than 63 characters").replace("label value", "workload name")
        )
    return name


def selector_from_mapping(selector: Mapping[str, Any]) -> LabelSelector:
    """A validated selector dict ({matchLabels, matchExpressions}) as the frozen LabelSelector."""
    return LabelSelector(
        match_labels=dict(selector.get("matchLabels") or {}),
        match_expressions=tuple(
            (expr["key"], expr["operator"], tuple(expr.get("values") or ()))
            for expr in selector.get("matchExpressions") or ()
        ),
    )


def selector_to_mapping(selector: LabelSelector) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if selector.match_labels:
        result["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        result["matchExpressions"] = [
            {"key": key, "operator": operator, "values": list(values)}
            for key, operator, values in selector.match_expressions
        ]
    return result


def parse_selector(value: object, path: str) -> LabelSelector:
    """Selector object or the paper's ``app=frontend`` string, validated (ResourceError on bad syntax)."""
    if value is None:
        raise ResourceError(path, "is required")
    try:
        normalized = validators.normalize_selector(value)
    except validators.SelectorError as exc:
        raise ResourceError(f"{path}.{exc.field_path}" if exc.field_path else path, exc.message) from None
    return selector_from_mapping(normalized)


def _bandwidth(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ResourceError(path, "must be a Kubernetes quantity such as '100M'")
    try:
        return quantity.bandwidth_bps(value)
    except quantity.QuantityError as exc:
        raise ResourceError(path, str(exc)) from None


def _sensitivity(metrics: Mapping[str, Any], path: str) -> Sensitivity:
    """The latency/bandwidth/lossrate weights under ``path`` (each defaults to 0; the sum must be > 0)."""
    sensitivity = Sensitivity(
        _number(metrics.get("latency"), f"{path}.latency", default=0.0),
        _number(metrics.get("bandwidth"), f"{path}.bandwidth", default=0.0),
        _number(metrics.get("lossrate"), f"{path}.lossrate", default=0.0),
    )
    if sensitivity.total <= 0:
        raise ResourceError(path, "latency, bandwidth and lossrate must have a positive sum")
    return sensitivity


def _dependency_limits(dep: Mapping[str, Any], path: str) -> tuple[float | None, float | None]:
    """A dependency's optional ``maxNetworkCost`` and ``minBandwidth`` (same fields in both API groups)."""
    max_cost: float | None = None
    if dep.get("maxNetworkCost") is not None:
        max_cost = float(
            _integer(dep.get("maxNetworkCost"), f"{path}.maxNetworkCost", minimum=0, maximum=MAX_NETWORK_COST)
        )
    min_bw = (
        _bandwidth(dep["minBandwidth"], f"{path}.minBandwidth")
        if dep.get("minBandwidth") is not None
        else None
    )
    return max_cost, min_bw


def _check_graph(
    workloads: Sequence[WorkloadSpec], paths: Sequence[str], dep_paths: Sequence[Sequence[str]]
) -> None:
    """The model invariants, on the spec: unique names, known targets, no self or repeated edges."""
    seen: dict[str, int] = {}
    for index, workload in enumerate(workloads):
        if workload.name in seen:
            raise ResourceError(
                f"{paths[index]}",
                f"duplicate workload name {validators.short(workload.name)} (also workloads[{seen[workload.name]}])",
            )
        seen[workload.name] = index
    for index, workload in enumerate(workloads):
        targets: set[str] = set()
        for dep_index, dependency in enumerate(workload.dependencies):
            path = dep_paths[index][dep_index]
            if dependency.target == workload.name:
                raise ResourceError(path, f"workload {validators.short(workload.name)} cannot depend on itself")
            if dependency.target not in seen:
                raise ResourceError(
                    path, f"unknown dependency target {validators.short(dependency.target)} (not a workload of this AppGroup)"
                )
            if dependency.target in targets:
                raise ResourceError(path, f"duplicate dependency on {validators.short(dependency.target)}")
            targets.add(dependency.target)


# --- netaware flavour ------------------------------------------------------------------------


def _with_selector_objects(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """``doc`` with the paper's ``app=frontend`` selector strings (our extension of the CRD) parsed
    into selector objects, so the CRD's schema can judge the rest."""
    spec = doc.get("spec")
    workloads = spec.get("workloads") if isinstance(spec, Mapping) else None
    if not isinstance(workloads, list) or not any(
        isinstance(w, Mapping) and isinstance(w.get("selector"), str) for w in workloads
    ):
        return doc
    items: list[Any] = []
    for index, workload in enumerate(workloads):
        if isinstance(workload, Mapping) and isinstance(workload.get("selector"), str):
            try:
                selector = validators.parse_selector_string(workload["selector"])
            except validators.SelectorError as exc:
                raise ResourceError(f"spec.workloads[{index}].selector", exc.message) from None
            workload = {**workload, "selector": selector}
        items.append(workload)
    return {**doc, "spec": {**spec, "workloads": items}}  # type: ignore[dict-item]


def _netaware_spec(doc: Mapping[str, Any], default_namespace: str) -> AppGroupSpec:
    """Structure (types, required fields, enums, patterns, bounds) is the CRD's openAPIV3Schema's
    (``netaware_core.crdschema``), every violation reported at once; what follows are the semantic rules the
    schema cannot say: selector rules, quantities, the sensitivity sum, the graph."""
    doc = _with_selector_objects(doc)
    errors = crdschema.document_errors(doc)
    if errors:
        raise ResourceError(errors=errors)
    namespace, name, _ = _metadata(doc, default_namespace)
    spec = doc["spec"]
    algorithm = spec.get("topologySortingAlgorithm") or toposort.DEFAULT_ALGORITHM
    workloads: list[WorkloadSpec] = []
    name_paths: list[str] = []
    dep_paths: list[list[str]] = []
    for index, item in enumerate(spec["workloads"]):
        base = f"spec.workloads[{index}]"
        selector = parse_selector(item["selector"], f"{base}.selector")
        controller = item.get("controller") or {}
        resources = item.get("resources") or {}
        cpu = memory = 0
        try:
            if resources.get("cpu") is not None:
                cpu = quantity.cpu_millicores(resources["cpu"])
        except quantity.QuantityError as exc:
            raise ResourceError(f"{base}.resources.cpu", str(exc)) from None
        try:
            if resources.get("memory") is not None:
                memory = quantity.memory_bytes(resources["memory"])
        except quantity.QuantityError as exc:
            raise ResourceError(f"{base}.resources.memory", str(exc)) from None
        dependencies: list[DependencySpec] = []
        paths: list[str] = []
        for dep_index, dep in enumerate(item.get("dependencies") or ()):
            dep_base = f"{base}.dependencies[{dep_index}]"
            sensitivity = _sensitivity(dep["metrics"], f"{dep_base}.metrics")
            max_cost, min_bw = _dependency_limits(dep, dep_base)
            dependencies.append(DependencySpec(dep["name"], sensitivity, max_cost, min_bw))
            paths.append(f"{dep_base}.name")
        workloads.append(
            WorkloadSpec(
                name=item["name"],
                selector=selector,
                weight=float(item.get("weight", 1.0)),
                dependencies=tuple(dependencies),
                controller_kind=controller.get("kind") or "",
                controller_name=controller.get("name") or "",
                replicas=int(item.get("replicas") or 1),
                cpu_request_millicores=cpu,
                memory_request_bytes=memory,
            )
        )
        name_paths.append(f"{base}.name")
        dep_paths.append(paths)
    _check_graph(workloads, name_paths, dep_paths)
    return AppGroupSpec(
        namespace=namespace, name=name, workloads=tuple(workloads), topology_sorting_algorithm=algorithm,
        topology_mode=spec.get("topologyMode") or "soft",
    )


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
    return doc


def _workload_document(workload: WorkloadSpec) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": workload.name,
        "selector": selector_to_mapping(workload.selector),
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
    """The ``spec`` of our AppGroup resource (canonical: same spec -> same document). ``topologyMode`` is
    always written: the API server defaults it, so the cluster's copy carries it too."""
    return {
        "topologySortingAlgorithm": spec.topology_sorting_algorithm,
        "topologyMode": spec.topology_mode,
        "workloads": [_workload_document(workload) for workload in spec.workloads],
    }


def spec_hash(spec: AppGroupSpec) -> str:
    """SHA-256 of the canonical spec document: equal hashes mean nothing to apply."""
    payload = json.dumps(
        {"namespace": spec.namespace, "name": spec.name, "spec": spec_document(spec)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


# --- diktyo flavour --------------------------------------------------------------------------


def _diktyo_workload_info(value: object, path: str) -> tuple[str, str, str]:
    info = _mapping(value, path)
    kind = _string(info.get("kind"), f"{path}.kind")
    controller_name = _string(info.get("name"), f"{path}.name")
    selector = _workload_name(info.get("selector"), f"{path}.selector")
    return selector, kind, controller_name


def _diktyo_spec(doc: Mapping[str, Any], default_namespace: str) -> AppGroupSpec:
    namespace, name, metadata = _metadata(doc, default_namespace)
    spec = _mapping(doc.get("spec"), "spec")
    if spec.get("numMembers") is None:
        raise ResourceError("spec.numMembers", "is required")
    _integer(spec.get("numMembers"), "spec.numMembers", minimum=1)
    algorithm = _algorithm(
        spec.get("topologySortingAlgorithm"), "spec.topologySortingAlgorithm", required=True
    )
    raw_workloads = _list(spec.get("workloads"), "spec.workloads")
    if not raw_workloads:
        raise ResourceError("spec.workloads", "must contain at least one workload")
    extras, mode = _extras(metadata)
    workloads: list[WorkloadSpec] = []
    name_paths: list[str] = []
    dep_paths: list[list[str]] = []
    for index, raw in enumerate(raw_workloads):
        base = f"spec.workloads[{index}]"
        item = _mapping(raw, base)
        workload_name, kind, controller_name = _diktyo_workload_info(item.get("workload"), f"{base}.workload")
        extra = extras.get(workload_name, {})
        dependencies: list[DependencySpec] = []
        paths: list[str] = []
        for dep_index, raw_dep in enumerate(
            _list(item.get("dependencies"), f"{base}.dependencies", required=False)
        ):
            dep_base = f"{base}.dependencies[{dep_index}]"
            dep = _mapping(raw_dep, dep_base)
            target, _, _ = _diktyo_workload_info(dep.get("workload"), f"{dep_base}.workload")
            max_cost, min_bw = _dependency_limits(dep, dep_base)
            sensitivity = DEFAULT_SENSITIVITY
            raw_sensitivity = (extra.get("dependencies") or {}).get(target)
            if raw_sensitivity is not None:
                sens_path = f"metadata.annotations[{EXTRAS_ANNOTATION}].{workload_name}.dependencies.{target}"
                sens = _mapping(raw_sensitivity, sens_path)
                sensitivity = _sensitivity(sens, sens_path)
            dependencies.append(DependencySpec(target, sensitivity, max_cost, min_bw))
            paths.append(f"{dep_base}.workload.selector")
        extra_path = f"metadata.annotations[{EXTRAS_ANNOTATION}].{workload_name}"
        if extra.get("selector") is not None:
            selector = parse_selector(extra.get("selector"), f"{extra_path}.selector")
        else:
            selector = LabelSelector(match_labels={DIKTYO_WORKLOAD_LABEL: workload_name})
        replicas = (
            _integer(extra["replicas"], f"{extra_path}.replicas", minimum=1) if extra.get("replicas") else 1
        )
        try:
            cpu = quantity.cpu_millicores(extra["cpu"]) if extra.get("cpu") else 0
            memory = quantity.memory_bytes(extra["memory"]) if extra.get("memory") else 0
        except quantity.QuantityError as exc:
            raise ResourceError(extra_path, str(exc)) from None
        workloads.append(
            WorkloadSpec(
                name=workload_name,
                selector=selector,
                weight=_number(extra.get("weight"), f"{extra_path}.weight", default=1.0),
                dependencies=tuple(dependencies),
                controller_kind=kind,
                controller_name=controller_name,
                replicas=replicas,
                cpu_request_millicores=cpu,
                memory_request_bytes=memory,
            )
        )
        name_paths.append(f"{base}.workload.selector")
        dep_paths.append(paths)
    _check_graph(workloads, name_paths, dep_paths)
    return AppGroupSpec(
        namespace=namespace, name=name, workloads=tuple(workloads), topology_sorting_algorithm=algorithm,
        topology_mode=mode,
    )


def _extras(metadata: Mapping[str, Any]) -> tuple[Mapping[str, Mapping[str, Any]], str]:
    """The extras annotation's per-workload fields and topology mode (diktyo has neither)."""
    annotations = _mapping(metadata.get("annotations"), "metadata.annotations", required=False)
    raw = annotations.get(EXTRAS_ANNOTATION)
    if raw in (None, ""):
        return {}, "soft"
    path = f"metadata.annotations[{EXTRAS_ANNOTATION}]"
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise ResourceError(path, f"is not valid JSON: {exc.msg}") from None
    parsed = _mapping(parsed, path)
    mode = _string(parsed.get("topologyMode"), f"{path}.topologyMode", required=False, default="soft")
    if mode not in TOPOLOGY_MODES:
        raise ResourceError(f"{path}.topologyMode", f"must be one of {', '.join(TOPOLOGY_MODES)}")
    return _mapping(parsed.get("workloads") or {}, f"{path}.workloads"), mode


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
            "selector": selector_to_mapping(workload.selector),
        }
        entry["replicas"] = workload.replicas
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
        workloads[workload.name] = entry
    if spec.topology_mode != "soft":
        return {"topologyMode": spec.topology_mode, "workloads": workloads}
    return {"workloads": workloads}


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


# --- public entry points ---------------------------------------------------------------------


def detect_flavor(doc: Mapping[str, Any]) -> Flavor:
    """Which AppGroup shape a document is, from apiVersion and kind (ResourceError otherwise)."""
    if not isinstance(doc, Mapping):
        raise ResourceError("", "the document must be an object (a Kubernetes resource)")
    kind = doc.get("kind")
    if kind != APPGROUP_KIND:
        raise ResourceError("kind", f"must be {APPGROUP_KIND!r} (got {validators.short(kind)})")
    api_version = doc.get("apiVersion")
    if api_version == API_VERSION:
        return "netaware"
    if api_version == DIKTYO_APPGROUP_API_VERSION:
        return "diktyo"
    raise ResourceError(
        "apiVersion", f"must be {API_VERSION!r} or {DIKTYO_APPGROUP_API_VERSION!r} (got {validators.short(api_version)})"
    )


def spec_from_resource(doc: Mapping[str, Any], *, default_namespace: str = "default") -> AppGroupSpec:
    """Our or the scheduler-plugins AppGroup resource as an AppGroupSpec (ResourceError on bad input)."""
    flavor = detect_flavor(doc)
    if flavor == "netaware":
        return _netaware_spec(doc, default_namespace)
    return _diktyo_spec(doc, default_namespace)


def resource_from_spec(
    spec: AppGroupSpec,
    *,
    flavor: Flavor = "netaware",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The AppGroup resource for ``spec`` in our shape or scheduler-plugins' (diktyo) shape."""
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
