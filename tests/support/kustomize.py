"""A small, strict kustomize build in pure Python for the features k8s/ uses, so the overlays can be
rendered and validated offline on any machine (no kubectl, no network).

Supported: ``resources`` (files and directories holding a kustomization.yaml), ``images``
(newName/newTag/digest), inline JSON 6902 ``patches`` with a kind/name target, ``secretGenerator`` and
``configMapGenerator`` (envs, files, literals, type, namespace) with ``generatorOptions``
(``disableNameSuffixHash: true`` required: we rename nothing, so no reference rewriting is needed,
plus labels/annotations). Anything else raises ``UnsupportedFeature`` instead of being ignored, so a
kustomization that grows a new feature fails here rather than rendering something different from
``kubectl kustomize`` (tests/test_k8s_overlays_render_and_validate.py compares both, with the dev
lock's kubectl).
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUPPORTED_FIELDS = {
    "apiVersion", "kind", "resources", "images", "patches", "secretGenerator", "configMapGenerator",
    "generatorOptions",
}


class UnsupportedFeature(ValueError):
    pass


class KustomizeError(ValueError):
    pass


def _kustomization_file(directory: Path) -> Path:
    for name in KUSTOMIZATION_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    raise KustomizeError(f"{directory} has no kustomization.yaml")


def _load_documents(path: Path) -> list[dict[str, Any]]:
    with path.open() as handle:
        docs = [doc for doc in yaml.safe_load_all(handle) if doc is not None]
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise KustomizeError(f"{path} document {index} is not a Kubernetes object")
    return docs


def _inside(root: Path, path: Path) -> Path:
    """kustomize's default load restrictor: files must live under the kustomization's directory."""
    resolved = path.resolve()
    if root.resolve() not in (resolved, *resolved.parents):
        raise KustomizeError(f"{path} is outside the kustomization root {root}")
    return resolved


def _pointer_tokens(pointer: str) -> list[str]:
    if not pointer.startswith("/"):
        raise KustomizeError(f"JSON pointer {pointer!r} must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _json6902(doc: dict[str, Any], operations: list[dict[str, Any]], where: str) -> None:
    for op in operations:
        kind = op.get("op")
        if kind not in ("add", "replace", "remove"):
            raise UnsupportedFeature(f"{where}: JSON patch op {kind!r}")
        tokens = _pointer_tokens(op["path"])
        parent: Any = doc
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        if isinstance(parent, list):
            if kind == "add":
                parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op["value"]))
            elif kind == "replace":
                parent[int(last)] = copy.deepcopy(op["value"])
            else:
                del parent[int(last)]
        else:
            if kind == "replace" and last not in parent:
                raise KustomizeError(f"{where}: replace of missing {op['path']}")
            if kind == "remove":
                if last not in parent:
                    raise KustomizeError(f"{where}: remove of missing {op['path']}")
                del parent[last]
            else:
                parent[last] = copy.deepcopy(op["value"])


def _pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind == "Pod":
        return [spec]
    if kind == "CronJob":
        return [spec.get("jobTemplate", {}).get("spec", {}).get("template", {}).get("spec", {})]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        return [spec.get("template", {}).get("spec", {})]
    return []


def _split_image(image: str) -> tuple[str, str]:
    """('name', '@sha256:..' | ':tag' | '') like kustomize's image parser."""
    if "@" in image:
        name, digest = image.split("@", 1)
        return name, "@" + digest
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon:]
    return image, ""


def _apply_images(doc: dict[str, Any], images: list[dict[str, Any]]) -> None:
    for pod in _pod_specs(doc):
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            name, suffix = _split_image(container.get("image", ""))
            for rule in images:
                if rule["name"] != name:
                    continue
                new_name = rule.get("newName", name)
                if "digest" in rule:
                    suffix = "@" + rule["digest"]
                elif "newTag" in rule:
                    suffix = ":" + str(rule["newTag"])
                container["image"] = new_name + suffix


def _env_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise KustomizeError(f"{path}:{number}: not KEY=VALUE")
        out[key.strip()] = value
    return out


