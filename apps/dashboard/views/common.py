"""Small helpers of the dashboard views: JSON data answers with ETags and gzip."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.utils.text import compress_string


def data_response(request: HttpRequest, etag: str | None, data: Any, *, status: int = 200) -> HttpResponse:
    """orjson body, 304 when the client already has this version, gzip when accepted.

    The data carries no secret and reflects no request input, so compressing it is BREACH-safe.
    """
    quoted = f'"{etag}"' if etag else None
    if quoted and request.headers.get("If-None-Match") == quoted:
        response = HttpResponse(status=304)
    else:
        body = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
        response = HttpResponse(body, content_type="application/json", status=status)
        if len(body) > 500 and "gzip" in request.headers.get("Accept-Encoding", ""):
            response.content = compress_string(body)
            response["Content-Encoding"] = "gzip"
        response["Content-Length"] = str(len(response.content))
    if quoted:
        response["ETag"] = quoted
    response["Cache-Control"] = "private, no-cache"
    patch_vary_headers(response, ("Accept-Encoding", "Cookie"))
    return response


def error_response(message: str, *, status: int = 400, field: str | None = None) -> HttpResponse:
    body = {field: [message]} if field else {"detail": message}
    return HttpResponse(orjson.dumps(body), content_type="application/json", status=status)
