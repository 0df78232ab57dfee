"""The AppGroup YAML editor's form.

It ends in ``services.import_document`` (the service behind the API's import and the sync loop), so the
same rules reject the same input with the same messages; errors are shown with the YAML line they point
at. Nothing is saved on error. (The structured editor posts JSON documents: views/appgroups.py.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
from django import forms

from apps.appgroups import documents, services
from apps.appgroups.models import AppGroup
from netaware_core.parsers import BodyError, load_document

MAX_YAML_BYTES = 1024 * 1024  # an AppGroup document is a few KiB; the editor never needs more


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


class AppGroupYAMLForm(forms.Form):
    """One AppGroup document (ours or scheduler-plugins') as YAML."""

    document = forms.CharField(widget=forms.Textarea(attrs={"class": "yaml", "spellcheck": "false"}))

    def __init__(self, *args: Any, appgroup: AppGroup | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.appgroup = appgroup
        self.path_errors: list[dict[str, Any]] = []  # [{"path", "message", "line"}]

    def clean_document(self) -> Mapping[str, Any]:
        try:
            document = load_document(self.cleaned_data["document"], yaml_syntax=True, max_bytes=MAX_YAML_BYTES)
        except BodyError as exc:
            raise forms.ValidationError(str(exc)) from None
        if not isinstance(document, Mapping):
            raise forms.ValidationError("The document must be a Kubernetes resource (a mapping), "
                                        f"not a {type(document).__name__}.")
        return document

    def save(self) -> AppGroup | None:
        """Validate and save through the service the API's import uses; None (errors recorded, each
        with its YAML line) on bad input. A new AppGroup never replaces one of the same name."""
        try:
            return services.import_document(document=self.cleaned_data["document"], appgroup=self.appgroup,
                                            create_only=self.appgroup is None)
        except documents.DocumentError as exc:
            text = self.data.get("document", "")
            for path, messages in exc.errors.items():
                line = _yaml_line(text, path) if path else None
                where = f" (line {line})" if line else ""
                for message in messages:
                    self.path_errors.append({"path": path or "(document)", "message": message, "line": line})
                    self.add_error("document", f"{path or 'document'}{where}: {message}")
            return None


def document_yaml(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False, allow_unicode=True)
