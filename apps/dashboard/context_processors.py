"""What every page's header shows: who is logged in, with which roles."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from apps.accounts.roles import roles_of


def access(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"user_roles": roles_of(user) if user is not None else [],
            "require_auth": getattr(settings, "REQUIRE_AUTH", True)}
