"""The extender's HTTP edge: POST /scheduler/{filter,prioritize,bind,preempt}[/].

kube-scheduler treats any non-200 as a failed call, and Go re-sends a redirect as a bodiless GET,
so these views answer 200 for every POST whatever happens (bad JSON, wrong types, a crash in
scoring), with the reason in the verb's ``Error`` field, and never redirect. The body is read
here, bounded by ``MAX_EXTENDER_BODY``, bypassing Django's form parsing.

Two ways in, one behaviour: the Django views below (URLconf, test client, any WSGI server that
mounts Django directly), and ``extender_app``, a bare WSGI dispatch that ``netaware_site.wsgi``
puts in front of Django for the extender paths. It skips middleware (sessions, auth, CSRF,
messages: useless to kube-scheduler, ~0.3 ms per call) and URL resolution, and writes the same
status, headers and body through the same ``call`` as the Django views.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from django.conf import settings
from django.core import signals
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from . import metrics, services, wire
from .runtime import runtime

log = logging.getLogger(__name__)
request_log = logging.getLogger("django.request")

JSON = "application/json"
VERBS = ("filter", "prioritize", "bind", "preempt")


def _max_body() -> int:
    return int(getattr(settings, "MAX_EXTENDER_BODY", settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 32 * 1024 * 1024))


def _read_body(content_length: Any, read: Callable[[int], bytes]) -> bytes:
    """The body, bounded by MAX_EXTENDER_BODY. ``read`` must not go past the declared length
    (Django's request and ``_wsgi_reader`` both stop there)."""
    limit = _max_body()
    try:
        declared = int(content_length or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise wire.WireError(f"body: {declared} bytes exceeds the limit of {limit} bytes (MAX_EXTENDER_BODY)")
    body = read(limit + 1)
    if len(body) > limit:
        raise wire.WireError(f"body: more than {limit} bytes (MAX_EXTENDER_BODY)")
    return body


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


# --- Django views ---------------------------------------------------------------------------


class ExtenderResponse(HttpResponse):
    """A 200 JSON response that writes its pending decision log entries once the body is out."""

    def close(self) -> None:
        super().close()
        services.after_response()


def _not_post(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(_not_post_payload(str(request.method)), content_type=JSON, status=405)
    response["Allow"] = "POST"
    return response


def _endpoint(verb: str):  # type: ignore[no-untyped-def]
    @csrf_exempt
    def view(request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return _not_post(request)
        payload, ms = call(verb, request.META.get("CONTENT_LENGTH"), request.read)
        response = ExtenderResponse(payload, content_type=JSON)
        response[_timing(ms)[0]] = _timing(ms)[1]
        return response

    view.__name__ = f"extender_{verb}"
    return view


filter_view = _endpoint("filter")
prioritize_view = _endpoint("prioritize")
bind_view = _endpoint("bind")
preempt_view = _endpoint("preempt")


# --- lean WSGI dispatch ---------------------------------------------------------------------

EXTENDER_PATHS: dict[str, str] = {}
for _verb in VERBS:
    EXTENDER_PATHS[f"/scheduler/{_verb}"] = _verb
    EXTENDER_PATHS[f"/scheduler/{_verb}/"] = _verb


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


class _Body:
    """The WSGI response iterable: one chunk; ``close()`` (called by the server once the body is
    out) encodes the request's decision, like ``ExtenderResponse.close``."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def __iter__(self) -> Iterator[bytes]:
        yield self.payload

    def close(self) -> None:
        try:
            services.after_response()
        finally:
            signals.request_finished.send(sender=_Body)  # as Django's WSGIHandler: close_old_connections


def _wsgi_reader(environ: dict[str, Any]) -> Callable[[int], bytes]:
    stream = environ["wsgi.input"]
    try:
        remaining = max(0, int(environ.get("CONTENT_LENGTH") or 0))
    except ValueError:
        remaining = 0  # Django reads nothing without a valid Content-Length either

    def read(size: int) -> bytes:
        return stream.read(min(size, remaining)) if remaining else b""

    return read


def extender_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes] | None:
    """Answer an extender path directly (``None`` for any other path: Django takes it)."""
    verb = EXTENDER_PATHS.get(environ.get("PATH_INFO", ""))
    if verb is None:
        return None
    # The extender server's request threads never touch the database: nothing to do before or after
    # a request, and a plain list lets the server send the bytes without iterating in Python. Inline
    # (in-process) mode behaves as Django's WSGIHandler: close_old_connections, reset_queries, and
    # the request's writes once the body is out.
    inline = current_runtime_inline()
    if inline:
        signals.request_started.send(sender=_Body, environ=environ)
    method = environ.get("REQUEST_METHOD", "GET").upper()
    if method != "POST":
        payload = _not_post_payload(method)
        request_log.warning("Method Not Allowed: %s", environ.get("PATH_INFO", ""))
        start_response("405 Method Not Allowed", [
            ("Content-Type", JSON), ("Allow", "POST"), ("Content-Length", str(len(payload))), *_headers(),
        ])
        return _Body(payload) if inline else [payload]
    payload, ms = call(verb, environ.get("CONTENT_LENGTH"), _wsgi_reader(environ))
    start_response("200 OK", [("Content-Type", JSON), ("Content-Length", str(len(payload))), _timing(ms),
                              *_headers()])
    return _Body(payload) if inline else [payload]


def current_runtime_inline() -> bool:
    return runtime().inline


_SECURITY_HEADERS: list[tuple[str, str]] | None = None


def _headers() -> list[tuple[str, str]]:
    global _SECURITY_HEADERS
    if _SECURITY_HEADERS is None:
        _SECURITY_HEADERS = _security_headers()
    return _SECURITY_HEADERS