def _generate(root: Path, spec: dict[str, Any], *, kind: str, options: dict[str, Any]) -> dict[str, Any]:
    allowed = {"name", "namespace", "envs", "files", "literals", "type", "behavior", "options"}
    unknown = set(spec) - allowed
    if unknown:
        raise UnsupportedFeature(f"{kind} generator fields {sorted(unknown)}")
    if spec.get("behavior", "create") != "create":
        raise UnsupportedFeature(f"{kind} generator behavior {spec['behavior']!r}")
    values: dict[str, bytes] = {}
    for env in spec.get("envs") or []:
        for key, value in _env_file(_inside(root, root / env)).items():
            values[key] = value.encode()
    for entry in spec.get("files") or []:
        key, sep, rel = str(entry).partition("=")
        if not sep:
            key, rel = Path(entry).name, entry
        values[key] = _inside(root, root / rel).read_bytes()
    for literal in spec.get("literals") or []:
        key, sep, value = str(literal).partition("=")
        if not sep:
            raise KustomizeError(f"literal {literal!r} is not KEY=VALUE")
        values[key] = value.encode()
    metadata: dict[str, Any] = {"name": spec["name"]}
    if spec.get("namespace"):
        metadata["namespace"] = spec["namespace"]
    if options.get("labels"):
        metadata["labels"] = dict(options["labels"])
    if options.get("annotations"):
        metadata["annotations"] = dict(options["annotations"])
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
    if kind == "Secret":
        doc["type"] = spec.get("type", "Opaque")
        doc["data"] = {k: base64.b64encode(v).decode() for k, v in values.items()}
    else:
        doc["data"] = {k: v.decode() for k, v in values.items()}
    return doc


def _matches(target: dict[str, Any], doc: dict[str, Any]) -> bool:
    unknown = set(target) - {"kind", "name", "namespace", "group", "version"}
    if unknown:
        raise UnsupportedFeature(f"patch target fields {sorted(unknown)}")
    meta = doc.get("metadata") or {}
    api_version = str(doc.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    return (
        target.get("kind", doc.get("kind")) == doc.get("kind")
        and target.get("name", meta.get("name")) == meta.get("name")
        and target.get("namespace", meta.get("namespace")) == meta.get("namespace")
        and target.get("group", group) == group
        and target.get("version", version) == version
    )


def build(directory: Path | str) -> list[dict[str, Any]]:
    """Render the kustomization in ``directory`` to a list of objects (kustomize's build)."""
    root = Path(directory)
    kustomization = yaml.safe_load(_kustomization_file(root).read_text()) or {}
    unknown = set(kustomization) - SUPPORTED_FIELDS
    if unknown:
        raise UnsupportedFeature(f"{root}: kustomization fields {sorted(unknown)}")
    docs: list[dict[str, Any]] = []
    for entry in kustomization.get("resources") or []:
        path = root / entry
        if path.is_dir():
            docs.extend(build(path))
        elif path.is_file():
            docs.extend(_load_documents(path))
        else:
            raise KustomizeError(f"{root}: resource {entry!r} does not exist")

    options = kustomization.get("generatorOptions") or {}
    generators = [("Secret", s) for s in kustomization.get("secretGenerator") or []] + [
        ("ConfigMap", s) for s in kustomization.get("configMapGenerator") or []
    ]
    if generators and options.get("disableNameSuffixHash") is not True:
        raise UnsupportedFeature(f"{root}: generators need generatorOptions.disableNameSuffixHash: true")
    unknown_options = set(options) - {"disableNameSuffixHash", "labels", "annotations"}
    if unknown_options:
        raise UnsupportedFeature(f"{root}: generatorOptions {sorted(unknown_options)}")
    docs.extend(_generate(root, spec, kind=kind, options=options) for kind, spec in generators)

    for patch in kustomization.get("patches") or []:
        if set(patch) - {"target", "patch"} or "target" not in patch:
            raise UnsupportedFeature(f"{root}: only inline JSON 6902 patches with a target are supported")
        operations = yaml.safe_load(patch["patch"])
        if not isinstance(operations, list):
            raise UnsupportedFeature(f"{root}: strategic-merge patches are not supported")
        matched = [doc for doc in docs if _matches(patch["target"], doc)]
        if not matched:
            raise KustomizeError(f"{root}: patch target {patch['target']} matches no resource")
        for doc in matched:
            _json6902(doc, operations, f"{root} patch {patch['target']}")

    images = kustomization.get("images") or []
    for doc in docs:
        _apply_images(doc, images)

    seen: set[tuple[str, str, str, str]] = set()
    for doc in docs:
        meta = doc.get("metadata") or {}
        key = (str(doc["apiVersion"]).split("/")[0] if "/" in str(doc["apiVersion"]) else "",
               doc["kind"], meta.get("namespace") or "", meta.get("name") or "")
        if key in seen:
            raise KustomizeError(f"{root}: duplicate resource {key}")
        seen.add(key)
    return docs
