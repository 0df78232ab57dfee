"""Kubernetes API access: one configured client, error classification and retry with backoff.

Configuration order: ``settings.NETAWARE["KUBE_API_URL"]`` (+ ``KUBE_TOKEN``, ``KUBE_CA_FILE``) when set,
else the in-cluster service account, else the local kubeconfig. Every request gets an explicit
timeout (a hung API server must never hang a sync pass or the extender's bind); urllib3's own
retries are disabled so that ``retry`` below is the one place that decides what is retried.

kopf-style error classes: 409 (conflict), 429 (throttled), 5xx, connection errors and timeouts are
*retryable*; 400/401/403/404/422 are *permanent* (retrying cannot help, the caller must report).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote, urlencode, urlsplit

import orjson
import urllib3
from django.conf import settings
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

T = TypeVar("T")

# (connect, read) seconds for ordinary calls; watches pass their own (read > timeoutSeconds).
REQUEST_TIMEOUT: tuple[float, float] = (3.0, 10.0)
RETRYABLE_STATUS = frozenset({409, 429, 500, 502, 503, 504})
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 410, 422})

_clients: dict[tuple[str, str, str], k8s.ApiClient] = {}
_lock = threading.Lock()


class _TimeoutApiClient(k8s.ApiClient):
    """ApiClient that fills in ``_request_timeout`` when a caller forgot it."""

    def call_api(self, method: str, url: str, header_params: Any = None, body: Any = None, post_params: Any = None,
                 _request_timeout: Any = None) -> Any:
        return super().call_api(
            method,
            url,
            header_params=header_params,
            body=body,
            post_params=post_params,
            _request_timeout=_request_timeout or REQUEST_TIMEOUT,
        )


def _configuration() -> k8s.Configuration:
    conf = settings.NETAWARE
    url = conf.get("KUBE_API_URL") or ""
    if url:
        cfg = k8s.Configuration(host=url.rstrip("/"))
        token = conf.get("KUBE_TOKEN") or ""
        if token:
            cfg.api_key = {"BearerToken": token}
            cfg.api_key_prefix = {"BearerToken": "Bearer"}
        ca_file = conf.get("KUBE_CA_FILE") or ""
        if ca_file:
            cfg.ssl_ca_cert = ca_file
    else:
        cfg = k8s.Configuration()
        try:
            k8s_config.load_incluster_config(client_configuration=cfg)
        except k8s_config.ConfigException:
            k8s_config.load_kube_config(client_configuration=cfg)
    cfg.retries = False  # our retry() decides; urllib3 must not hide failures behind its own loop
    return cfg


def configured() -> bool:
    """Cheap check (no I/O beyond a stat) that some Kubernetes API is configured, in the order
    ``api_client`` uses: KUBE_API_URL, the in-cluster service account, a kubeconfig file."""
    if (settings.NETAWARE.get("KUBE_API_URL") or "").strip():
        return True
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    paths = os.environ.get("KUBECONFIG") or "~/.kube/config"
    return any(Path(p).expanduser().is_file() for p in paths.split(os.pathsep) if p)


def api_client() -> k8s.ApiClient:
    """The shared ApiClient for the current settings (cached per API URL/token/CA)."""
    conf = settings.NETAWARE
    key = (conf.get("KUBE_API_URL") or "", conf.get("KUBE_TOKEN") or "", conf.get("KUBE_CA_FILE") or "")
    with _lock:
        existing = _clients.get(key)
        if existing is None:
            existing = _clients[key] = _TimeoutApiClient(_configuration())
        return existing


def reset_clients() -> None:
    """Drop cached clients (tests that point settings at a new fake API server)."""
    with _lock:
        _ssl_contexts.clear()
        for cached in _clients.values():
            with contextlib.suppress(Exception):  # closing is best effort
                cached.rest_client.close()
        _clients.clear()


def custom_objects() -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client())


def core_v1() -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client())


def status_of(exc: BaseException) -> int | None:
    """HTTP status of an API error, None for transport errors."""
    if isinstance(exc, ApiException):
        return int(exc.status) if exc.status else None
    return None


def status_body(exc: BaseException) -> dict[str, Any]:
    """The Kubernetes ``Status`` object of an API error ({} when there is none)."""
    body = getattr(exc, "body", None)
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def is_retryable(exc: BaseException) -> bool:
    """True when trying again later can succeed (409, 429, 5xx, connection errors, timeouts)."""
    if isinstance(exc, ApiException):
        status = exc.status or 0
        if status == 0:  # transport failure wrapped by the client (e.g. TLS handshake)
            return True
        return status in RETRYABLE_STATUS or status >= 500
    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError | OSError)


def retry_after_seconds(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("Retry-After")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def backoff_delay(attempt: int, *, base_delay: float, max_delay: float) -> float:
    """Exponential backoff with full jitter: uniform(0, min(max, base * 2**attempt))."""
    return random.uniform(0, min(max_delay, base_delay * (2**attempt)))


def retry(
    fn: Callable[[], T],
    *,
    attempts: int = 5,
    base_delay: float = 0.2,
    max_delay: float = 5.0,
    retry_on: Callable[[BaseException], bool] = is_retryable,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn`` until it succeeds, re-raising permanent errors at once and the last retryable
    error after ``attempts`` tries. ``fn`` must be safe to repeat (re-read before re-writing)."""
    if attempts < 1:
        raise ValueError("attempts must be >= 1")
    for attempt in range(attempts):
        try:
            return fn()
        except Exception as exc:
            if not retry_on(exc) or attempt == attempts - 1:
                raise
            delay = backoff_delay(attempt, base_delay=base_delay, max_delay=max_delay)
            hinted = retry_after_seconds(exc)
            if hinted is not None:
                delay = max(delay, min(hinted, max_delay))
            log.info(
                "kube call failed (%s), retry %d/%d in %.2fs", describe(exc), attempt + 1, attempts, delay
            )
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def describe(exc: BaseException) -> str:
    """One line for logs and sync_error: status, reason and the API server's message."""
    if isinstance(exc, ApiException):
        body = status_body(exc)
        message = body.get("message") or exc.reason or ""
        return f"HTTP {exc.status} {body.get('reason') or exc.reason}: {message}".strip()
    return f"{type(exc).__name__}: {exc}"


