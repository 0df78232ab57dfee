"""Dashboard forms for AppGroups: a structured editor of the numbers SREs tune, and a YAML editor.

Both end in ``services.save_appgroup`` (the service behind the API's import and the sync loop), so
the same rules reject the same input; the service's field paths are mapped back onto form fields
(structured form) or shown with the YAML line they point at (YAML editor). Nothing is saved on error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import yaml
from django import forms

from apps.yamlsafe import UnsafeYAMLError, load_yaml

from . import quantity, resources, services
from .choices import Origin, TopologySortingAlgorithm
from .graph import AppGroupSpec, DependencySpec, Sensitivity
from .models import MAX_NETWORK_COST, AppGroup

_NUMBER = {"step": "any", "min": "0"}
MAX_YAML_BYTES = 1024 * 1024  # an AppGroup resource is a few KiB; the editor never needs more


def _dep_prefix(i: int, j: int) -> str:
    return f"d{i}_{j}_"


class StructuredAppGroupForm(forms.Form):
    """Workload weights and, per dependency, sensitivities, maxNetworkCost and minBandwidth."""

    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80}))
    topology_sorting_algorithm = forms.ChoiceField(choices=TopologySortingAlgorithm.choices)
    # Fields are addressed by workload/dependency position: refuse a submission made against a
    # graph that changed meanwhile (cluster sync, another editor) instead of editing the wrong row.
    spec_hash = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args: Any, appgroup: AppGroup, spec: AppGroupSpec, **kwargs: Any) -> None:
        self.appgroup = appgroup
        self.spec = spec
        initial: dict[str, Any] = {
            "description": appgroup.description,
            "topology_sorting_algorithm": spec.topology_sorting_algorithm,
            "spec_hash": resources.spec_hash(spec),
        }
        super().__init__(*args, initial=initial, **kwargs)
        self.rows: list[dict[str, Any]] = []
        for i, workload in enumerate(spec.workloads):
            name = f"w{i}_weight"
            self.fields[name] = forms.FloatField(
                min_value=0.0, label=f"{workload.name} weight", widget=forms.NumberInput(attrs=_NUMBER)
            )
            self.initial[name] = workload.weight
            deps = []
            for j, dep in enumerate(workload.dependencies):
                p = _dep_prefix(i, j)
                for metric in ("latency", "bandwidth", "lossrate"):
                    self.fields[p + metric] = forms.FloatField(
                        min_value=0.0, label=f"{workload.name} → {dep.target} {metric}",
                        widget=forms.NumberInput(attrs=_NUMBER),
                    )
                    self.initial[p + metric] = getattr(dep.sensitivity, metric)
                self.fields[p + "max_network_cost"] = forms.IntegerField(
                    required=False, min_value=0, max_value=MAX_NETWORK_COST,
                    label=f"{workload.name} → {dep.target} maxNetworkCost",
                    widget=forms.NumberInput(attrs={"min": "0", "max": str(MAX_NETWORK_COST)}),
                )
                self.initial[p + "max_network_cost"] = (
                    int(dep.max_network_cost) if dep.max_network_cost is not None else None
                )
                self.fields[p + "min_bandwidth"] = forms.CharField(
                    required=False, max_length=32, label=f"{workload.name} → {dep.target} minBandwidth",
                    help_text="bit/s quantity, e.g. 100M",
                )
                self.initial[p + "min_bandwidth"] = (
                    quantity.format_bytes(dep.min_bandwidth_bps) if dep.min_bandwidth_bps is not None else ""
                )
                deps.append({"target": dep.target, "prefix": p})
            self.rows.append({"index": i, "name": workload.name, "weight_field": name, "dependencies": deps})

    def table(self) -> list[dict[str, Any]]:
        """Rows for the template: bound fields grouped by workload and dependency."""
        out = []
        for row in self.rows:
            deps = []
            for dep in row["dependencies"]:
                p = dep["prefix"]
                deps.append({
                    "target": dep["target"],
                    "fields": [self[p + f] for f in ("latency", "bandwidth", "lossrate", "max_network_cost",
                                                     "min_bandwidth")],
                    "errors": self.errors.get(p.rstrip("_"), []),
                })
            out.append({"name": row["name"], "weight": self[row["weight_field"]], "dependencies": deps})
        return out

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("spec_hash") != resources.spec_hash(self.spec):
            raise forms.ValidationError(
                "This AppGroup changed since the form was opened (cluster sync or another edit); nothing was "
                "saved. Reload the page and apply your change again.", code="stale")
        for i, workload in enumerate(self.spec.workloads):
            for j, _dep in enumerate(workload.dependencies):
                p = _dep_prefix(i, j)
                raw = (data.get(p + "min_bandwidth") or "").strip()
                if raw:
                    try:
                        bps = quantity.bandwidth_bps(raw)
                    except quantity.QuantityError as exc:
                        self.add_error(p + "min_bandwidth", str(exc))
                        continue
                    if bps < 0:
                        self.add_error(p + "min_bandwidth", "must not be negative")
                values = [data.get(p + m) for m in ("latency", "bandwidth", "lossrate")]
                if all(isinstance(v, float) for v in values) and sum(values) <= 0:  # type: ignore[arg-type]
                    self.add_error(p + "latency", "latency, bandwidth and lossrate must have a positive sum")
        return data

    def edited_spec(self) -> AppGroupSpec:
        data = self.cleaned_data
        workloads = []
        for i, workload in enumerate(self.spec.workloads):
            deps = []
            for j, dep in enumerate(workload.dependencies):
                p = _dep_prefix(i, j)
                raw = (data.get(p + "min_bandwidth") or "").strip()
                cost = data.get(p + "max_network_cost")
                deps.append(DependencySpec(
                    target=dep.target,
                    sensitivity=Sensitivity(data[p + "latency"], data[p + "bandwidth"], data[p + "lossrate"]),
                    max_network_cost=float(cost) if cost is not None else None,
                    min_bandwidth_bps=quantity.bandwidth_bps(raw) if raw else None,
                ))
            workloads.append(replace(workload, weight=data[f"w{i}_weight"], dependencies=tuple(deps)))
        return replace(self.spec, workloads=tuple(workloads),
                       topology_sorting_algorithm=data["topology_sorting_algorithm"])

    _DEP_PATH = re.compile(r"^workloads\[(\d+)\]\.dependencies\[(\d+)\](?:\.(\w+))?$")
    _WL_PATH = re.compile(r"^workloads\[(\d+)\](?:\.(\w+))?$")

    def add_service_errors(self, errors: Mapping[str, list[str]]) -> None:
        """Put the service's field-path errors next to the matching form field (else on the form)."""
        for path, messages in errors.items():
            target: str | None = None
            m = self._DEP_PATH.match(path)
            if m:
                i, j, attr = int(m.group(1)), int(m.group(2)), m.group(3)
                field = _dep_prefix(i, j) + (attr or "latency")
                target = field if field in self.fields else None
            else:
                m = self._WL_PATH.match(path)
                if m and m.group(2) == "weight":
                    target = f"w{m.group(1)}_weight"
                elif path in ("description", "topology_sorting_algorithm"):
                    target = path
            for message in messages:
                if target is not None:
                    self.add_error(target, message)
                else:
                    self.add_error(None, f"{path}: {message}")

    def save(self) -> AppGroup:
        """Save through the service; raises AppGroupValidationError (call add_service_errors)."""
        return services.save_appgroup(
            spec=self.edited_spec(), appgroup=self.appgroup, origin=Origin.NETAWARE,
            description=self.cleaned_data.get("description", ""),
        )


