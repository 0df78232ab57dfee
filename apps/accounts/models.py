"""API tokens for automation, and the custom permissions the roles are made of.

A token is shown once when created; only its SHA-256 digest is stored (tokens carry 256 random
bits, so a plain digest is enough: there is nothing to brute-force). Authenticated requests never
write to the token row: reads only read.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "nat_"


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_token_value() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class Access(models.Model):
    """No table: carries the permissions that are not about one model (see roles.py)."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("view_netaware", "Can read every dashboard page and API"),
            ("diagnose_pod", "Can diagnose a pod (reads it from the Kubernetes API)"),
            ("run_evaluation", "Can run the evaluation harness from the dashboard"),
        ]


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI export job'.")
    key_prefix = models.CharField(max_length=12, editable=False, help_text="First characters, to tell tokens apart.")
    key_digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")

    class Meta:
        ordering = ("user", "name")
        verbose_name = "API token"
        constraints = [
            models.UniqueConstraint(fields=("user", "name"), name="accounts_apitoken_unique_name",
                                    violation_error_message="This user already has a token with this name."),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…) of {self.user}"

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()
