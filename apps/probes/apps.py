from django.apps import AppConfig


class ProbesConfig(AppConfig):
    name = "apps.probes"
    label = "probes"
    default_auto_field = "django.db.models.BigAutoField"