# --- YAML editor --------------------------------------------------------------------------------


def _yaml_line(text: str, path: str) -> int | None:
    """1-based line of the node a field path (``spec.workloads[1].weight``) points at, if found."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    best = node
    for position, part in enumerate(parts):
        if node is None:
            break
        if part.startswith("[") and isinstance(node, yaml.SequenceNode):
            idx = int(part[1:-1])
            node = node.value[idx] if idx < len(node.value) else None
        elif isinstance(node, yaml.MappingNode):
            found = None
            for key, value in node.value:
                if getattr(key, "value", None) == part:
                    found = key if position == len(parts) - 1 else value
                    break
            node = found
        else:
            node = None
        if node is not None:
            best = node
    return best.start_mark.line + 1 if best is not None else None


# The service names model fields; the document names resource keys.
_SERVICE_TO_RESOURCE = {
    "latency": "metrics.latency", "bandwidth": "metrics.bandwidth", "lossrate": "metrics.lossrate",
    "max_network_cost": "maxNetworkCost", "min_bandwidth": "minBandwidth", "target": "name",
    "cpu_request": "resources.cpu", "memory_request": "resources.memory", "selector": "selector",
}


def resource_path(path: str) -> str:
    if path in ("name", "namespace"):
        return f"metadata.{path}"
    if path == "topology_sorting_algorithm":
        return "spec.topologySortingAlgorithm"
    if path.startswith("workloads["):
        head, _, last = path.rpartition(".")
        if head and "[" in last:
            return "spec." + path
        if head:
            return f"spec.{head}.{_SERVICE_TO_RESOURCE.get(last, last)}"
        return "spec." + path
    return path


class AppGroupYAMLForm(forms.Form):
    """One AppGroup resource (ours or scheduler-plugins') as YAML."""

    document = forms.CharField(widget=forms.Textarea(attrs={"class": "yaml", "spellcheck": "false"}))

    def __init__(self, *args: Any, appgroup: AppGroup | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.appgroup = appgroup
        self.path_errors: list[dict[str, Any]] = []  # [{"path", "message", "line"}]

    def clean_document(self) -> Mapping[str, Any]:
        text = self.cleaned_data["document"]
        try:
            docs = [d for d in load_yaml(text, max_bytes=MAX_YAML_BYTES, multi=True) if d is not None]
        except UnsafeYAMLError as exc:
            raise forms.ValidationError(str(exc)) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise forms.ValidationError(f"Not valid YAML{where}: {problem}") from None
        if len(docs) != 1:
            raise forms.ValidationError(f"Expected exactly one YAML document, got {len(docs)}.")
        if not isinstance(docs[0], Mapping):
            raise forms.ValidationError("The document must be a Kubernetes resource (a mapping), "
                                        f"not a {type(docs[0]).__name__}.")
        return docs[0]

    def _path_error(self, path: str, message: str, *, resource: bool) -> None:
        shown = path if resource else resource_path(path)
        line = _yaml_line(self.data.get("document", ""), shown) if shown else None
        self.path_errors.append({"path": shown or "(document)", "message": message, "line": line})
        where = f" (line {line})" if line else ""
        self.add_error("document", f"{shown or 'document'}{where}: {message}")

    def save(self) -> AppGroup | None:
        """Validate with the resource parser and save through the service; None (errors recorded) on
        bad input. A new AppGroup never replaces an existing one of the same namespace/name."""
        document = self.cleaned_data["document"]
        try:
            spec = resources.spec_from_resource(document)
        except resources.ResourceError as exc:
            self._path_error(exc.field_path, exc.message, resource=True)
            return None
        metadata = document.get("metadata") or {}
        annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        description = (annotations or {}).get(services.DESCRIPTION_ANNOTATION) if isinstance(annotations, Mapping) else None
        try:
            return services.save_appgroup(
                spec=spec, origin=Origin.NETAWARE, appgroup=self.appgroup,
                description=description if isinstance(description, str) else None,
                create_only=self.appgroup is None,
            )
        except services.AppGroupValidationError as exc:
            for path, messages in exc.errors.items():
                for message in messages:
                    self._path_error(path, message, resource=False)
            return None


def document_yaml(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False, allow_unicode=True)
