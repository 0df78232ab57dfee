"""What every page's header shows: who is logged in, with which roles."""

from __future__ import annotations

from django.conf import settings

from apps.accounts.roles import roles_of


def access(request):  # type: ignore[no-untyped-def]
    user = getattr(request, "user", None)
    return {"user_roles": roles_of(user) if user is not None else [],
            "require_auth": getattr(settings, "REQUIRE_AUTH", True)}
