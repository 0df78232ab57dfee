"""Endpoints for the platform, answered before Django's middleware stack.

``/healthz``, ``/readyz`` and ``/metrics`` are called by the kubelet and Prometheus by pod IP over
plain HTTP: ALLOWED_HOSTS (CommonMiddleware), the HTTPS redirect (SecurityMiddleware), sessions and
any login requirement must not apply to them. This middleware is first in MIDDLEWARE and answers
them directly; /metrics has its own bearer-token check (netaware_site/scrape.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from netaware_core.fielderrors import BODY, error_body

from . import health, scrape

ENDPOINTS: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": health.healthz,
    "/readyz": health.readyz,
    "/metrics": scrape.metrics_view,
}


class InternalEndpointsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = ENDPOINTS.get(request.path_info)
        if view is not None:
            return view(request)
        return self.get_response(request)


class RequestSizeLimitMiddleware:
    """Refuse a body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (``MAX_REQUEST_BYTES``) with a 413
    before anything reads it. Django checks that limit only when ``request.body`` is read; DRF's
    parsers read the raw stream, so without this a JSON body of any size would be parsed."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(raw)
        except ValueError:
            message = f"Content-Length {raw[:40]!r} is not a number"
            return JsonResponse(error_body({BODY: [message]}, message), status=400)
        if limit is not None and length > limit:
            message = f"request body is {length} bytes; the limit is {limit} (MAX_REQUEST_BYTES)"
            return JsonResponse(error_body({BODY: [message]}, message), status=413)
        return self.get_response(request)
