"""``GET /api/scheduler/diagnose``: why would every node score 0 (or neutral) for this pod?

Users of the scheduler-plugins version could not tell whether the pod's labels matched no
workload, the AppGroup was missing or misnamed, the dependencies had no placed pods or the
topology lacked costs. This resolves the pod (pod cache, else the Kubernetes API, or labels given
in the query), takes the extender's own cached ClusterState and profile choice, and returns the
engine's ``explain()`` plus what only the extender knows (profile, node cache, topology age).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from django.db import DatabaseError, InterfaceError

from apps.appgroups import validators
from apps.scheduler.scoring.state import PodInfo
from netaware_core import kube
from netaware_core.fielderrors import FieldError

from . import selectors, wire
from .scoring import engine

if TYPE_CHECKING:
    from urllib3 import HTTPResponse


class DiagnoseError(FieldError):
    """A query that cannot be answered: 400 (bad parameter), 404 (unknown pod), 503 (no database)."""

    def __init__(self, errors: Mapping[str, Any], status: int = 400) -> None:
        super().__init__(errors=errors)
        self.status = status


@dataclasses.dataclass(frozen=True)
class DiagnoseQuery:
    namespace: str
    name: str
    labels: dict[str, str] | None
    profile: str


def parse_diagnose_query(params: Mapping[str, Any]) -> DiagnoseQuery:
    errors: dict[str, list[str]] = {}
    raw_pod = (params.get("pod") or "").strip()
    raw_labels = params.get("labels")
    namespace, name = "default", ""
    if not raw_pod and raw_labels is None:
        errors["pod"] = ["required: namespace/name (or give labels=k=v,...)"]
    elif raw_pod:
        if raw_pod.count("/") > 1 or raw_pod.startswith("/") or raw_pod.endswith("/"):
            errors["pod"] = [f"{raw_pod!r} is not namespace/name"]
        else:
            ns, _, nm = raw_pod.rpartition("/")
            namespace = ns or "default"
            name = nm
            if validators.dns1123_label_error(namespace):
                errors.setdefault("pod", []).append(f"namespace {namespace!r} is not a valid namespace name")
            if validators.dns1123_subdomain_error(name):
                errors.setdefault("pod", []).append(f"pod name {name!r} is not a valid pod name")
    labels: dict[str, str] | None = None
    if raw_labels is not None:
        labels = {}
        for part in (p.strip() for p in str(raw_labels).split(",")):
            if not part:
                continue
            key, sep, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or validators.label_key_error(key) or validators.label_value_error(value):
                errors.setdefault("labels", []).append(f"{part!r} is not key=value with a valid label key and value")
                continue
            labels[key] = value
    profile = (params.get("profile") or "").strip()
    if errors:
        raise DiagnoseError(errors)
    return DiagnoseQuery(namespace=namespace, name=name, labels=labels, profile=profile)


def _pod_from_api(namespace: str, name: str) -> PodInfo | None:
    from django.conf import settings


    if not settings.NETAWARE.get("KUBE_API_URL"):
        try:  # in-cluster or kubeconfig; absent in development
            kube.api_client()
        except Exception:
            return None
    try:
        resp = cast("HTTPResponse", kube.retry(  # _preload_content=False: the raw response
            lambda: kube.core_v1().read_namespaced_pod(name, namespace, _preload_content=False), attempts=2
        ))
    except Exception as exc:
        if kube.status_of(exc) == 404:
            return None
        raise DiagnoseError({"pod": f"Kubernetes API unavailable: {kube.describe(exc)}"}, status=503) from exc
    try:
        return wire.parse_pod(wire.load_json(resp.data), "pod")
    finally:
        resp.release_conn()


def resolve_pod(query: DiagnoseQuery) -> tuple[PodInfo, str]:
    """The pod to explain and where it came from."""
    if query.name:
        row = selectors.observed_pod(namespace=query.namespace, name=query.name)
        if row is not None:
            pod = PodInfo(
                namespace=row.namespace, name=row.name, uid=row.uid, labels=dict(row.labels or {}),
                annotations=dict(row.annotations or {}), cpu_request_millicores=row.cpu_request_millicores,
                memory_request_bytes=row.memory_request_bytes,
            )
            source = "pod cache (watch_cluster)"
        else:
            found = _pod_from_api(query.namespace, query.name)
            if found is None and query.labels is None:
                raise DiagnoseError(
                    {"pod": f"{query.namespace}/{query.name} is neither in the pod cache nor in the Kubernetes API; "
                            "give its labels with labels=k=v,..."},
                    status=404,
                )
            pod = found or PodInfo(namespace=query.namespace, name=query.name)
            source = "Kubernetes API" if found is not None else "query"
        if query.labels is not None and source != "query":
            pod = dataclasses.replace(pod, labels=dict(query.labels))
            source += " with labels from the query"
        elif query.labels is not None:
            pod = dataclasses.replace(pod, labels=dict(query.labels))
        return pod, source
    return PodInfo(namespace=query.namespace, name="", labels=dict(query.labels or {})), "query labels"


def jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k) if not isinstance(k, tuple) else "/".join(map(str, k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def diagnose_pod(query: DiagnoseQuery) -> dict[str, Any]:

    pod, source = resolve_pod(query)
    try:
        state = selectors.build_cluster_state()
        profiles, default_profile = selectors.compiled_profiles()
    except (DatabaseError, InterfaceError) as exc:
        raise DiagnoseError({"database": f"the database is unavailable: {type(exc).__name__}: {exc}"},
                            status=503) from exc
    problems: list[str] = []
    if query.profile:
        if query.profile not in profiles:
            raise DiagnoseError({"profile": [f"no profile named {query.profile!r}; have {sorted(profiles)}"]})
        profile_name = query.profile
    else:
        profile_name, _, note = engine.choose_profile(pod, profiles, default_profile)
        problems.extend([note] if note else [])
    diagnosis = engine.explain(state, pod)
    topology = state.topology
    if topology.size == 0:
        problems.append("no network topology yet: network scorers give every node the same score")
    elif getattr(topology, "stale_reason", ""):
        problems.append(f"the topology is stale: {topology.stale_reason}")
    if not state.nodes:
        problems.append("the node cache is empty: run `manage.py watch_cluster` (or load a scenario)")
    return {
        "pod": {"namespace": pod.namespace, "name": pod.name, "labels": dict(pod.labels), "source": source},
        "profile": profile_name,
        "profiles": sorted(profiles),
        "extender": problems,
        "topology": {
            "version": getattr(topology, "version", 0),
            "nodes": topology.size,
            "stale_reason": getattr(topology, "stale_reason", ""),
        },
        "node_cache": {"nodes": len(state.nodes)},
        "diagnosis": jsonable(diagnosis),
    }
