from typing import Any

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = "Access: users, roles and API tokens"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from . import schema  # noqa: F401  (registers the OpenAPI description of API tokens)

        post_migrate.connect(_ensure_roles, dispatch_uid="accounts.ensure_roles")


def _ensure_roles(sender: Any, app_config: AppConfig | None = None, **kwargs: Any) -> None:
    # After the last app's permissions exist (post_migrate runs per app, ours is late in the list).
    if app_config is not None and app_config.label == "accounts":
        from .services import ensure_roles  # services imports models: not loadable when apps.py is

        ensure_roles()
