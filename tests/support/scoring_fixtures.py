"""The paper's Online Boutique AppGroup (the paper "Network Aware Scheduler for Kubernetes", Table 4) as an ``AppGroupSpec``.

Shared by the scoring tests, bench/bench_scoring.py and anyone needing the paper's workload without
a database. Resource hints are Online Boutique's manifest requests. Workload names are the paper's
(``cart``, ``checkout``, ...); selectors and controller names are upstream's kubernetes-manifests labels
(``app=cartservice``, ...), so the spec matches the pods a real Online Boutique deployment creates.
"""

from __future__ import annotations

import numpy as np

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.topology.topomath import Topology, metric_extrema

MI = 2**20

# workload -> (importance weight, cpu millicores, memory bytes, ((dependency, latency, bandwidth, loss), ...))
PAPER_WORKLOADS: dict[str, tuple[float, int, int, tuple[tuple[str, float, float, float], ...]]] = {
    "frontend": (1.0, 100, 64 * MI, (
        ("recommendation", 0.6, 0.3, 0.1), ("productcatalog", 0.7, 0.2, 0.1), ("checkout", 0.6, 0.3, 0.1),
        ("currency", 0.4, 0.4, 0.2), ("cart", 0.5, 0.4, 0.1), ("shipping", 0.4, 0.3, 0.3),
        ("ad", 0.7, 0.2, 0.1),
    )),
    "recommendation": (0.8, 100, 220 * MI, (("productcatalog", 0.7, 0.2, 0.1),)),
    "checkout": (0.9, 100, 64 * MI, (
        ("payment", 0.4, 0.3, 0.3), ("email", 0.4, 0.3, 0.3), ("shipping", 0.5, 0.3, 0.2),
        ("currency", 0.4, 0.3, 0.2), ("cart", 0.4, 0.3, 0.2), ("productcatalog", 0.7, 0.2, 0.1),
    )),
    "cart": (0.8, 200, 64 * MI, (("redis-cart", 0.5, 0.4, 0.1),)),
    "ad": (0.4, 200, 180 * MI, ()),
    "productcatalog": (0.6, 100, 64 * MI, ()),
    "currency": (0.8, 100, 64 * MI, ()),
    "payment": (0.8, 100, 64 * MI, ()),
    "shipping": (0.8, 100, 64 * MI, ()),
    "email": (0.7, 100, 64 * MI, ()),
    "redis-cart": (0.7, 70, 200 * MI, ()),
}

# paper workload name -> the ``app`` label (and Deployment name) in upstream's kubernetes-manifests
UPSTREAM_APP_LABELS: dict[str, str] = {
    "frontend": "frontend",
    "recommendation": "recommendationservice",
    "checkout": "checkoutservice",
    "cart": "cartservice",
    "ad": "adservice",
    "productcatalog": "productcatalogservice",
    "currency": "currencyservice",
    "payment": "paymentservice",
    "shipping": "shippingservice",
    "email": "emailservice",
    "redis-cart": "redis-cart",
}


def pod_labels(workload: str) -> dict[str, str]:
    """The labels upstream's manifests put on the pods of the paper's ``workload``."""
    return {"app": UPSTREAM_APP_LABELS[workload]}


def paper_appgroup(namespace: str = "default", name: str = "online-boutique", *, replicas: int = 1) -> AppGroupSpec:
    workloads = tuple(
        WorkloadSpec(
            name=workload,
            selector=LabelSelector(pod_labels(workload)),
            weight=weight,
            dependencies=tuple(DependencySpec(t, Sensitivity(lat, bw, loss)) for t, lat, bw, loss in deps),
            controller_kind="Deployment",
            controller_name=UPSTREAM_APP_LABELS[workload],
            replicas=replicas,
            cpu_request_millicores=cpu,
            memory_request_bytes=mem,
        )
        for workload, (weight, cpu, mem, deps) in PAPER_WORKLOADS.items()
    )
    return AppGroupSpec(namespace=namespace, name=name, workloads=workloads)


def random_metrics(
    rng: np.random.Generator, n: int, *, latency: tuple[float, float], bandwidth: tuple[float, float],
    loss: tuple[float, float], missing: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniform latency/bandwidth/loss matrices, each with about ``missing`` of its pairs unmeasured (NaN),
    and zero self-latency."""
    lat, bw, lr = (rng.uniform(low, high, (n, n)) for low, high in (latency, bandwidth, loss))
    for arr in (lat, bw, lr):
        arr[rng.random((n, n)) < missing] = np.nan
    np.fill_diagonal(lat, 0.0)
    return lat, bw, lr


def zoned_topology(lat: np.ndarray, bw: np.ndarray, loss: np.ndarray, *, zone: np.ndarray, regions: int,
                   zone_latency: np.ndarray, node_prefix: str) -> Topology:
    """Nodes ``{node_prefix}{i}`` in zones ``z{zone[i]}``, zone z in region ``r{z % regions}``; zone costs
    within a region are the rounded zone latencies, every region pair costs 20."""
    n, nz = lat.shape[0], zone_latency.shape[0]
    zone_costs = {(f"z{a}", f"z{b}"): float(round(zone_latency[a, b])) for a in range(nz) for b in range(nz)
                  if a != b and a % regions == b % regions}
    region_costs = {(f"r{a}", f"r{b}"): 20.0 for a in range(regions) for b in range(regions) if a != b}
    no = np.zeros((n, n), dtype=bool)
    return Topology(tuple(f"{node_prefix}{i}" for i in range(n)), tuple(f"z{z}" for z in zone),
                    tuple(f"r{z % regions}" for z in zone), lat, bw, loss, no, no.copy(),
                    *metric_extrema(lat, bw, loss), zone_costs=zone_costs, region_costs=region_costs)
