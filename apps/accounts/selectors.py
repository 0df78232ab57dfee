"""Reads of the accounts app."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet

from .models import ApiToken, digest

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def token_for(*, raw: str) -> ApiToken | None:
    """The live token with this value, or None (unknown, expired, or its user is inactive)."""
    token = ApiToken.objects.select_related("user").filter(key_digest=digest(raw)).first()
    if token is None or token.expired or not token.user.is_active:
        return None
    return token


def tokens_of(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("name")
