from django.apps import AppConfig


class TopologyConfig(AppConfig):
    name = "apps.topology"
    label = "topology"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects the probes' signals; models must be loaded first)
