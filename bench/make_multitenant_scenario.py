"""Write the issue-20 scenarios: three tenants on four public-cloud regions, twelve zones, busy nodes.

    python bench/make_multitenant_scenario.py            # scenarios/four-regions-94.yaml, four-regions-376.yaml,
                                                         # scenarios/three-tenants-appgroups.yaml

Deterministic (seeded); re-run to regenerate. What it models and where the numbers come from
(docs/scenarios.md, "four-regions"):

* Regions: AWS eu-west-1 (Ireland), eu-central-1 (Frankfurt), us-east-1 (N. Virginia) and us-west-2
  (Oregon), three availability zones each. Inter-region RTTs are rounded medians of the public
  AWS inter-region latency matrix (cloudping.co, "AWS Latency Monitoring", p50 over a day): Ireland-Frankfurt
  ~24 ms, Ireland-Virginia ~68 ms, Frankfurt-Virginia ~90 ms, Virginia-Oregon ~65 ms, Ireland-Oregon
  ~125 ms, Frankfurt-Oregon ~150 ms. Between zones of a region ~0.6-1.5 ms and inside a zone
  ~0.1-0.25 ms (AWS: "single-digit millisecond latency" between AZs; typical measured RTTs).
* A few degraded links: one zone pair with 1 % loss, one zone on 1 Gbit/s, one region pair at 200 Mbit/s.
* ~94 heterogeneous nodes (4..16 CPU, 16..64 GiB, the m5/c5/r5 xlarge..4xlarge shapes), 30-90 % of their
  CPU and memory already requested by other teams' pods (the ``existing_pods`` field), so that no zone
  holds the largest tenant. The 376-node variant has four times the nodes of every zone.
* Measurement gaps: a Frankfurt node whose agent hung as its NIC degraded (its pairs stale; 0.9 ms and 0.5 %
  loss to its zone peers, unseen), a node that has no agent yet (unmeasured) and 12 (48) pairs between zones
  outside every agent's fan-out: the evaluation schedules on the measured view and scores on the truth.
* Tenants: a TrainTicket-like application (FudanSELab/train-ticket: 44 services and their MongoDB/MySQL
  databases, 64 workloads, its call graph from the gateway ts-ui-dashboard), a DeathStarBench
  mediaMicroservices application (its 32 services, caches and databases, Gan et al., ASPLOS 2019) and
  Online Boutique (the paper's Table 4) with replicas on its hot path.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent

REGIONS = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2"]
# Rounded p50 RTTs (ms) between the regions (cloudping.co's AWS matrix; see the module docstring).
REGION_RTT = {
    ("eu-west-1", "eu-central-1"): 24.0, ("eu-west-1", "us-east-1"): 68.0, ("eu-central-1", "us-east-1"): 90.0,
    ("us-east-1", "us-west-2"): 65.0, ("eu-west-1", "us-west-2"): 125.0, ("eu-central-1", "us-west-2"): 150.0,
}
# Nodes per zone (94 in total) and the node shapes (cpu, memory GiB).
ZONE_SIZES = [9, 7, 8, 6, 8, 7, 10, 9, 8, 7, 8, 7]
SHAPES = [(4, 16), (8, 32), (16, 64), (8, 16), (4, 32), (16, 32)]


def _zones() -> list[tuple[str, str]]:
    return [(f"{region}{'abc'[i]}", region) for region in REGIONS for i in range(3)]


def scenario(scale: int, rng: random.Random) -> dict[str, Any]:
    zones = _zones()
    regions: list[dict[str, Any]] = []
    by_region: dict[str, list[dict[str, Any]]] = {}
    for (zone, region), size in zip(zones, ZONE_SIZES, strict=True):
        nodes = []
        for i in range(size * scale):
            cpu, mem = SHAPES[rng.randrange(len(SHAPES))]
            used = rng.uniform(0.30, 0.90)
            used_mem = min(0.95, max(0.25, used + rng.uniform(-0.1, 0.1)))
            count = max(1, round(cpu * used / 0.5))  # other teams' pods of ~500m each
            nodes.append({"name": f"{zone}-{i + 1:03d}", "cpu": str(cpu), "memory": f"{mem}Gi",
                          "cpu_utilization": round(min(0.95, used * 0.8), 2),
                          "memory_utilization": round(used_mem * 0.9, 2),
                          "existing_pods": {"count": count, "cpu": f"{round(cpu * 1000 * used)}m",
                                            "memory": f"{round(mem * 1024 * used_mem)}Mi"}})
        by_region.setdefault(region, []).append({"name": zone, "nodes": nodes})
    for region in REGIONS:
        regions.append({"name": region, "zones": by_region[region]})
    links = []
    slow_zone = "us-east-1b"  # older hardware: 1 Gbit/s inside the zone
    lossy = {("eu-central-1a", "eu-central-1c")}  # a degraded inter-AZ path: 1 % loss
    for i, (za, ra) in enumerate(zones):
        for zb, rb in zones[i:]:
            if za == zb:
                link = {"latency_ms": round(rng.uniform(0.10, 0.25), 2), "loss_pct": 0.0,
                        "bandwidth_mbps": 1000 if za == slow_zone else 10000}
            elif ra == rb:
                link = {"latency_ms": round(rng.uniform(0.6, 1.5), 2),
                        "loss_pct": 1.0 if (za, zb) in lossy else 0.01, "bandwidth_mbps": 5000}
            else:
                rtt = REGION_RTT.get((ra, rb)) or REGION_RTT[(rb, ra)]
                slow = {ra, rb} == {"eu-central-1", "us-west-2"}
                link = {"latency_ms": round(rtt + rng.uniform(-2.0, 2.0), 1), "loss_pct": round(rng.uniform(0.05, 0.3), 2),
                        "bandwidth_mbps": 200 if slow else 1000}
            links.append({"between": [za, zb], **link})
    nodes_total = sum(ZONE_SIZES) * scale
    # Measurement gaps (issue 20 item 6), drawn after everything above so the rest stays as it was:
    # a node in Frankfurt whose agent hung when its NIC began to drop packets (its pairs stale, the links
    # inside its zone degraded where nobody sees it), a node that joined a minute ago and has no agent
    # yet, and pairs between zones outside every agent's fan-out.
    members = {zone["name"]: [node["name"] for node in zone["nodes"]] for r in regions for zone in r["zones"]}
    hung, new = members["eu-central-1a"][0], members["us-east-1a"][-1]
    node_links = [{"between": [hung, peer], "latency_ms": 0.9, "loss_pct": 0.5, "bandwidth_mbps": 2000}
                  for peer in members["eu-central-1a"][1:]]
    everyone = [name for names in members.values() for name in names]
    zone_of = {name: zone for zone, names in members.items() for name in names}
    gaps: set[tuple[str, str]] = set()
    while len(gaps) < 12 * scale:
        a, b = sorted(rng.sample(everyone, 2))
        if zone_of[a] != zone_of[b] and hung not in (a, b) and new not in (a, b):
            gaps.add((a, b))
    return {
        "name": f"four-regions-{nodes_total}",
        "description": (f"Four AWS-like regions x three zones, {nodes_total} heterogeneous nodes 30-90 % requested by "
                        "other teams' pods, public-cloud inter-region RTTs 24-150 ms, a few degraded links, a hung "
                        "agent on a degraded node, a node without an agent yet and pairs outside the fan-out; for "
                        "the three-tenant AppGroups (issue 20). Generated by bench/make_multitenant_scenario.py."),
        "defaults": {"jitter": 0.05},
        "regions": regions,
        "links": links,
        "node_links": node_links,
        "stale": [{"node": hung, "after_s": 300}],
        "unmeasured": [{"node": new}, *[[a, b] for a, b in sorted(gaps)]],
    }


# --------------------------------------------------------------------------------------- AppGroups

# TrainTicket (FudanSELab/train-ticket) call graph, services -> the services and databases they call.
TRAIN_TICKET: dict[str, list[str]] = {
    "ts-ui-dashboard": ["ts-auth", "ts-user", "ts-verification-code", "ts-travel", "ts-travel2", "ts-preserve",
                        "ts-preserve-other", "ts-order", "ts-order-other", "ts-contacts", "ts-cancel", "ts-rebook",
                        "ts-execute", "ts-inside-payment", "ts-consign", "ts-food", "ts-assurance", "ts-station",
                        "ts-travel-plan", "ts-route-plan", "ts-admin-basic-info", "ts-admin-order", "ts-admin-route",
                        "ts-admin-travel", "ts-admin-user", "ts-voucher", "ts-delivery", "ts-wait-order"],
    "ts-auth": ["ts-auth-mongo", "ts-verification-code"],
    "ts-user": ["ts-user-mongo", "ts-auth"],
    "ts-travel": ["ts-travel-mongo", "ts-ticketinfo", "ts-train", "ts-route", "ts-order", "ts-seat"],
    "ts-travel2": ["ts-travel2-mongo", "ts-ticketinfo", "ts-train", "ts-route", "ts-order-other", "ts-seat"],
    "ts-ticketinfo": ["ts-basic"],
    "ts-basic": ["ts-station", "ts-train", "ts-route", "ts-price"],
    "ts-station": ["ts-station-mongo"],
    "ts-train": ["ts-train-mongo"],
    "ts-route": ["ts-route-mongo"],
    "ts-price": ["ts-price-mongo"],
    "ts-seat": ["ts-order", "ts-order-other", "ts-config"],
    "ts-config": ["ts-config-mongo"],
    "ts-order": ["ts-order-mongo", "ts-station"],
    "ts-order-other": ["ts-order-other-mongo", "ts-station"],
    "ts-preserve": ["ts-ticketinfo", "ts-seat", "ts-order", "ts-security", "ts-contacts", "ts-travel", "ts-station",
                    "ts-user", "ts-assurance", "ts-food", "ts-consign", "ts-notification"],
    "ts-preserve-other": ["ts-ticketinfo", "ts-seat", "ts-order-other", "ts-security", "ts-contacts", "ts-travel2",
                          "ts-station", "ts-user", "ts-assurance", "ts-food", "ts-consign", "ts-notification"],
    "ts-security": ["ts-security-mongo", "ts-order", "ts-order-other"],
    "ts-contacts": ["ts-contacts-mongo"],
    "ts-assurance": ["ts-assurance-mongo"],
    "ts-food": ["ts-food-mongo", "ts-food-map", "ts-travel", "ts-station"],
    "ts-food-map": ["ts-food-map-mongo"],
    "ts-consign": ["ts-consign-mongo", "ts-consign-price"],
    "ts-consign-price": ["ts-consign-price-mongo"],
    "ts-inside-payment": ["ts-inside-payment-mongo", "ts-payment", "ts-order", "ts-order-other"],
    "ts-payment": ["ts-payment-mongo"],
    "ts-execute": ["ts-order", "ts-order-other"],
    "ts-cancel": ["ts-order", "ts-order-other", "ts-inside-payment", "ts-user", "ts-notification"],
    "ts-rebook": ["ts-order", "ts-order-other", "ts-travel", "ts-travel2", "ts-inside-payment", "ts-seat",
                  "ts-station"],
    "ts-route-plan": ["ts-travel", "ts-travel2", "ts-route", "ts-station"],
    "ts-travel-plan": ["ts-route-plan", "ts-travel", "ts-travel2", "ts-seat", "ts-ticketinfo", "ts-station"],
    "ts-notification": [],
    "ts-verification-code": [],
    "ts-admin-basic-info": ["ts-station", "ts-train", "ts-config", "ts-price", "ts-contacts"],
    "ts-admin-order": ["ts-order", "ts-order-other"],
    "ts-admin-route": ["ts-route"],
    "ts-admin-travel": ["ts-travel", "ts-travel2"],
    "ts-admin-user": ["ts-user"],
    "ts-voucher": ["ts-voucher-mysql", "ts-order"],
    "ts-delivery": ["ts-delivery-mongo"],
    "ts-wait-order": ["ts-wait-order-mongo", "ts-order"],
}
TRAIN_TICKET_REPLICAS = {"ts-ui-dashboard": 3, "ts-travel": 2, "ts-order": 2, "ts-preserve": 2, "ts-basic": 2,
                         "ts-station": 2, "ts-seat": 2, "ts-ticketinfo": 2, "ts-route": 2}

# DeathStarBench mediaMicroservices call graph.
MEDIA: dict[str, list[str]] = {
    "nginx-web-server": ["unique-id-service", "movie-id-service", "text-service", "user-service", "rating-service",
                         "page-service", "user-review-service", "movie-review-service", "cast-info-service",
                         "plot-service", "movie-info-service"],
    "unique-id-service": ["compose-review-service"],
    "movie-id-service": ["movie-id-mongodb", "movie-id-memcached", "compose-review-service", "rating-service"],
    "text-service": ["compose-review-service"],
    "user-service": ["user-mongodb", "user-memcached", "compose-review-service"],
    "rating-service": ["rating-redis", "compose-review-service"],
    "compose-review-service": ["compose-review-memcached", "review-storage-service", "user-review-service",
                               "movie-review-service"],
    "review-storage-service": ["review-storage-mongodb", "review-storage-memcached"],
    "user-review-service": ["user-review-mongodb", "user-review-redis", "review-storage-service"],
    "movie-review-service": ["movie-review-mongodb", "movie-review-redis", "review-storage-service"],
    "page-service": ["movie-info-service", "cast-info-service", "plot-service", "movie-review-service"],
    "cast-info-service": ["cast-info-mongodb", "cast-info-memcached"],
    "plot-service": ["plot-mongodb", "plot-memcached"],
    "movie-info-service": ["movie-info-mongodb", "movie-info-memcached"],
}
MEDIA_REPLICAS = {"nginx-web-server": 3, "compose-review-service": 2, "page-service": 2, "movie-info-service": 2,
                  "user-service": 2}
BOUTIQUE_REPLICAS = {"frontend": 3, "productcatalog": 3, "currency": 2, "cart": 2, "recommendation": 2,
                     "checkout": 2, "redis-cart": 1, "ad": 2, "shipping": 2}


def _kind(name: str) -> str:
    if name.endswith(("-mongo", "-mongodb", "-mysql")):
        return "db"
    if name.endswith(("-memcached", "-redis")) or name == "redis-cart":
        return "cache"
    if name in ("ts-ui-dashboard", "nginx-web-server", "frontend"):
        return "gateway"
    return "service"


RESOURCES = {"db": ("1", "2Gi"), "cache": ("250m", "512Mi"), "gateway": ("1", "1Gi"),
             "service": ("500m", "768Mi")}
SENSITIVITY = {"db": (0.6, 0.3, 0.1), "cache": (0.8, 0.1, 0.1), "service": (0.5, 0.3, 0.2),
               "gateway": (0.5, 0.2, 0.3)}
WEIGHT = {"gateway": 1.0, "service": 0.8, "db": 0.6, "cache": 0.5}


def _workloads(graph: dict[str, list[str]], replicas: dict[str, int], app_label: str,
               rng: random.Random) -> list[dict[str, Any]]:
    names = list(dict.fromkeys([*graph, *(t for targets in graph.values() for t in targets)]))
    out = []
    for name in names:
        kind = _kind(name)
        cpu, memory = RESOURCES[kind]
        weight = WEIGHT[kind] if not name.startswith("ts-admin") else 0.3
        deps = []
        for target in graph.get(name, []):
            lat, bw, loss = SENSITIVITY[_kind(target)]
            jitter = rng.uniform(-0.1, 0.1)
            deps.append({"name": target, "metrics": {"latency": round(lat + jitter, 2), "bandwidth": round(bw - jitter, 2),
                                                     "lossrate": loss}})
        entry: dict[str, Any] = {
            "name": name, "selector": {"matchLabels": {"app": name, "app.kubernetes.io/part-of": app_label}},
            "weight": weight, "controller": {"kind": "StatefulSet" if kind == "db" else "Deployment", "name": name},
            "replicas": replicas.get(name, 1), "resources": {"cpu": cpu, "memory": memory},
        }
        if deps:
            entry["dependencies"] = deps
        out.append(entry)
    return out


def appgroups(rng: random.Random) -> list[dict[str, Any]]:
    boutique = yaml.safe_load((ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text())
    for workload in boutique["spec"]["workloads"]:
        workload["replicas"] = BOUTIQUE_REPLICAS.get(workload["name"], 1)
    boutique["metadata"] = {"name": "online-boutique", "namespace": "shop"}

    def doc(name: str, namespace: str, workloads: list[dict[str, Any]]) -> dict[str, Any]:
        return {"apiVersion": "netaware.io/v1alpha1", "kind": "AppGroup",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"topologySortingAlgorithm": "KahnSort", "workloads": workloads}}

    return [doc("train-ticket", "rail", _workloads(TRAIN_TICKET, TRAIN_TICKET_REPLICAS, "train-ticket", rng)),
            doc("media", "media", _workloads(MEDIA, MEDIA_REPLICAS, "media-microservices", rng)),
            boutique]


HEADER = """# Generated by bench/make_multitenant_scenario.py (issue 20) - do not edit by hand, re-run it.
# {what}
"""


def main(out: Path) -> None:
    for scale in (1, 4):
        doc = scenario(scale, random.Random(20 + scale))
        path = out / f"{doc['name']}.yaml"
        path.write_text(HEADER.format(what=doc["description"]) + yaml.safe_dump(doc, sort_keys=False, width=120))
        print(f"wrote {path}")
    groups = appgroups(random.Random(2020))
    path = out / "three-tenants-appgroups.yaml"
    what = ("Three tenants: TrainTicket-like (64 workloads), DeathStarBench mediaMicroservices (32), Online Boutique "
            "with replicas (11).")
    path.write_text(HEADER.format(what=what) + yaml.safe_dump_all(groups, sort_keys=False, width=120))
    print(f"wrote {path}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "scenarios")
