"""ReDoc without a request to another origin: no web fonts, and the sidecar's bundle served with its
one hard-coded image URL (the "API docs by Redocly" logo on cdn.redoc.ly) replaced by an empty image."""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

import drf_spectacular_sidecar
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET
from drf_spectacular.views import SpectacularRedocView

_BUNDLE = Path(drf_spectacular_sidecar.__file__).parent / "static" / "drf_spectacular_sidecar" / "redoc" / "bundles" / "redoc.standalone.js"
_EXTERNAL_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
_EMPTY_IMAGE = b"data:image/gif;base64,R0lGODlhAQABAAAAACH5BAEKAAEALAAAAAABAAEAAAICTAEAOw=="


@lru_cache(maxsize=1)
def _bundle() -> tuple[bytes, bytes]:
    body = _BUNDLE.read_bytes().replace(_EXTERNAL_LOGO, _EMPTY_IMAGE)
    return body, gzip.compress(body, 6)


@require_GET
def redoc_bundle(request: HttpRequest) -> HttpResponse:
    plain, packed = _bundle()
    use_gzip = "gzip" in request.headers.get("Accept-Encoding", "")
    response = HttpResponse(packed if use_gzip else plain, content_type="application/javascript")
    if use_gzip:
        response["Content-Encoding"] = "gzip"
    response["Cache-Control"] = "private, max-age=86400"
    patch_vary_headers(response, ("Accept-Encoding",))
    return response


class RedocView(SpectacularRedocView):
    template_name = "dashboard/redoc.html"

    @staticmethod
    def _redoc_standalone() -> str:
        return reverse("api-redoc-bundle")
