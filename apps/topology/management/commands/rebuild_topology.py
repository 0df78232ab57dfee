from typing import Any

from django.core.management.base import BaseCommand

from apps.topology import services


class Command(BaseCommand):
    help = "Derive the NetworkTopology from the newest samples now (what the periodic task does)."

    def handle(self, *args: Any, **options: Any) -> None:
        snapshot = services.rebuild_topology()
        if snapshot is None:
            self.stdout.write("no nodes and no samples yet: nothing to derive")
        else:
            self.stdout.write(f"current topology v{snapshot.version}: {snapshot.node_count} nodes, "
                              f"{snapshot.measured_pairs} measured / {snapshot.inferred_pairs} inferred / "
                              f"{snapshot.stale_pairs} stale pairs{' (STALE)' if snapshot.stale else ''}")
