"""Writes of the accounts app."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError

from .models import ApiToken, digest, new_token_value
from .roles import ROLES

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def create_api_token(*, user: User, name: str, expires_at: datetime | None = None) -> tuple[ApiToken, str]:
    """A new token for ``user``; returns the row and the token itself (shown once, never stored)."""
    raw = new_token_value()
    token = ApiToken(user=user, name=name, key_prefix=raw[:10], key_digest=digest(raw), expires_at=expires_at)
    try:
        token.full_clean()
    except ValidationError as exc:
        raise ValidationError(exc.message_dict) from None
    token.save()
    return token, raw


def revoke_api_token(*, token: ApiToken) -> None:
    token.delete()


def ensure_roles() -> None:
    """Create the viewer and editor groups with their permissions where missing (idempotent).

    Migration 0002 creates them; this also runs after every ``migrate`` and database flush
    (post_migrate), so the roles come back after a test flush or a hand-made deletion.
    """

    for role, perms in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        wanted = []
        for perm in perms:
            app_label, codename = perm.split(".", 1)
            found = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
            if found is not None:
                wanted.append(found)
        group.permissions.add(*wanted)
