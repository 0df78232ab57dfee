"""Authentication for every page and API, except what must stay open.

Open: the health endpoints, /metrics (its own bearer token), the login page, static files (served by
WhiteNoise before this runs) and the admin (which has its own staff login). The extender verbs are not
served by this process at all (only ``manage.py run_extender``, with mutual TLS).

Pages: an anonymous user is sent to /login/?next=...; a user without the read permission gets the
403 page; the pages' JSON under /dashboard/data/ answers 401 instead of redirecting. API (/api/...): a request without a session and without an Authorization header gets a
401 JSON answer here; with a header, DRF authenticates the token and checks the permission
(accounts.permissions.RolePermission), so every API view is covered twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse

from .permissions import anonymous_reads_allowed, can_read

if TYPE_CHECKING:
    from collections.abc import Callable

    from django.http import HttpRequest
    from django.http.response import HttpResponseBase

OPEN_PREFIXES = ("/healthz", "/readyz", "/metrics", "/login", "/admin/", "/static/", "/favicon.ico")
# HTML pages under /api/ (they send the browser to the login page instead of answering 401).
API_PAGES = ("/api/docs/", "/api/redoc/")
# JSON the dashboard pages poll: a session only (no tokens: these are not DRF views), 401 without one.
DATA_PREFIX = "/dashboard/data/"


def is_open(path: str) -> bool:
    extra = tuple(getattr(settings, "NETAWARE_OPEN_PATHS", ()))
    return path.startswith(OPEN_PREFIXES + extra)


class LoginRequiredMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        path = request.path_info
        if is_open(path):
            return self.get_response(request)
        user = request.user
        if path.startswith("/api/") and not path.startswith(API_PAGES):
            if user.is_authenticated or request.META.get("HTTP_AUTHORIZATION") or anonymous_reads_allowed():
                return self.get_response(request)  # DRF authenticates and checks permissions
            response = JsonResponse({"detail": "Authentication credentials were not provided: log in at "
                                               "/login/ or send 'Authorization: Bearer <API token>'."}, status=401)
            response["WWW-Authenticate"] = 'Bearer realm="netaware"'
            return response
        if path.startswith(DATA_PREFIX) and not user.is_authenticated and not anonymous_reads_allowed():
            return JsonResponse({"detail": "Your session ended: log in again at /login/."}, status=401)
        if not user.is_authenticated and not anonymous_reads_allowed():
            return redirect_to_login(request.get_full_path())
        if not can_read(user):
            raise PermissionDenied("Your account has no role yet: an administrator must add it to the viewer or "
                                   "editor group.")
        return self.get_response(request)
