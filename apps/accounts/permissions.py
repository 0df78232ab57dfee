"""Who may read and who may write, for the API (DRF) and the dashboard pages.

Reads need ``accounts.view_netaware`` (roles viewer and editor); reads that touch the cluster and
every write need their own permission: a view names it in ``read_permissions`` /
``write_permissions``, otherwise a write needs the model permission of its queryset (add, change,
delete). An unsafe request to a view that names neither is refused to everyone but superusers:
the default is closed. ``NETAWARE_REQUIRE_AUTH=false`` (development only) lets anonymous users
read, never write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from .roles import READ, role_needed

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User
    from django.http import HttpRequest
    from django.http.response import HttpResponseBase
    from rest_framework.request import Request
    from rest_framework.views import APIView

    View = Callable[..., HttpResponseBase]

_MODEL_ACTIONS = {"POST": "add", "PUT": "change", "PATCH": "change", "DELETE": "delete"}


def anonymous_reads_allowed() -> bool:
    return not getattr(settings, "REQUIRE_AUTH", True)


def missing(user: User | AnonymousUser, perms: Iterable[str]) -> list[str]:
    return [p for p in perms if not user.has_perm(p)]


def refusal(perms: Iterable[str], what: str) -> str:
    perms = list(perms)
    roles = sorted({role_needed(p) for p in perms})
    return f"{what} needs {' and '.join(roles)} (permission {', '.join(perms)})."


def can_read(user: User | AnonymousUser | None) -> bool:
    if user is not None and user.is_authenticated:
        return user.is_active and user.has_perm(READ)
    return anonymous_reads_allowed()


class RolePermission(BasePermission):
    message = "Authentication credentials were not provided."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        authenticated = bool(user and user.is_authenticated)
        safe = request.method in SAFE_METHODS
        if not authenticated:
            if safe and anonymous_reads_allowed() and not getattr(view, "read_permissions", ()):
                return True
            self.message = ("Log in (session from /login/) or send 'Authorization: Bearer <API token>'; "
                            "every API needs a user.")
            return False
        if safe:
            needed = [READ, *getattr(view, "read_permissions", ())]
            what = "Reading this"
        else:
            needed = list(getattr(view, "write_permissions", ()) or self._model_permissions(request, view))
            what = f"{request.method} here"
            if not needed and not user.is_superuser:
                self.message = "This write is reserved to administrators."
                return False
        lacking = missing(user, needed)
        if lacking:
            self.message = refusal(lacking, what)
            return False
        return True

    @staticmethod
    def _model_permissions(request: Request, view: APIView) -> list[str]:
        queryset = getattr(view, "queryset", None)
        if queryset is None and hasattr(view, "get_queryset"):
            try:
                queryset = view.get_queryset()
            except Exception:  # a view without a queryset: the caller refuses
                queryset = None
        action = _MODEL_ACTIONS.get(request.method or "")
        if queryset is None or action is None:
            return []
        meta = queryset.model._meta
        return [f"{meta.app_label}.{action}_{meta.model_name}"]


def page_permission(*perms: str, what: str = "This page") -> Callable[[View], View]:
    """Dashboard view decorator: a clear 403 page (templates/403.html) for users lacking ``perms``.

    Anonymous users never get here: the login middleware sends them to /login/ first.
    """

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            user = request.user
            if not user.is_authenticated:
                from django.contrib.auth.views import redirect_to_login

                return redirect_to_login(request.get_full_path())
            lacking = missing(user, perms)
            if lacking:
                raise PermissionDenied(refusal(lacking, what))
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
