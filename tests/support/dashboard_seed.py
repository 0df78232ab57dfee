"""Seed data for the dashboard tests: a small measured topology, the Online Boutique AppGroup and
placements, all written through the real services (no fixtures of our own components)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BOUTIQUE = ROOT / "scenarios" / "online-boutique-appgroup.yaml"

# Zone A (a1, a2), zone B (b1), zone FAR (f1); a2 -> f1 is left out so it is inferred.
LATENCY = {
    "a1": {"a2": 0.5, "b1": 2.0, "f1": 20.0},
    "a2": {"a1": 0.5, "b1": 2.2},
    "b1": {"a1": 2.0, "a2": 2.2, "f1": 21.0},
    "f1": {"a1": 20.0, "a2": 20.5, "b1": 21.0},
}
TOPOLOGY = {
    "apiVersion": "netaware.io/v1alpha1",
    "kind": "NetworkTopology",
    "metadata": {"name": "dashboard-test"},
    "spec": {
        "zones": [
            {"name": "A", "region": "lab", "nodes": ["a1", "a2"]},
            {"name": "B", "region": "lab", "nodes": ["b1"]},
            {"name": "FAR", "region": "lab", "nodes": ["f1"]},
        ],
        "latency": LATENCY,
        "bandwidth": {s: {d: (1000.0 if v < 1 else 300.0 if v < 5 else 20.0) for d, v in row.items()}
                      for s, row in LATENCY.items()},
        "lossrate": {s: {d: (0.0 if v < 5 else 3.0) for d, v in row.items()} for s, row in LATENCY.items()},
    },
}


def seed_topology():
    from apps.topology import services

    return services.import_topology(document=TOPOLOGY)


def boutique_document() -> dict:
    return yaml.safe_load(BOUTIQUE.read_text())


def seed_boutique():
    from apps.appgroups import services

    return services.import_resource(document=boutique_document())


def place(workload: str, node: str, *, pod: str | None = None):
    """Record a placement for a pod of ``workload`` (selector app=<workload>) on ``node``."""
    from apps.appgroups import services

    return services.record_placement(
        pod_namespace="default", pod_name=pod or f"{workload}-0", pod_uid="", node_name=node,
        labels={"app": workload}, source="extender",
    )
