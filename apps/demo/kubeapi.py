"""A fake Kubernetes API server that the real ``kubernetes`` Python client talks to unmodified.

CI cannot run a real API server, so tests point ``settings.NETAWARE["KUBE_API_URL"]`` at this
HTTP server (stdlib ``ThreadingHTTPServer`` in a daemon thread on 127.0.0.1, free port). It
speaks the REST protocol for the calls netaware makes, with the real semantics that matter:
one global, etcd-like ``resourceVersion`` counter, optimistic concurrency, the status subresource,
``metadata.generation`` bumps on spec changes, chunked watch streams and ``Status`` error bodies.

Usage::

    from apps.demo.kubeapi import FakeKube

    with FakeKube() as fake:                      # or fake = FakeKube().start(); ...; fake.stop()
        fake.register_crd_file("k8s/crds/appgroup.yaml")        # or fake.register(...)
        settings.NETAWARE["KUBE_API_URL"] = fake.url             # then netaware_core.kube.reset_clients()
        fake.add_node("n1", zone="A", region="r1")
        fake.add_pod("default", "web-1", labels={"app": "web"})
        ...

Routes (``{g}``/``{v}`` of any registered resource; core resources live under ``/api/v1``):

* ``/apis/{g}/{v}/namespaces/{ns}/{plural}[/{name}[/status]]`` and cluster-scoped
  ``/apis/{g}/{v}/{plural}[/{name}[/status]]``; also the all-namespaces list ``/apis/{g}/{v}/{plural}``.
* ``GET`` one object or a list (``labelSelector``: ``k=v``, ``k!=v``, ``k in (a,b)``, ``k notin (..)``,
  ``k``, ``!k``; ``fieldSelector``: dotted paths with ``=``/``==``/``!=``). The list carries
  ``metadata.resourceVersion``. ``watch=true`` streams newline-delimited JSON events
  (``ADDED``/``MODIFIED``/``DELETED``) with chunked transfer encoding: without ``resourceVersion`` (or
  ``"0"``) it first replays the current objects as ``ADDED``; with a version older than the
  compaction point it sends one ``ERROR`` event carrying a 410 ``Expired`` Status. ``timeoutSeconds``
  ends the stream.
* ``POST`` create (201; 409 ``AlreadyExists``; ``generateName``; status dropped when the resource has a
  status subresource; 400 on apiVersion/kind/namespace mismatch; 422 on a CRD schema violation).
* ``PUT`` update: ``metadata.resourceVersion`` is required (422) and must match (409 ``Conflict``);
  on the main resource status is ignored, on ``/status`` only status changes. A no-op write keeps the
  resourceVersion and emits no event (as the real server does).
* ``PATCH``: ``application/merge-patch+json`` (RFC 7386), ``application/strategic-merge-patch+json``
  (treated as a merge patch), ``application/json-patch+json`` (RFC 6902 add/remove/replace/test) and
  server-side apply ``application/apply-patch+yaml`` with ``fieldManager`` (required) and ``force``.
  Apply model (simplified, documented): one owner per object's spec; a non-forced apply by another
  manager that changes the spec answers 409 ``Conflict``; the applied spec replaces the spec,
  applied labels/annotations are merged; applying to a missing object creates it.
* ``DELETE`` (returns the object; ``preconditions.resourceVersion``/``uid`` in the body → 409).
* core ``nodes`` (cluster), ``pods`` (namespaced, also ``/api/v1/pods``), ``events`` (namespaced, also
  ``/api/v1/events``), ``namespaces``; ``POST /api/v1/namespaces/{ns}/pods/{name}/binding`` sets
  ``spec.nodeName`` and answers a ``Status`` Success 201 (409 when already bound) — the generated client
  cannot deserialize that Status into a V1Binding, call it with ``_preload_content=False`` (see
  ``netaware_core.kube.bind_pod``). ``GET /version``.
* ``POST /api/v1/namespaces/{ns}/pods/{name}/eviction`` (policy/v1 ``Eviction``): deletes the pod unless a
  ``policy/v1`` PodDisruptionBudget whose selector matches it would be violated — then 429
  ``TooManyRequests`` with a ``DisruptionBudget`` cause, as the real server answers. The budget is computed
  live (no disruption controller): expected = the PDB's matching pods not being deleted, healthy = those
  Ready; ``minAvailable`` (int or %, rounded up) or ``maxUnavailable`` (int or %, rounded up) gives the
  desired healthy count; an eviction needs healthy - 1 >= desired, unless the pod is not Ready itself
  (then healthy >= desired suffices: IfHealthyBudget). More than one matching PDB: 500, as the real server.
  Also ``apps/v1`` deployments/replicasets and ``policy/v1`` poddisruptionbudgets are stored (schema-less).
* ``run_controllers=True`` (the demo cluster): a ReplicaSet's stand-in. A deleted (or evicted) pod whose
  controller ``ownerReference`` is a ReplicaSet that exists gets a replacement: a Pending pod named
  ``<rs>-<5 random>`` with the deleted pod's labels, annotations, owner and spec minus ``nodeName`` — for the
  scheduler to place again. Nothing else of a controller (no scaling, no template diffing).

Test hooks (all thread-safe):

* ``register(group, version, plural, kind, *, namespaced=True, status_subresource=True, schema=None)``,
  ``register_crd(crd_dict)``, ``register_crd_file(path)`` (every served version of a CRD; the
  ``openAPIV3Schema`` is applied as the real server does: unknown fields pruned, ``default`` values
  filled in, then a structural validation — 422 ``Invalid`` with ``details.causes[].field``; CEL
  ``x-kubernetes-validations`` and ``format`` are not enforced),
  ``register_defaults()`` (schema-less, namespaced netaware.io and diktyo appgroups /
  networktopologies, where no CRD registered them).
  The pytest fixture ``fake_kube`` (tests/conftest.py) starts one, registers k8s/crds/*.yaml and the
  defaults, and points ``settings.NETAWARE["KUBE_API_URL"]`` at it.
* State: ``create(group, version, plural, obj, namespace=None) -> dict`` (as a POST, but keeps status),
  ``get(...) -> dict | None``, ``list(group, version, plural, namespace=None) -> list[dict]``,
  ``merge(group, version, plural, name, patch, namespace=None) -> dict`` (an out-of-band merge
  patch of the whole object, status included, like another controller writing), ``remove(...)``,
  ``add_node(name, *, labels=None, allocatable=None, zone=None, region=None) -> dict``,
  ``add_pod(namespace, name, *, labels=None, node=None, phase="Pending", requests=None,
  scheduler_name=None, owner=None) -> dict``, ``events(namespace=None, involved_name=None) -> list[dict]``,
  ``resource_version`` (int, the current global version), ``compact()`` (forget watch history: a watch
  from any older version gets 410).
* ``watch_delay`` (seconds, default 0): every watch event is delivered that late (a lagging watch).
* ``never_ready`` (a set of label selector strings): bound pods matching one report Running but not Ready
  (with ``run_bound_pods``): a replacement that never becomes Ready.
* Faults: ``fail(status, *, method=None, path=None, times=1, delay=0.0, retry_after=None,
  reason=None, message=None)`` — the next ``times`` requests whose method matches and whose path
  matches the regex ``path`` (``re.search``) answer ``status`` with a real Status body (after
  ``delay`` seconds); ``slow(delay, *, method=None, path=None, times=1)`` — delay then answer
  normally; ``clear_faults()``; ``down()`` closes the listening socket and every open connection
  (clients get connection refused), ``up()`` listens again on the same port with the state intact.
* Inspection: ``requests`` (list of ``Request(method, path, query, content_type, body, status)``),
  ``count(method=None, path=None) -> int`` (``path`` is a regex).
"""

