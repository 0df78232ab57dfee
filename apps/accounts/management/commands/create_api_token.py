"""Create an API token for a user and print it (once) for automation: scripts, CI, the probe agents."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from apps.accounts.services import create_api_token


class Command(BaseCommand):
    help = "Create an API token for USER and print it (only its digest is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="username the token acts as")
        parser.add_argument("--name", required=True, help="what the token is for (unique per user)")
        parser.add_argument("--expires-days", type=float, default=None, help="lifetime in days (default: none)")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"--user: no user named {options['user']!r} (create one with createsuperuser or the admin)")
        days = options["expires_days"]
        if days is not None and days <= 0:
            raise CommandError("--expires-days: must be positive")
        expires = timezone.now() + timedelta(days=days) if days else None
        try:
            _token, raw = create_api_token(user=user, name=options["name"], expires_at=expires)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(raw)
