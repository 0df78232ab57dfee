from django.apps import AppConfig


class AppgroupsConfig(AppConfig):
    name = "apps.appgroups"
    label = "appgroups"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (tombstones + prompt sync on every AppGroup change)
