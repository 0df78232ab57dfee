"""``Authorization: Bearer <token>`` (or ``Token <token>``) for the API, from our ApiToken table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import authentication, exceptions

from . import lockout, selectors
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
        # A valid token is never locked out (one indexed lookup; 256 random bits cannot be guessed):
        # wrong ones are counted per address, and past the limit answered 429 instead of 401.
        token = selectors.token_for(raw=raw) if raw.startswith(TOKEN_PREFIX) else None
        if token is None:
            lockout.refuse_if_locked_out(request, username=lockout.TOKEN_USERNAME)
            lockout.record_token_failure(request)
            if not raw.startswith(TOKEN_PREFIX):
                raise exceptions.AuthenticationFailed(f"Not a netaware API token (they start with {TOKEN_PREFIX!r}).")
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API token.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="netaware"'


class BasicAuthentication(authentication.BasicAuthentication):
    """DRF's Basic auth, except that credentials holding a NUL character are refused (401) before
    they reach the database, which cannot compare them (it was a 500; issue 21), and a client locked
    out for failed logins gets 429 before its password is hashed (django-axes counts the failures)."""

    def authenticate_credentials(self, userid, password, request=None):  # type: ignore[no-untyped-def]
        if "\x00" in userid or "\x00" in password:
            raise exceptions.AuthenticationFailed("Invalid username/password.")
        lockout.refuse_if_locked_out(request, username=userid)
        return super().authenticate_credentials(userid, password, request)
