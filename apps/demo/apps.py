from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo cluster (an in-memory API speaking the Kubernetes protocol) and the rollout driver."""

    name = "apps.demo"
    label = "demo"
