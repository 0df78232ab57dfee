from django.db import models


class NodeSource(models.TextChoices):
    """Where the node cache row came from (the last writer wins for the fields it knows)."""

    SCENARIO = "scenario", "Scenario file"
    CLUSTER = "cluster", "Kubernetes API"
    METRICS = "metrics", "Probe metrics (netaware_node_info)"
    IMPORT = "import", "Imported topology"


class SnapshotSource(models.TextChoices):
    MEASURED = "measured", "Measured (Prometheus pipeline)"
    IMPORTED = "imported", "Imported (user-defined)"