from __future__ import annotations

import bisect
import builtins
import contextlib
import copy
import json
import re
import secrets
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import yaml

from apps.appgroups import validators
from netaware_core import crdschema

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (group, version, plural)


@dataclass
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status_subresource: bool = True
    schema: dict[str, Any] | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


@dataclass
class Fault:
    status: int | None
    method: str | None
    path: str | None
    times: int
    delay: float = 0.0
    retry_after: float | None = None
    reason: str | None = None
    message: str | None = None

    def matches(self, method: str, path: str) -> bool:
        if self.times <= 0:
            return False
        if self.method and self.method.upper() != method:
            return False
        return not (self.path and not re.search(self.path, path))


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any
    status: int = 0


@dataclass
class _Event:
    rv: int
    key: Key
    type: str
    obj: Obj
    at: float = 0.0  # monotonic time of the write (watch_delay)


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> Obj:
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> Obj:
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def _event_rv(event: _Event) -> int:
    return event.rv


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _copy(obj: Any) -> Any:
    try:
        return orjson.loads(orjson.dumps(obj))  # objects are JSON: much faster than deepcopy
    except TypeError:
        return copy.deepcopy(obj)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return _copy(patch)
    result = _copy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise ApiError(400, "BadRequest", f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def json_patch(target: Obj, ops: list[Any]) -> Obj:
    """RFC 6902 add / remove / replace / test."""
    doc = _copy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise ApiError(400, "BadRequest", "json patch operations need op and path")
        parts = _pointer(op["path"])
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1]
        kind = op["op"]
        try:
            if kind == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
                if current != op.get("value"):
                    raise ApiError(422, "Invalid", f"test operation failed at {op['path']}")
            elif kind == "remove":
                if isinstance(parent, list):
                    parent.pop(int(last))
                else:
                    del parent[last]
            elif kind in {"add", "replace"}:
                if isinstance(parent, list):
                    if last == "-":
                        parent.append(op.get("value"))
                    elif kind == "add":
                        parent.insert(int(last), op.get("value"))
                    else:
                        parent[int(last)] = op.get("value")
                else:
                    if kind == "replace" and last not in parent:
                        raise ApiError(422, "Invalid", f"replace of missing path {op['path']}")
                    parent[last] = op.get("value")
            else:
                raise ApiError(400, "BadRequest", f"unsupported json patch op {kind!r}")
        except (KeyError, IndexError, ValueError) as exc:
            raise ApiError(422, "Invalid", f"json patch failed at {op['path']}: {exc}") from exc
    return doc


def _split_terms(selector: str) -> list[str]:
    """The selector's requirements as the product splits them, a trailing comma not making an empty term."""
    terms = validators.split_requirements(selector)
    return terms[:-1] if terms[-1] == "" else terms


