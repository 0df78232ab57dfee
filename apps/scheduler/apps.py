from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    name = "apps.scheduler"
    label = "scheduler"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Writes to anything the extender's ClusterState is built from mark every extender
        # process's cached state out of date (apps.scheduler.selectors).
        from . import signals

        signals.connect()
