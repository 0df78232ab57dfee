from django.apps import AppConfig


class AppgroupsConfig(AppConfig):
    name = "apps.appgroups"
    label = "appgroups"
    default_auto_field = "django.db.models.BigAutoField"
