from django.apps import AppConfig


class TopologyConfig(AppConfig):
    name = "apps.topology"
    label = "topology"
    default_auto_field = "django.db.models.BigAutoField"
