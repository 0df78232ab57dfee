"""The extender's HTTP edge: POST /scheduler/{filter,prioritize,bind,preempt}[/].

kube-scheduler treats any non-200 as a failed call, and Go re-sends a redirect as a bodiless GET,
so these views answer 200 for every POST whatever happens (bad JSON, wrong types, a crash in
scoring), with the reason in the verb's ``Error`` field, and never redirect. The body is read
here, bounded by ``MAX_EXTENDER_BODY``, bypassing Django's form parsing.

One way in: ``application``, the bare WSGI app that the extender server (``manage.py run_extender``,
``netaware_site.extender_wsgi``) serves. It has no middleware (sessions, auth, CSRF, messages: useless
to kube-scheduler, ~0.3 ms per call) and no URL resolver; the web server does not answer these paths.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
from django.conf import settings

from . import metrics, services, wire

log = logging.getLogger(__name__)
request_log = logging.getLogger("django.request")

JSON = "application/json"
VERBS = ("filter", "prioritize", "bind", "preempt")


def max_body() -> int:
    return int(getattr(settings, "MAX_EXTENDER_BODY", settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 32 * 1024 * 1024))


def _read_body(content_length: Any, read: Callable[[int], bytes]) -> bytes:
    """The body, bounded by MAX_EXTENDER_BODY. ``read`` must not go past the declared length
    (Django's request and ``_wsgi_reader`` both stop there)."""
    limit = max_body()
    try:
        declared = int(content_length or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise wire.WireError(f"body: {declared} bytes exceeds the limit of {limit} bytes (MAX_EXTENDER_BODY)")
    try:
        body = read(limit + 1)
    except OSError as exc:  # the server's body deadline (netaware_core.rsgi), or the client went away
        raise wire.WireError(str(exc)) from exc
    if len(body) > limit:
        raise wire.WireError(f"body: more than {limit} bytes (MAX_EXTENDER_BODY)")
    return body


def _nul_path(value: Any, path: str) -> str | None:
    """The JSON path of the first string (or key) holding a NUL character, or None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                return f"{path}.{key!r}" if path else repr(key)
            found = _nul_path(item, f"{path}.{key}" if path else key)
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _nul_path(item, f"{path}[{i}]")
            if found:
                return found
    return None


def refuse_nul(body: bytes) -> None:
    """No name Kubernetes accepts holds a NUL, and neither PostgreSQL text nor jsonb can store one:
    a request carrying one (JSON ``\\u0000``) is refused here, before anything parses, scores or logs
    it (issue 21: one such request used to block the decision log for everyone)."""
    if b"\\u0000" not in body:
        return
    try:
        where = _nul_path(orjson.loads(body), "")
    except orjson.JSONDecodeError:
        return  # the parser names what is wrong with the JSON itself
    if where is None:
        return  # an escaped backslash followed by "u0000": no NUL
    raise wire.WireError(f"{where}: contains a NUL character (\\u0000), which no Kubernetes name or value may hold")


def _not_post_payload(method: str) -> bytes:
    return orjson.dumps({"Error": f"method {method} not allowed: kube-scheduler POSTs extender calls"})


def _preempt_error(message: str) -> bytes:
    # ExtenderPreemptionResult has no Error field (Go ignores the extra key); an empty victim map
    # tells kube-scheduler this extender approves no preemption for a request it could not read.
    return orjson.dumps({"NodeNameToMetaVictims": {}, "Error": message})


def _prioritize_error(message: str) -> bytes:
    # HostPriorityList is a bare list with nowhere for an error. An object makes Go's decoder fail,
    # which kube-scheduler logs (with our message in the body) and then ignores this extender's
    # scores for the cycle: exactly "no opinion", and the reason is visible on both sides.
    return orjson.dumps({"Error": message})


_HANDLERS: dict[str, tuple[Callable[[bytes, float], bytes], Callable[[str], bytes]]] = {
    "filter": (services.handle_filter, wire.filter_error),
    "prioritize": (services.handle_prioritize, _prioritize_error),
    "bind": (services.handle_bind, wire.binding_result),
    "preempt": (services.handle_preempt, _preempt_error),
}


def call(verb: str, content_length: Any, read: Callable[[int], bytes]) -> tuple[bytes, float]:
    """Answer one POST of ``verb``: always a payload for an HTTP 200, never an exception; also the
    server-side time in ms (sent as ``Server-Timing`` so clients can tell server from network time)."""
    handler, on_error = _HANDLERS[verb]
    started = time.perf_counter()
    outcome = "ok"
    try:
        body = _read_body(content_length, read)
        refuse_nul(body)
        payload = handler(body, started)
    except wire.WireError as exc:
        outcome = "error"
        services.log_bad_request(verb=verb, error=str(exc), started=started)
        payload = on_error(str(exc))
    except Exception as exc:  # the edge: kube-scheduler must get a 200 with the reason
        outcome = "error"
        log.exception("extender %s failed", verb)
        message = f"internal error in {verb}: {type(exc).__name__}: {exc}"
        services.log_bad_request(verb=verb, error=message, started=started)
        payload = on_error(message)
    elapsed = time.perf_counter() - started
    metrics.observe_request(verb, elapsed, outcome)
    return payload, elapsed * 1000.0


def _timing(ms: float) -> tuple[str, str]:
    return ("Server-Timing", f"app;dur={ms:.3f}")


# --- WSGI dispatch -------------------------------------------------------------------------

EXTENDER_PATHS: dict[str, str] = {}
for _verb in VERBS:
    EXTENDER_PATHS[f"/scheduler/{_verb}"] = _verb
    EXTENDER_PATHS[f"/scheduler/{_verb}/"] = _verb

# Filter and prioritize bodies up to this size (node names: ~20 bytes each, so ~10,000 candidates)
# run on the server's event loop thread (``netaware_core.rsgi``: ``inline``); larger ones, full Node
# objects, on a request thread.
INLINE_MAX_BODY = 256 * 1024
_INLINE_VERBS = ("filter", "prioritize")


def runs_inline(path: str, body_length: int) -> bool:
    """Whether a request is answered on the event loop thread (short, CPU-only, and awaited by
    kube-scheduler before its next request) rather than handed to a request thread."""
    return body_length <= INLINE_MAX_BODY and EXTENDER_PATHS.get(path) in _INLINE_VERBS


def _security_headers() -> list[tuple[str, str]]:
    """What Django's SecurityMiddleware and XFrameOptionsMiddleware add to these responses."""
    headers: list[tuple[str, str]] = []
    if getattr(settings, "X_FRAME_OPTIONS", "DENY"):
        headers.append(("X-Frame-Options", str(getattr(settings, "X_FRAME_OPTIONS", "DENY")).upper()))
    if getattr(settings, "SECURE_CONTENT_TYPE_NOSNIFF", True):
        headers.append(("X-Content-Type-Options", "nosniff"))
    referrer = getattr(settings, "SECURE_REFERRER_POLICY", "same-origin")
    if referrer:
        value = referrer if isinstance(referrer, str) else ",".join(referrer)
        headers.append(("Referrer-Policy", ",".join(v.strip() for v in value.split(","))))
    coop = getattr(settings, "SECURE_CROSS_ORIGIN_OPENER_POLICY", "same-origin")
    if coop:
        headers.append(("Cross-Origin-Opener-Policy", coop))
    return headers


def _wsgi_reader(environ: dict[str, Any]) -> Callable[[int], bytes]:
    stream = environ["wsgi.input"]
    try:
        remaining = max(0, int(environ.get("CONTENT_LENGTH") or 0))
    except ValueError:
        remaining = 0  # Django reads nothing without a valid Content-Length either

    def read(size: int) -> bytes:
        return stream.read(min(size, remaining)) if remaining else b""

    return read


def extender_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes] | None:
    """Answer an extender path directly (``None`` for any other path). The request threads never touch
    the database (the runtime's threads load and write), so there is nothing to do before or after a
    request, and a plain list lets the server send the bytes without iterating in Python."""
    verb = EXTENDER_PATHS.get(environ.get("PATH_INFO", ""))
    if verb is None:
        return None
    method = environ.get("REQUEST_METHOD", "GET").upper()
    if method != "POST":
        payload = _not_post_payload(method)
        request_log.warning("Method Not Allowed: %s", environ.get("PATH_INFO", ""))
        start_response("405 Method Not Allowed", [
            ("Content-Type", JSON), ("Allow", "POST"), ("Content-Length", str(len(payload))), *_headers(),
        ])
        return [payload]
    payload, ms = call(verb, environ.get("CONTENT_LENGTH"), _wsgi_reader(environ))
    start_response("200 OK", [("Content-Type", JSON), ("Content-Length", str(len(payload))), _timing(ms),
                              *_headers()])
    return [payload]


_NOT_FOUND = b'{"Error":"not an extender path: use /scheduler/{filter,prioritize,bind,preempt}"}'


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The extender server's WSGI app: the four verbs, a JSON 404 for anything else."""
    answer = extender_app(environ, start_response)
    if answer is not None:
        return answer
    start_response("404 Not Found", [("Content-Type", JSON), ("Content-Length", str(len(_NOT_FOUND)))])
    return [_NOT_FOUND]


_SECURITY_HEADERS: list[tuple[str, str]] | None = None


def _headers() -> list[tuple[str, str]]:
    global _SECURITY_HEADERS
    if _SECURITY_HEADERS is None:
        _SECURITY_HEADERS = _security_headers()
    return _SECURITY_HEADERS