def bind_pod(*, namespace: str, pod: str, node: str, uid: str | None = None) -> None:
    """POST a Binding (pods/binding). The API server answers with a ``Status``, not a Binding, which
    the generated client cannot deserialize, so the response is read raw."""
    body = k8s.V1Binding(
        api_version="v1",
        kind="Binding",
        metadata=k8s.V1ObjectMeta(name=pod, namespace=namespace, uid=uid),
        target=k8s.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    # _preload_content=False: the raw urllib3 response, not the model the stubs describe
    resp = cast(urllib3.HTTPResponse, core_v1().create_namespaced_pod_binding(pod, namespace, body, _preload_content=False))
    try:
        resp.read()
    finally:
        resp.release_conn()


# --- raw requests ---------------------------------------------------------------------------------
# The hot paths (the extender's bind, informers) skip the generated client: its request building and
# model (de)serialization cost more than the call itself. Same configuration, TLS settings and token
# (refreshed by the client's hook for in-cluster service accounts); errors raise ApiException as
# the generated client does, so is_retryable/describe/status_of apply unchanged. Watches (``stream``)
# use the client's urllib3 pool; single requests (``_fast``: lists, pod reads, Bindings, Leases) a
# bare kept-alive socket per thread (``_Conn``).


def _raw(method: str, path: str, *, query: dict[str, str] | None = None, body: bytes | None = None,
         timeout: float | tuple[float, float] = REQUEST_TIMEOUT, preload: bool = True,
         content_type: str = "application/json") -> Any:
    client = api_client()
    cfg = client.configuration
    headers = {"Accept": "application/json", "User-Agent": "netaware"}
    token = cfg.get_api_key_with_prefix("BearerToken") if cfg.api_key else None
    if token:
        headers["Authorization"] = token
    if body is not None:
        headers["Content-Type"] = content_type
    url = cfg.host + path + ("?" + urlencode(query) if query else "")
    connect, read = timeout if isinstance(timeout, tuple) else (min(timeout, REQUEST_TIMEOUT[0]), timeout)
    resp = client.rest_client.pool_manager.request(
        method, url, body=body, headers=headers, preload_content=preload, retries=False,
        timeout=urllib3.Timeout(connect=max(connect, 0.001), read=max(read, 0.001)),
    )
    if not 200 <= resp.status < 300:
        data = resp.data if preload else resp.read()
        if not preload:
            resp.release_conn()
        exc = ApiException(status=resp.status, reason=resp.reason)
        exc.body = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        exc.headers = resp.headers
        raise exc
    return resp


class _Conn:
    """One kept-alive HTTP/1.1 connection on a bare (TLS) socket. The request goes out in one
    ``sendall`` and the answer is read with Content-Length, chunked framing or until close:
    http.client's request building and e-mail header parser cost ~0.2 ms of CPU per call, held under
    the GIL, on the extender's bind path (bench/bench_kube_scheduler.py)."""

    __slots__ = ("buf", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _fill(self) -> None:
        chunk = self.sock.recv(262144)
        if not chunk:
            raise ConnectionError("the API server closed the connection")
        self.buf += chunk

    def _line(self) -> bytes:
        while (at := self.buf.find(b"\r\n")) < 0:
            if len(self.buf) > _MAX_HEADER:
                raise ConnectionError("malformed HTTP answer: line too long")
            self._fill()
        line, self.buf = self.buf[:at], self.buf[at + 2:]
        return line

    def _exactly(self, n: int) -> bytes:
        if len(self.buf) < n:  # collect and join once: a list of 5,000 nodes is tens of MB
            parts, have = [self.buf], len(self.buf)
            while have < n:
                chunk = self.sock.recv(max(262144, min(n - have, 1 << 22)))
                if not chunk:
                    raise ConnectionError("the API server closed the connection")
                parts.append(chunk)
                have += len(chunk)
            self.buf = b"".join(parts)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def exchange(self, request: bytes, head_only: bool) -> tuple[int, str, dict[str, str], bytes, bool]:
        """(status, reason, headers with lower-case names, body, whether the connection stays usable)."""
        self.sock.sendall(request)
        while True:
            while (end := self.buf.find(b"\r\n\r\n")) < 0:
                if len(self.buf) > _MAX_HEADER:
                    raise ConnectionError("malformed HTTP answer: headers too long")
                self._fill()
            head, self.buf = self.buf[:end], self.buf[end + 4:]
            lines = head.decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/") or not code.isdigit():
                raise ConnectionError(f"malformed HTTP status line: {lines[0][:80]!r}")
            status = int(code)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if 100 <= status < 200:
                continue  # an interim answer (100 Continue): the real one follows
            break
        keep = headers.get("connection", "").lower() != "close" and (
            version != "HTTP/1.0" or headers.get("connection", "").lower() == "keep-alive")
        if head_only or status in (204, 304):
            return status, reason, headers, b"", keep
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parts = []
            while True:
                size = int(self._line().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self._line():  # trailers, up to the empty line
                        pass
                    break
                parts.append(self._exactly(size))
                self._exactly(2)
            return status, reason, headers, b"".join(parts), keep
        if "content-length" in headers:
            return status, reason, headers, self._exactly(int(headers["content-length"])), keep
        parts = [self.buf]  # no framing: the body ends when the server closes
        while chunk := self.sock.recv(262144):
            parts.append(chunk)
        self.buf = b""
        return status, reason, headers, b"".join(parts), False


_MAX_HEADER = 1 << 20


class _Connections(threading.local):
    """One kept-alive connection per thread and API server: a bind is on the extender's hot path."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, int, int], _Conn] = {}


_connections = _Connections()
_ssl_contexts: dict[int, ssl.SSLContext] = {}


def _ssl_context(cfg: Any) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    return ctx


def _connect(host: str, port: int, https: bool, cfg: Any, client_id: int, seconds: float) -> _Conn:
    sock = socket.create_connection((host, port), timeout=seconds)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if https:
            ctx = _ssl_contexts.get(client_id)
            if ctx is None:
                ctx = _ssl_contexts[client_id] = _ssl_context(cfg)  # one per client: sessions and CA parse reused
            sock = ctx.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise
    return _Conn(sock)


def _fast(method: str, path: str, *, query: dict[str, str] | None = None, body: bytes | None = None,
          timeout: float | tuple[float, float] = REQUEST_TIMEOUT) -> bytes:
    """One request on this thread's kept-alive connection; the body of a 2xx, else ApiException."""
    client = api_client()
    cfg = client.configuration
    parts = urlsplit(cfg.host)
    https = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if https else 80)
    key = (host, port, id(client))
    seconds = max(0.001, timeout[1] if isinstance(timeout, tuple) else timeout)
    token = cfg.get_api_key_with_prefix("BearerToken") if cfg.api_key else None
    target = (parts.path.rstrip("/") + path) + ("?" + urlencode(query) if query else "")
    host_header = f"[{host}]" if ":" in host else host
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host_header}:{port}", "Accept: application/json",
             "Accept-Encoding: identity", "User-Agent: netaware"]
    if token:
        lines.append(f"Authorization: {token}")
    if body is not None:
        lines.append("Content-Type: application/json")
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    for attempt in range(2):
        conn = _connections.by_key.get(key)
        try:
            if conn is None:
                conn = _connections.by_key[key] = _connect(host, port, https, cfg, id(client), seconds)
            conn.sock.settimeout(seconds)
            status, reason, headers, data, keep = conn.exchange(request, method == "HEAD")
            if not keep:
                conn.close()
                _connections.by_key.pop(key, None)
            break
        except (OSError, ValueError) as exc:
            if conn is not None:
                conn.close()
            _connections.by_key.pop(key, None)
            # A kept-alive connection the server closed meanwhile: one fresh retry. Timeouts are not.
            if attempt or isinstance(exc, TimeoutError):
                if isinstance(exc, ValueError):  # a malformed chunk size
                    raise ConnectionError(f"malformed HTTP answer: {exc}") from exc
                raise
    if not 200 <= status < 300:
        error = ApiException(status=status, reason=reason)
        error.body = data.decode("utf-8", "replace")
        error.headers = headers
        raise error
    return data


