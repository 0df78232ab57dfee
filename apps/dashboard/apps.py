from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """Pages that combine several apps (topology, AppGroups, scheduler, probes): they sit on top of the
    layering probes -> topology -> appgroups -> scheduler and nothing imports them."""

    name = "apps.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
