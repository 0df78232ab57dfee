"""Choice sets of the appgroups models (also used by the CRD schemas and the API)."""

from django.db import models


class TopologySortingAlgorithm(models.TextChoices):
    KAHN = "KahnSort", "KahnSort"
    TARJAN = "TarjanSort", "TarjanSort"
    REVERSE_KAHN = "ReverseKahn", "ReverseKahn"
    REVERSE_TARJAN = "ReverseTarjan", "ReverseTarjan"
    ALTERNATE_KAHN = "AlternateKahn", "AlternateKahn"
    ALTERNATE_TARJAN = "AlternateTarjan", "AlternateTarjan"


class TopologyMode(models.TextChoices):
    """How strictly the plan filter keeps an AppGroup together (the stricter of this and the profile's)."""

    SOFT = "soft", "soft (the plan is a preference)"
    ZONE = "zone", "zone (all in one zone, or pods wait)"
    REGION = "region", "region (all in one region, or pods wait)"


class RebalanceMode(models.TextChoices):
    """Whether the rebalancer moves this AppGroup's running pods toward the best plan (docs/rebalancer.md)."""

    OFF = "off", "off (never moved)"
    DRY_RUN = "dry-run", "dry-run (moves reported, nothing evicted)"
    ON = "on", "on (pods evicted toward the plan, one at a time per workload)"


class Origin(models.TextChoices):
    """Where the AppGroup was last authored: netaware (API, admin, dashboard), the cluster (kubectl), or
    learned from observed traffic (apps.traffic, adopt mode: rewritten as traffic changes, never over a
    hand-written AppGroup)."""

    NETAWARE = "netaware", "netaware"
    CLUSTER = "cluster", "cluster"
    OBSERVED = "observed", "observed"


class PlacementSource(models.TextChoices):
    EXTENDER = "extender", "scheduler extender (bind)"
    WATCHER = "watcher", "pod watcher"
