"""``Authorization: Bearer <token>`` (or ``Token <token>``) for the API, from our ApiToken table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import authentication, exceptions

from . import selectors
from .models import TOKEN_PREFIX

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from rest_framework.request import Request

    from .models import ApiToken

KEYWORDS = ("bearer", "token")


def raw_token(header: str) -> str | None:
    """The token of an Authorization header value, or None when it is not a token header."""
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() not in KEYWORDS:
        return None
    return parts[1]


class ApiTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        raw = raw_token(header) if header else None
        if raw is None:
            return None
        if not raw.startswith(TOKEN_PREFIX):
            raise exceptions.AuthenticationFailed(f"Not a netaware API token (they start with {TOKEN_PREFIX!r}).")
        token = selectors.token_for(raw=raw)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API token.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="netaware"'
