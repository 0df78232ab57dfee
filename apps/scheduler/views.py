"""The extender's HTTP edge: POST /scheduler/{filter,prioritize,bind,preempt}[/].

kube-scheduler treats any non-200 as a failed call, and Go re-sends a redirect as a bodiless GET,
so these views answer 200 for every POST whatever happens (bad JSON, wrong types, a crash in
scoring), with the reason in the verb's ``Error`` field, and never redirect. The body is read
here, bounded by ``MAX_EXTENDER_BODY``, bypassing Django's form parsing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from . import services, wire

log = logging.getLogger(__name__)

JSON = "application/json"


class ExtenderResponse(HttpResponse):
    """A 200 JSON response that writes its pending decision log entries once the body is out."""

    def close(self) -> None:
        super().close()
        services.after_response()


def _max_body() -> int:
    return int(getattr(settings, "MAX_EXTENDER_BODY", settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 32 * 1024 * 1024))


def _read_body(request: HttpRequest) -> bytes:
    limit = _max_body()
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise wire.WireError(f"body: {declared} bytes exceeds the limit of {limit} bytes (MAX_EXTENDER_BODY)")
    stream = request  # HttpRequest is file-like over the (already length-limited) WSGI input
    body = stream.read(limit + 1)
    if len(body) > limit:
        raise wire.WireError(f"body: more than {limit} bytes (MAX_EXTENDER_BODY)")
    return body


def _not_post(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(
        orjson.dumps({"Error": f"method {request.method} not allowed: kube-scheduler POSTs extender calls"}),
        content_type=JSON,
        status=405,
    )
    response["Allow"] = "POST"
    return response


def _endpoint(verb: str, handler: Callable[[bytes, float], bytes], on_error: Callable[[str], bytes]):  # type: ignore[no-untyped-def]
    @csrf_exempt
    def view(request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return _not_post(request)
        started = time.perf_counter()
        try:
            body = _read_body(request)
            payload = handler(body, started)
        except wire.WireError as exc:
            services.log_bad_request(verb=verb, error=str(exc), started=started)
            payload = on_error(str(exc))
        except Exception as exc:  # the edge: kube-scheduler must get a 200 with the reason
            log.exception("extender %s failed", verb)
            message = f"internal error in {verb}: {type(exc).__name__}: {exc}"
            services.log_bad_request(verb=verb, error=message, started=started)
            payload = on_error(message)
        services.stamp_duration(started)
        return ExtenderResponse(payload, content_type=JSON)

    view.__name__ = f"extender_{verb}"
    return view


def _preempt_error(message: str) -> bytes:
    # ExtenderPreemptionResult has no Error field (Go ignores the extra key); an empty victim map
    # tells kube-scheduler this extender approves no preemption for a request it could not read.
    return orjson.dumps({"NodeNameToMetaVictims": {}, "Error": message})


def _prioritize_error(message: str) -> bytes:
    # HostPriorityList is a bare list with nowhere for an error. An object makes Go's decoder fail,
    # which kube-scheduler logs (with our message in the body) and then ignores this extender's
    # scores for the cycle: exactly "no opinion", and the reason is visible on both sides.
    return orjson.dumps({"Error": message})


filter_view = _endpoint("filter", services.handle_filter, wire.filter_error)
prioritize_view = _endpoint("prioritize", services.handle_prioritize, _prioritize_error)
bind_view = _endpoint("bind", services.handle_bind, wire.binding_result)
preempt_view = _endpoint("preempt", services.handle_preempt, _preempt_error)