def get_json(path: str, *, query: dict[str, str] | None = None,
             timeout: float | tuple[float, float] = REQUEST_TIMEOUT) -> dict[str, Any]:
    """GET ``path`` (e.g. ``/api/v1/pods``) and parse the JSON answer."""
    parsed = orjson.loads(_fast("GET", path, query=query, timeout=timeout))
    return parsed if isinstance(parsed, dict) else {}


def stream(path: str, *, query: dict[str, str] | None = None, read_timeout: float = 310.0) -> Any:
    """A streaming GET (watch): the urllib3 response, to be read with ``.stream()`` and released."""
    return _raw("GET", path, query=query, timeout=(REQUEST_TIMEOUT[0], read_timeout), preload=False)


def post_json(path: str, body: bytes, *, timeout: float | tuple[float, float] = REQUEST_TIMEOUT) -> bytes:
    return _fast("POST", path, body=body, timeout=timeout)


def create_binding(*, namespace: str, pod: str, node: str, uid: str = "", timeout: float = 3.0) -> None:
    """POST a v1 Binding for ``pod`` (what kube-scheduler's DefaultBinder does), raw."""
    meta: dict[str, Any] = {"name": pod, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    body = orjson.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                         "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    post_json(f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/binding", body,
              timeout=timeout)


def get_pod(*, namespace: str, name: str, timeout: float = 3.0) -> dict[str, Any]:
    return get_json(f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}", timeout=timeout)


def put_json(path: str, body: bytes, *, timeout: float | tuple[float, float] = REQUEST_TIMEOUT) -> bytes:
    return _fast("PUT", path, body=body, timeout=timeout)
