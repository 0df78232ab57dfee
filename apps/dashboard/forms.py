"""The AppGroup YAML editor's form, and the mapping of the service's field paths to resource paths.

It ends in ``services.save_appgroup`` (the service behind the API's import and the sync loop), so the
same rules reject the same input; errors are shown with the YAML line they point at. Nothing is saved
on error. (The structured editor posts JSON documents: views/appgroups.py.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
from django import forms

from apps.appgroups import resources, services
from apps.appgroups.choices import Origin
from apps.appgroups.models import AppGroup
from apps.yamlsafe import UnsafeYAMLError, load_yaml

MAX_YAML_BYTES = 1024 * 1024  # an AppGroup resource is a few KiB; the editor never needs more


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
