"""API permissions decided per request from settings, so tests and operators can flip them."""

from __future__ import annotations

from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, BasePermission


class WritesNeedUserWhenRequired(BasePermission):
    """Reads are open; writes need an authenticated user whenever ``settings.REQUIRE_AUTH`` is on.

    ``REQUIRE_AUTH`` comes from ``NETAWARE_REQUIRE_AUTH`` and defaults to on in production. The
    extender verbs are not DRF views and stay open to kube-scheduler.
    """

    message = "Writing through the API needs a logged-in user (admin session or HTTP basic auth)."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS or not getattr(settings, "REQUIRE_AUTH", False):
            return True
        return bool(request.user and request.user.is_authenticated)