_SET_TERM = re.compile(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$")


def label_selector_matches(selector: str, labels: dict[str, str]) -> bool:
    for term in _split_terms(selector):
        set_match = _SET_TERM.match(term)
        if set_match:
            key, op, raw = set_match.groups()
            values = {v.strip() for v in raw.split(",") if v.strip()}
            if op == "in" and labels.get(key) not in values:
                return False
            if op == "notin" and key in labels and labels[key] in values:
                return False
        elif "!=" in term:
            key, value = (s.strip() for s in term.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def _selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels, matchExpressions) against labels; an empty one matches all."""
    if not isinstance(selector, dict):
        return False  # a PDB without a selector selects nothing (policy/v1)
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), set(expr.get("values") or [])
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


def pod_ready(pod: Obj) -> bool:
    """The pod's Ready condition is True (what a PDB counts as healthy)."""
    status = pod.get("status") or {}
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def _scaled(value: Any, total: int) -> int:
    """An IntOrString of a PDB: an int, or a percentage of ``total`` rounded up."""
    if isinstance(value, str) and value.endswith("%"):
        return -(-int(value[:-1]) * total // 100)
    return int(value)


def _desired_healthy(spec: Obj, expected: int) -> int:
    if spec.get("minAvailable") is not None:
        return _scaled(spec["minAvailable"], expected)
    if spec.get("maxUnavailable") is not None:
        return max(0, expected - _scaled(spec["maxUnavailable"], expected))
    return expected  # neither: no disruption allowed (the real controller treats it as minAvailable 100 %)


def _dotted(obj: Obj, path: str) -> str:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    return "" if current is None else str(current)


def field_selector_matches(selector: str, obj: Obj) -> bool:
    for term in _split_terms(selector):
        if "!=" in term:
            path, value = term.split("!=", 1)
            if _dotted(obj, path.strip()) == value.strip():
                return False
        elif "=" in term:
            path, value = term.replace("==", "=").split("=", 1)
            if _dotted(obj, path.strip()) != value.strip():
                return False
    return True




def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in {"metadata", "status", "apiVersion", "kind"}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, Nagle + delayed ACK add 40 ms each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.fake._track(self.connection, add=False)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        record = Request(method, split.path, query, content_type, None)
        try:
            body = _parse_body(raw, content_type)
            record.body = body
            fake._record(record)
            fault = fake._take_fault(method, split.path)
            if fault is not None:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.status is not None:
                    reason = fault.reason or _REASONS.get(fault.status, "InternalError")
                    message = fault.message or f"injected fault: {reason}"
                    details = {"retryAfterSeconds": int(fault.retry_after)} if fault.retry_after else None
                    raise ApiError(fault.status, reason, message, details)
            if method == "GET" and query.get("watch") in {"true", "1"}:
                record.status = 200
                fake._watch(self, split.path, query)
                return
            code, payload = fake._handle(method, split.path, query, content_type, body)
            if method == "GET" and code == 200 and "as=Table" in (self.headers.get("Accept") or ""):
                payload = _table(payload)  # kubectl get asks for server-side printing
        except ApiError as exc:
            code, payload = exc.code, exc.status()
        except Exception as exc:  # a bug in the fake must look like a 500, not hang the client
            code, payload = 500, status_body(500, "InternalError", f"fake server error: {exc!r}")
        record.status = code
        self._send_json(code, payload)

    def _send_json(self, code: int, payload: Any) -> None:
        data = orjson.dumps(payload)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if code == 429:
            self.send_header("Retry-After", str(payload.get("details", {}).get("retryAfterSeconds", 1)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _age(meta: Obj) -> str:
    created = meta.get("creationTimestamp")
    if not created:
        return "<unknown>"
    seconds = max(0, int((datetime.now(UTC) - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _row(obj: Obj) -> tuple[list[Any], list[Any]]:
    """(cells, wide cells) of kubectl's default columns for pods and nodes; name and age otherwise."""
    meta = obj.get("metadata") or {}
    kind = obj.get("kind")
    if kind == "Pod":
        status = obj.get("status") or {}
        spec = obj.get("spec") or {}
        containers = spec.get("containers") or []
        ready: int | str = sum(1 for c in status.get("containerStatuses") or [] if c.get("ready"))
        return ([meta.get("name"), f"{ready}/{len(containers)}", status.get("phase") or "Pending", 0, _age(meta)],
                [status.get("podIP") or "<none>", spec.get("nodeName") or "<none>", "<none>", "<none>"])
    if kind == "Node":
        status = obj.get("status") or {}
        ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), "Unknown")
        state = "Ready" if ready == "True" else "NotReady"
        if (obj.get("spec") or {}).get("unschedulable"):
            state += ",SchedulingDisabled"
        address = next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"),
                       "<none>")
        zone = (meta.get("labels") or {}).get("topology.kubernetes.io/zone", "<none>")
        return [meta.get("name"), state, "<none>", _age(meta), "v1.31.0-netaware-demo"], [address, zone]
    return [meta.get("name"), _age(meta)], []


_COLUMNS: dict[str, tuple[list[str], list[str]]] = {
    "Pod": (["Name", "Ready", "Status", "Restarts", "Age"], ["IP", "Node", "Nominated Node", "Readiness Gates"]),
    "Node": (["Name", "Status", "Roles", "Age", "Version"], ["Internal-IP", "Zone"]),
}


def _table(payload: Obj) -> Obj:
    """A list or an object as a meta.k8s.io/v1 Table (kubectl's server-side printing)."""
    items = payload.get("items") if "items" in payload else [payload]
    kind = payload.get("kind", "")
    kind = kind[: -len("List")] if kind.endswith("List") else kind
    normal, wide = _COLUMNS.get(kind, (["Name", "Age"], []))
    columns = [{"name": c, "type": "string", "format": "name" if c == "Name" else "", "description": "",
                "priority": 0} for c in normal]
    columns += [{"name": c, "type": "string", "format": "", "description": "", "priority": 1} for c in wide]
    rows = []
    for obj in items or []:
        cells, wide_cells = _row({**obj, "kind": obj.get("kind") or kind})
        rows.append({"cells": cells + wide_cells, "object": {
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": (payload.get("metadata") or {}).get("resourceVersion", "")},
            "columnDefinitions": columns, "rows": rows}


def _parse_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    try:
        if "yaml" in content_type:
            try:
                return json.loads(raw)  # clients send JSON (valid YAML); PyYAML is slow on 1 MiB bodies
            except ValueError:
                return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise ApiError(400, "BadRequest", f"the request body could not be decoded: {exc}") from exc


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeKube):
        self.fake = fake
        super().__init__(address, _Handler)


class FakeKube:
    """In-memory Kubernetes API server; see the module docstring for routes and hooks."""

    def __init__(self, *, history_limit: int = 20000, max_requests: int = 200_000, host: str = "127.0.0.1",
                 run_bound_pods: bool = False, run_controllers: bool = False):
        self.host = host
        # The demo stands in for kubelets: a bound pod reports Running (ready, an IP) at once.
        self.run_bound_pods = run_bound_pods
        # ... and for ReplicaSet controllers: a deleted pod of an existing ReplicaSet is replaced.
        self.run_controllers = run_controllers
        self.never_ready: set[str] = set()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._types: dict[Key, ResourceType] = {}
        self._objects: dict[Key, dict[tuple[str, str], Obj]] = {}
        self._history: list[_Event] = []
        self._history_limit = history_limit
        self._compacted_rv = 0
        self._rv = 100
        self._faults: list[Fault] = []
        self._connections: set[socket.socket] = set()
        self._spec_owner: dict[tuple[Key, str, str], str] = {}
        self._generation = 0  # bumps on down(): open watches of an older generation end
        # Seconds every watch event is held back (a slow watch: clients must not depend on it).
        self.watch_delay = 0.0
        # Recent requests (bounded: a long-running demo must not grow without limit).
        self.requests: deque[Request] = deque(maxlen=max_requests)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        for plural, kind, namespaced in (
            ("nodes", "Node", False),
            ("pods", "Pod", True),
            ("events", "Event", True),
            ("namespaces", "Namespace", False),
        ):
            self.register(
                "", "v1", plural, kind, namespaced=namespaced, status_subresource=plural != "events"
            )
        self.register("coordination.k8s.io", "v1", "leases", "Lease", status_subresource=False)
        self.register("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
        self.register("apps", "v1", "replicasets", "ReplicaSet")
        self.register("apps", "v1", "deployments", "Deployment")

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, port: int = 0) -> FakeKube:
        self._listen(port or self.port)
        return self

    def _listen(self, port: int) -> None:
        self._server = _Server((self.host, port), self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.down()

    def down(self) -> None:
        """Stop listening and cut every open connection (watches included); state is kept."""
        server, self._server = self._server, None
        with self._changed:
            self._generation += 1
            self._changed.notify_all()
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def up(self) -> None:
        if self._server is None:
            self._listen(self.port)

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # -- registration ----------------------------------------------------------------------
    def register(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        *,
        namespaced: bool = True,
        status_subresource: bool = True,
        schema: dict[str, Any] | None = None,
    ) -> None:
        with self._lock:
            key = (group, version, plural)
            self._types[key] = ResourceType(
                group, version, plural, kind, namespaced, status_subresource, schema
            )
            self._objects.setdefault(key, {})

    def register_defaults(self) -> None:
        """Register (without schema) the netaware and diktyo kinds that no CRD file registered."""
        for group, plural, kind in (
            ("netaware.io", "appgroups", "AppGroup"),
            ("netaware.io", "networktopologies", "NetworkTopology"),
            ("appgroup.diktyo.x-k8s.io", "appgroups", "AppGroup"),
            ("networktopology.diktyo.x-k8s.io", "networktopologies", "NetworkTopology"),
        ):
            if (group, "v1alpha1", plural) not in self._types:
                self.register(group, "v1alpha1", plural, kind, namespaced=True)

    def register_crd(self, crd: Obj) -> None:
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            self.register(
                spec["group"],
                version["name"],
                spec["names"]["plural"],
                spec["names"]["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                status_subresource="status" in (version.get("subresources") or {}),
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            )

    def register_crd_file(self, path: str | Path) -> None:
        for doc in yaml.safe_load_all(Path(path).read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                self.register_crd(doc)

    # -- faults and inspection --------------------------------------------------------------
    def fail(
        self,
        status: int,
        *,
        method: str | None = None,
        path: str | None = None,
        times: int = 1,
        delay: float = 0.0,
        retry_after: float | None = None,
        reason: str | None = None,
        message: str | None = None,
    ) -> None:
        with self._lock:
            self._faults.append(Fault(status, method, path, times, delay, retry_after, reason, message))

    def slow(
        self, delay: float, *, method: str | None = None, path: str | None = None, times: int = 1
    ) -> None:
        with self._lock:
            self._faults.append(Fault(None, method, path, times, delay))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    return fault
        return None

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def count(self, method: str | None = None, path: str | None = None) -> int:
        with self._lock:
            return sum(
                1
                for r in self.requests
                if (method is None or r.method == method.upper())
                and (path is None or re.search(path, r.path))
            )

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def compact(self) -> None:
        with self._changed:
            self._history.clear()
            self._compacted_rv = self._rv
            self._changed.notify_all()

    # -- state hooks -----------------------------------------------------------------------
    def _type(self, group: str, version: str, plural: str) -> ResourceType:
        try:
            return self._types[(group, version, plural)]
        except KeyError:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({plural}.{group})"
            ) from None

    def create(self, group: str, version: str, plural: str, obj: Obj, namespace: str | None = None) -> Obj:
        rt = self._type(group, version, plural)
        return self._create(rt, namespace, _copy(obj), keep_status=True)

    def seed(self, objects: list[Obj]) -> int:
        """Create every object (kind looked up among the registered types); returns how many."""
        by_kind = {(rt.group, rt.version, rt.kind): rt for rt in self._types.values()}
        for obj in objects:
            group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
            rt = by_kind.get((group, version, str(obj.get("kind") or "")))
            if rt is None:
                raise ValueError(f"seed: no registered resource for apiVersion {obj.get('apiVersion')!r} "
                                 f"kind {obj.get('kind')!r}")
            namespace = (obj.get("metadata") or {}).get("namespace") if rt.namespaced else None
            self._create(rt, namespace or ("default" if rt.namespaced else None), _copy(obj), keep_status=True)
        return len(objects)

    def get(
        self, group: str, version: str, plural: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        with self._lock:
            found = self._objects.get((group, version, plural), {}).get((namespace or "", name))
            return _copy(found) if found is not None else None

    def list(self, group: str, version: str, plural: str, namespace: str | None = None) -> list[Obj]:
        with self._lock:
            items = self._objects.get((group, version, plural), {})
            return [_copy(o) for (ns, _), o in sorted(items.items()) if namespace is None or ns == namespace]

    def merge(
        self, group: str, version: str, plural: str, name: str, patch: Obj, namespace: str | None = None
    ) -> Obj:
        rt = self._type(group, version, plural)
        with self._lock:
            old = self._existing(rt, namespace or "", name)
            new = merge_patch(old, patch)
            return self._store_update(rt, old, new, manager="out-of-band")

    def remove(self, group: str, version: str, plural: str, name: str, namespace: str | None = None) -> Obj:
        rt = self._type(group, version, plural)
        return self._delete(rt, namespace or "", name, None)

    def add_node(
        self,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        allocatable: dict[str, str] | None = None,
        zone: str | None = None,
        region: str | None = None,
    ) -> Obj:
        all_labels = {"kubernetes.io/hostname": name, **(labels or {})}
        if zone:
            all_labels["topology.kubernetes.io/zone"] = zone
        if region:
            all_labels["topology.kubernetes.io/region"] = region
        resources = allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": all_labels},
            "spec": {},
            "status": {
                "capacity": dict(resources),
                "allocatable": dict(resources),
                "conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            },
        }
        return self.create("", "v1", "nodes", node)

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        node: str | None = None,
        phase: str = "Pending",
        requests: dict[str, str] | None = None,
        scheduler_name: str | None = None,
        owner: dict[str, str] | None = None,
    ) -> Obj:
        container: Obj = {"name": "main", "image": "registry.k8s.io/pause:3.9"}
        if requests:
            container["resources"] = {"requests": dict(requests)}
        metadata: Obj = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
        if owner:
            metadata["ownerReferences"] = [
                {"apiVersion": "apps/v1", "controller": True, "uid": str(uuid.uuid4()), **owner}
            ]
        spec: Obj = {"containers": [container]}
        if node:
            spec["nodeName"] = node
        if scheduler_name:
            spec["schedulerName"] = scheduler_name
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": spec,
            "status": {"phase": phase},
        }
        return self.create("", "v1", "pods", pod, namespace=namespace)

    def events(self, namespace: str | None = None, involved_name: str | None = None) -> builtins.list[Obj]:
        return [
            e
            for e in self.list("", "v1", "events", namespace)
            if involved_name is None or (e.get("involvedObject") or {}).get("name") == involved_name
        ]

    # -- storage core ----------------------------------------------------------------------
    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(self, rt: ResourceType, type_: str, obj: Obj) -> None:
        self._history.append(
            _Event(
                int(obj["metadata"]["resourceVersion"]), (rt.group, rt.version, rt.plural), type_, _copy(obj),
                time.monotonic(),
            )
        )
        # Trim in chunks (a tenth of the limit): slicing the whole history on every event would make
        # a busy watch O(history) per write.
        if len(self._history) > self._history_limit + max(1, self._history_limit // 10):
            drop = len(self._history) - self._history_limit
            self._compacted_rv = self._history[drop - 1].rv
            del self._history[:drop]
        self._changed.notify_all()

    def _validate(self, rt: ResourceType, obj: Obj) -> None:
        if not rt.schema:
            return
        crdschema.prune_and_default(rt.schema, obj, root=True)
        causes: list[dict[str, str]] = []
        crdschema.check(rt.schema, obj, "", causes)
        if causes:
            name = obj.get("metadata", {}).get("name", "")
            message = f'{rt.kind}.{rt.group} "{name}" is invalid: ' + "; ".join(
                f"{c['field']}: {c['message']}" for c in causes[:20]
            )
            raise ApiError(
                422,
                "Invalid",
                message,
                {"name": name, "group": rt.group, "kind": rt.kind, "causes": causes[:20]},
            )

    def _existing(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        found = self._objects[(rt.group, rt.version, rt.plural)].get((namespace, name))
        if found is None:
            raise ApiError(
                404,
                "NotFound",
                f'{rt.qualified} "{name}" not found',
                {"name": name, "group": rt.group, "kind": rt.plural},
            )
        return found

    def _create(
        self, rt: ResourceType, namespace: str | None, obj: Any, *, keep_status: bool, manager: str = ""
    ) -> Obj:
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the body of the request must be a JSON object")
        for key, what, expected in (("apiVersion", "API version", rt.api_version), ("kind", "kind", rt.kind)):
            value = obj.get(key) or expected
            if value != expected:
                raise ApiError(
                    400, "BadRequest", f"the {what} in the data ({value}) does not match the expected {what} ({expected})"
                )
            obj[key] = value
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        name = meta.get("name")
        if not name:
            raise ApiError(
                422,
                "Invalid",
                f"{rt.kind} is invalid: metadata.name: Required value: name or generateName is required",
            )
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if namespace and body_ns and body_ns != namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
            namespace = ""
        if rt.status_subresource and not keep_status:
            obj.pop("status", None)
        with self._lock:
            bucket = self._objects[(rt.group, rt.version, rt.plural)]
            if (namespace, name) in bucket:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{rt.qualified} "{name}" already exists',
                    {"name": name, "group": rt.group, "kind": rt.plural},
                )
            meta.pop("resourceVersion", None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = _now()
            meta["generation"] = 1
            self._validate(rt, obj)
            meta["resourceVersion"] = str(self._next_rv())
            bucket[(namespace, name)] = obj
            if manager:
                self._spec_owner[((rt.group, rt.version, rt.plural), namespace, name)] = manager
            self._emit(rt, "ADDED", obj)
            return _copy(obj)

    def _store_update(self, rt: ResourceType, old: Obj, new: Obj, *, manager: str) -> Obj:
        """Keep system metadata, bump generation on spec change, skip no-op writes."""
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        for key in ("uid", "creationTimestamp", "name", "namespace", "generation"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if rt.schema:
            crdschema.prune_and_default(rt.schema, new, root=True)
        if new == old:
            return _copy(old)
        if _spec_part(new) != _spec_part(old):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
            if manager:
                self._spec_owner[
                    ((rt.group, rt.version, rt.plural), old_meta.get("namespace", ""), old_meta["name"])
                ] = manager
        self._validate(rt, new)
        meta["resourceVersion"] = str(self._next_rv())
        self._objects[(rt.group, rt.version, rt.plural)][
            (old_meta.get("namespace", ""), old_meta["name"])
        ] = new
        self._emit(rt, "MODIFIED", new)
        return _copy(new)

    def _delete(self, rt: ResourceType, namespace: str, name: str, options: Any) -> Obj:
        with self._lock:
            old = self._existing(rt, namespace, name)
            pre = (options.get("preconditions") or {}) if isinstance(options, dict) else {}
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise self._conflict(
                    rt, name, "Precondition failed: ResourceVersion in precondition does not match"
                )
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                raise self._conflict(rt, name, "Precondition failed: UID in precondition does not match")
            del self._objects[(rt.group, rt.version, rt.plural)][(namespace, name)]
            self._spec_owner.pop(((rt.group, rt.version, rt.plural), namespace, name), None)
            gone = _copy(old)
            gone["metadata"]["resourceVersion"] = str(self._next_rv())
            self._emit(rt, "DELETED", gone)
            return gone

    @staticmethod
    def _conflict(rt: ResourceType, name: str, why: str) -> ApiError:
        return ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {rt.qualified} "{name}": {why}',
            {"name": name, "group": rt.group, "kind": rt.plural},
        )

    # -- HTTP routing --------------------------------------------------------------------
    def _route(self, path: str) -> tuple[ResourceType, str | None, str | None, str | None]:
        """-> (type, namespace or None, name or None, subresource or None)."""
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        rt = self._type(group, version, rest[0])
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if rt.namespaced and name is not None and namespace is None:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        if not rt.namespaced and namespace is not None:
            raise ApiError(404, "NotFound", f"{rt.plural} is cluster-scoped ({path})")
        return rt, namespace, name, sub

    def _handle(
        self, method: str, path: str, query: dict[str, str], content_type: str, body: Any
    ) -> tuple[int, Any]:
        if path in {"/version", "/version/"}:
            return 200, {
                "major": "1",
                "minor": "31",
                "gitVersion": "v1.31.0-netaware-fake",
                "platform": "linux/amd64",
            }
        discovery = self._discovery(path) if method == "GET" else None
        if discovery is not None:
            return 200, discovery
        rt, namespace, name, sub = self._route(path)
        if sub is not None and not (
            (sub == "status" and rt.status_subresource)
            or (sub in ("binding", "eviction") and rt.plural == "pods" and method == "POST")
        ):
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        ns = namespace or ""
        if method == "GET":
            if name is None:
                return 200, self._list_response(rt, namespace, query)
            with self._lock:
                return 200, _copy(self._existing(rt, ns, name))
        if method == "POST":
            if sub == "binding":
                return self._bind(ns, name or "", body)
            if sub == "eviction":
                return self._evict(ns, name or "", body)
            if name is not None:
                raise ApiError(405, "MethodNotAllowed", "POST to a named object is not allowed")
            if rt.namespaced and namespace is None:
                raise ApiError(405, "MethodNotAllowed", "create needs a namespace")
            return 201, self._create(
                rt, namespace, body, keep_status=False, manager=query.get("fieldManager", "unknown")
            )
        if name is None:
            raise ApiError(405, "MethodNotAllowed", f"{method} needs an object name")
        if method == "DELETE":
            gone = self._delete(rt, ns, name, body)
            if rt.plural == "pods" and not rt.group:
                self._replace(gone)
            return 200, gone
        if method == "PUT":
            return 200, self._update(rt, ns, name, sub, body, query)
        if method == "PATCH":
            return self._patch(rt, ns, name, sub, body, content_type, query)
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")

    def _discovery(self, path: str) -> Obj | None:
        """The discovery documents kubectl reads before anything else (/api, /apis, /api/v1, /apis/g/v)."""
        parts = [p for p in path.split("/") if p]
        with self._lock:
            types = list(self._types.values())
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}]}
        if parts == ["apis"]:
            groups: dict[str, list[str]] = {}
            for rt in types:
                if rt.group:
                    groups.setdefault(rt.group, [])
                    if rt.version not in groups[rt.group]:
                        groups[rt.group].append(rt.version)
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                 "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                for g, vs in sorted(groups.items())]}
        if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
            resources: list[Obj] = []
            for rt in types:
                if (rt.group, rt.version) != (group, version):
                    continue
                verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
                resources.append({"name": rt.plural, "singularName": rt.kind.lower(), "namespaced": rt.namespaced,
                                  "kind": rt.kind, "verbs": verbs})
                if rt.status_subresource:
                    resources.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                                      "kind": rt.kind, "verbs": ["get", "patch", "update"]})
            if not resources:
                return None
            return {"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": f"{group}/{version}" if group else version, "resources": resources}
        return None

    def _list_response(self, rt: ResourceType, namespace: str | None, query: dict[str, str]) -> Obj:
        with self._lock:
            items = [
                _copy(o)
                for (ns, _), o in sorted(self._objects[(rt.group, rt.version, rt.plural)].items())
                if (namespace is None or ns == namespace) and self._selected(o, query)
            ]
            rv = str(self._rv)
        return {
            "apiVersion": rt.api_version,
            "kind": f"{rt.kind}List",
            "metadata": {"resourceVersion": rv},
            "items": items,
        }

    @staticmethod
    def _selected(obj: Obj, query: dict[str, str]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if query.get("labelSelector") and not label_selector_matches(query["labelSelector"], labels):
            return False
        return not (query.get("fieldSelector") and not field_selector_matches(query["fieldSelector"], obj))

    def _update(
        self, rt: ResourceType, ns: str, name: str, sub: str | None, body: Any, query: dict[str, str]
    ) -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request must be a JSON object")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        with self._lock:
            old = self._existing(rt, ns, name)
            rv = meta.get("resourceVersion")
            if not rv:
                raise ApiError(
                    422,
                    "Invalid",
                    f'{rt.kind}.{rt.group} "{name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
                )
            if rv != old["metadata"]["resourceVersion"]:
                raise self._conflict(
                    rt,
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
            new = self._split_status(rt, old, _copy(body), sub)
            return self._store_update(rt, old, new, manager=query.get("fieldManager", "unknown"))

    @staticmethod
    def _split_status(rt: ResourceType, old: Obj, new: Obj, sub: str | None) -> Obj:
        if sub == "status":
            result = _copy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            return result
        if rt.status_subresource:
            if "status" in old:
                new["status"] = _copy(old["status"])
            else:
                new.pop("status", None)
        return new

    def _patch(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        sub: str | None,
        body: Any,
        content_type: str,
        query: dict[str, str],
    ) -> tuple[int, Obj]:
        manager = query.get("fieldManager", "")
        if content_type == "application/apply-patch+yaml":
            if not manager:
                raise ApiError(
                    422,
                    "Invalid",
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
                )
            return self._apply(rt, ns, name, sub, body, manager, force=query.get("force") in {"true", "1"})
        with self._lock:
            old = self._existing(rt, ns, name)
            if content_type == "application/json-patch+json":
                if not isinstance(body, list):
                    raise ApiError(400, "BadRequest", "a json patch must be a list of operations")
                patched = json_patch(old, body)
            elif content_type in {
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/json",
            }:
                if not isinstance(body, dict):
                    raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")
                patched = merge_patch(old, body)
            else:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format ({content_type})",
                )
            want_rv = (patched.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != old["metadata"]["resourceVersion"]:
                raise self._conflict(
                    rt,
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
            new = self._split_status(rt, old, patched, sub)
            return 200, self._store_update(rt, old, new, manager=manager or "unknown")

    def _apply(
        self, rt: ResourceType, ns: str, name: str, sub: str | None, body: Any, manager: str, *, force: bool
    ) -> tuple[int, Obj]:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "an apply patch must be an object")
        with self._lock:
            key = ((rt.group, rt.version, rt.plural), ns, name)
            existing = self._objects[key[0]].get((ns, name))
            if existing is None:
                if sub == "status":
                    self._existing(rt, ns, name)  # raises the 404
                body.setdefault("metadata", {})["name"] = name
                return 201, self._create(rt, ns or None, _copy(body), keep_status=False, manager=manager)
            if sub == "status":
                new = _copy(existing)
                new["status"] = _copy(body.get("status") or {})
                return 200, self._store_update(rt, existing, new, manager=manager)
            applied_spec = _spec_part(body)
            owner = self._spec_owner.get(key, manager)
            if owner != manager and not force and applied_spec != _spec_part(existing):
                raise ApiError(
                    409,
                    "Conflict",
                    f'Apply failed with 1 conflict: conflict with "{owner}": .spec',
                    {
                        "name": name,
                        "group": rt.group,
                        "kind": rt.plural,
                        "causes": [
                            {
                                "reason": "FieldManagerConflict",
                                "message": f'conflict with "{owner}"',
                                "field": ".spec",
                            }
                        ],
                    },
                )
            new = {
                k: _copy(v) for k, v in existing.items() if k in {"metadata", "status", "apiVersion", "kind"}
            }
            new.update(_copy(applied_spec))
            meta_in = body.get("metadata") or {}
            for field_name in ("labels", "annotations"):
                if meta_in.get(field_name):
                    merged = dict(new["metadata"].get(field_name) or {})
                    merged.update(meta_in[field_name])
                    new["metadata"][field_name] = merged
            self._spec_owner[key] = manager
            return 200, self._store_update(rt, existing, new, manager=manager)

    def _bind(self, ns: str, name: str, body: Any) -> tuple[int, Obj]:
        rt = self._types[("", "v1", "pods")]
        target = ((body or {}).get("target") or {}).get("name") if isinstance(body, dict) else None
        if not target:
            raise ApiError(400, "BadRequest", "Binding target.name is required")
        with self._lock:
            old = self._existing(rt, ns, name)
            uid = ((body.get("metadata") or {}).get("uid")) if isinstance(body, dict) else None
            if uid and uid != old["metadata"]["uid"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on pods/binding "{name}": Precondition failed: UID in precondition: {uid}, UID in object meta: {old["metadata"]["uid"]}',
                )
            current = (old.get("spec") or {}).get("nodeName")
            if current:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{current}"',
                    {"name": name, "kind": "pods/binding"},
                )
            new = _copy(old)
            new.setdefault("spec", {})["nodeName"] = target
            conditions = [
                c
                for c in new.setdefault("status", {}).get("conditions", [])
                if c.get("type") != "PodScheduled"
            ]
            conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()})
            new["status"]["conditions"] = conditions
            if self.run_bound_pods:
                containers = (new.get("spec") or {}).get("containers") or []
                labels = (new.get("metadata") or {}).get("labels") or {}
                ready = not any(label_selector_matches(sel, labels) for sel in self.never_ready)
                new["status"].update(
                    phase="Running", podIP=f"10.244.{self._rv // 250 % 250}.{self._rv % 250 + 1}",
                    containerStatuses=[{"name": c.get("name", ""), "ready": ready, "restartCount": 0,
                                        "started": True, "state": {"running": {"startedAt": _now()}}}
                                       for c in containers])
                new["status"]["conditions"] = [
                    *(c for c in new["status"]["conditions"] if c.get("type") != "Ready"),
                    {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": _now()}]
            self._store_update(rt, old, new, manager="binding")
        return 201, status_body(201, "", "")  # the real server answers a bare Success Status

    # -- eviction and the ReplicaSet stand-in ------------------------------------------------
    def _evict(self, ns: str, name: str, body: Any) -> tuple[int, Obj]:
        pods = self._types[("", "v1", "pods")]
        if isinstance(body, dict) and body.get("kind") not in (None, "Eviction"):
            raise ApiError(400, "BadRequest", f"the body must be an Eviction, not {body.get('kind')!r}")
        with self._lock:
            pod = self._existing(pods, ns, name)
            labels = (pod.get("metadata") or {}).get("labels") or {}
            budgets = [b for b in self._objects[("policy", "v1", "poddisruptionbudgets")].values()
                       if (b.get("metadata") or {}).get("namespace") == ns
                       and _selector_matches((b.get("spec") or {}).get("selector"), labels)]
            if len(budgets) > 1:
                raise ApiError(500, "InternalError",
                               "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                               "does not support.")
            if budgets and (pod.get("spec") or {}).get("nodeName"):
                budget = budgets[0]
                selector = (budget.get("spec") or {}).get("selector")
                matching = [p for (pns, _), p in self._objects[("", "v1", "pods")].items()
                            if pns == ns and _selector_matches(selector, (p.get("metadata") or {}).get("labels") or {})
                            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
                healthy = sum(1 for p in matching if pod_ready(p))
                desired = _desired_healthy(budget.get("spec") or {}, len(matching))
                allowed = healthy - desired if pod_ready(pod) else healthy - desired + 1
                if allowed <= 0:
                    budget_name = budget["metadata"]["name"]
                    raise ApiError(
                        429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.",
                        {"causes": [{"reason": "DisruptionBudget",
                                     "message": f"The disruption budget {budget_name} needs {desired} healthy pods "
                                                f"and has {healthy} currently"}]})
            gone = self._delete(pods, ns, name, (body or {}).get("deleteOptions") if isinstance(body, dict) else None)
        self._replace(gone)
        return 201, status_body(201, "", "")

    def _replace(self, gone: Obj) -> None:
        """The ReplicaSet stand-in: a Pending copy of a deleted pod whose controlling ReplicaSet exists."""
        if not self.run_controllers:
            return
        meta = gone.get("metadata") or {}
        owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
        ns = meta.get("namespace") or "default"
        if owner is None or owner.get("kind") != "ReplicaSet" or self.get("apps", "v1", "replicasets",
                                                                         owner.get("name", ""), ns) is None:
            return
        spec = {k: v for k, v in (gone.get("spec") or {}).items() if k != "nodeName"}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": f"{owner['name']}-", "namespace": ns,
                            **{k: meta[k] for k in ("labels", "annotations", "ownerReferences") if k in meta}},
               "spec": spec, "status": {"phase": "Pending"}}
        self._create(self._types[("", "v1", "pods")], ns, pod, keep_status=True)

    # -- watch ---------------------------------------------------------------------------
    def _watch(self, handler: _Handler, path: str, query: dict[str, str]) -> None:
        rt, namespace, name, _ = self._route(path)
        key = (rt.group, rt.version, rt.plural)
        timeout = float(query.get("timeoutSeconds") or 1800)
        deadline = time.monotonic() + timeout
        requested = query.get("resourceVersion") or ""

        def wanted(obj: Obj) -> bool:
            meta = obj.get("metadata") or {}
            if namespace is not None and meta.get("namespace") != namespace:
                return False
            if name is not None and meta.get("name") != name:
                return False
            return self._selected(obj, query)

        with self._lock:
            generation = self._generation
            initial: list[tuple[str, Obj]] = []
            if requested in {"", "0"}:
                last = self._rv
                objs = sorted(
                    self._objects[key].values(), key=lambda o: int(o["metadata"]["resourceVersion"])
                )
                initial = [("ADDED", _copy(o)) for o in objs if wanted(o)]
            else:
                try:
                    last = int(requested)
                except ValueError:
                    last = -1
                if last < self._compacted_rv:
                    expired = status_body(
                        410, "Expired", f"too old resource version: {requested} ({self._compacted_rv})"
                    )
                    initial = [("ERROR", expired)]
                    last = -2  # nothing more on this stream
        try:
            handler.start_stream()
            for type_, obj in initial:
                handler.send_chunk(orjson.dumps({"type": type_, "object": obj}) + b"\n")
            while last != -2:
                with self._changed:
                    start = bisect.bisect_right(self._history, last, key=_event_rv)  # history is in rv order
                    due = time.monotonic() - self.watch_delay
                    pending = []
                    for e in self._history[start:]:
                        if e.at > due:
                            break  # later events wait too: watch order is rv order
                        if e.key == key:
                            pending.append(e)
                    if not pending:
                        if self._generation != generation:
                            return
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        self._changed.wait(min(remaining, 0.5, self.watch_delay or 0.5))
                        continue
                    else:
                        last = pending[-1].rv
                        pending_lines = [
                            orjson.dumps({"type": e.type, "object": e.obj}) + b"\n"
                            for e in pending
                            if wanted(e.obj)
                        ]
                for line in pending_lines:
                    handler.send_chunk(line)
            handler.end_stream()
        except (BrokenPipeError, ConnectionResetError, OSError):
            handler.close_connection = True


def main(argv: list[str] | None = None) -> None:
    """``python -m apps.demo.kubeapi --port N [--seed FILE] [--crds DIR]``: serve the demo API in
    the foreground. ``--seed``: a JSON/YAML list of objects (or ``{"items": [...]}``) created at
    start; nodes, pods, namespaces and the registered custom resources are accepted."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", default="", help="objects to create at start (JSON or YAML)")
    parser.add_argument("--crds", default="", help="register every CRD file (*.yaml) of this folder")
    parser.add_argument("--ready-file", default="", help="write the URL here once listening")
    args = parser.parse_args(argv)
    server = FakeKube(host=args.host, max_requests=10_000)
    if args.crds:
        for path in sorted(Path(args.crds).glob("*.y*ml")):
            server.register_crd_file(path)
    server.register_defaults()
    if args.seed:
        raw = Path(args.seed).read_bytes()
        data = orjson.loads(raw) if args.seed.endswith(".json") else yaml.safe_load(raw)
        items = data.get("items", []) if isinstance(data, dict) else data
        server.seed(items)
    server.start(args.port)
    if args.ready_file:
        Path(args.ready_file).write_text(server.url)
    print(f"demo cluster API on {server.url}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
