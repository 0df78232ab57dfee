"""The NetworkTopology is published within etcd's 1.5 MiB object limit at 1,000 nodes, losslessly
(up to the documented rounding) split into parts, and re-publishing an unchanged snapshot writes nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from apps.topology import documents, publish, services, tasks
from apps.topology.topomath import EXTREMA_FIELDS, Topology, metric_extrema

G, V, P = "netaware.io", "v1alpha1", "networktopologies"
LIMIT = 1536 * 1024


def _topology(n: int, *, zones: int = 10, seed: int = 7, version: int = 1) -> Topology:
    rng = np.random.default_rng(seed)
    nodes = tuple(f"node-{i:04d}" for i in range(n))
    zone_of = tuple(f"zone-{i % zones}" for i in range(n))
    region_of = tuple(f"region-{(i % zones) // 5}" for i in range(n))
    latency = rng.uniform(0.05, 80.0, (n, n))
    bandwidth = rng.uniform(50.0, 10000.0, (n, n))
    loss = rng.uniform(0.0, 3.0, (n, n))
    unknown = rng.random((n, n)) < 0.02
    for matrix in (latency, bandwidth, loss):
        matrix[unknown] = np.nan
        np.fill_diagonal(matrix, 0.0)
    zone_names = sorted(set(zone_of))
    zone_costs = {
        (a, b): float(abs(int(a[5:]) - int(b[5:]))) for a in zone_names for b in zone_names if a != b
    }
    return Topology(
        nodes=nodes,
        zones=zone_of,
        regions=region_of,
        latency_ms=latency,
        bandwidth_mbps=bandwidth,
        loss_pct=loss,
        inferred=np.zeros((n, n), dtype=bool),
        stale=np.zeros((n, n), dtype=bool),
        **dict(zip(EXTREMA_FIELDS, metric_extrema(latency, bandwidth, loss), strict=True)),
        zone_costs=zone_costs,
        region_costs={("region-0", "region-1"): 20.0, ("region-1", "region-0"): 20.0},
        version=version,
    )


def test_every_object_at_1000_nodes_is_under_the_limit_and_parts_cover_every_pair():
    topology = _topology(1000)
    docs = documents.build_documents(topology, name="netaware", namespace="netaware-system")
    sizes = [len(json.dumps(doc).encode()) for doc in docs]
    assert max(sizes) < LIMIT
    assert all(size <= documents.PART_BUDGET_BYTES + 4096 for size in sizes)  # headroom for managedFields

    *parts, main = docs
    assert main["metadata"]["name"] == "netaware" and main["spec"]["granularity"] == "Zone"
    assert len(main["spec"]["nodes"]) == 1000 and main["spec"]["nodes"][3]["zone"] == "zone-3"
    assert set(main["spec"]["latency"]) == {f"zone-{i}" for i in range(10)}
    assert main["spec"]["zoneCosts"]["zone-0"]["zone-3"] == 3.0
    assert len(parts) > 1 and [p["spec"]["part"] for p in parts] == [
        {"index": k, "total": len(parts)} for k in range(len(parts))
    ]

    sources = [entry["name"] for p in parts for entry in p["spec"]["nodes"]]
    assert sources == list(topology.nodes)  # each source node in exactly one part
    latency = {src: row for p in parts for src, row in p["spec"]["latency"].items()}
    loss = {src: row for p in parts for src, row in p["spec"]["lossrate"].items()}
    known = ~np.isnan(topology.latency_ms) & ~np.eye(1000, dtype=bool)
    assert sum(len(row) for row in latency.values()) == int(known.sum())
    rng = np.random.default_rng(1)
    for i, j in zip(rng.integers(0, 1000, 300), rng.integers(0, 1000, 300), strict=True):
        src, dst = topology.nodes[i], topology.nodes[j]
        if known[i, j]:
            assert abs(latency[src][dst] - topology.latency_ms[i, j]) <= 0.0005 + 1e-9
            assert abs(loss[src][dst] - topology.loss_pct[i, j]) <= 0.0005 + 1e-9
        else:
            assert dst not in latency.get(src, {})


def test_small_topology_is_one_node_level_object():
    docs = documents.build_documents(_topology(19, zones=4))
    assert len(docs) == 1
    spec = docs[0]["spec"]
    assert spec["granularity"] == "Node" and "part" not in spec and len(spec["latency"]) == 19


@pytest.mark.django_db
def test_publish_to_the_api_server_is_schema_valid_idempotent_and_prunes_old_parts(fake_kube):
    # 200 nodes with a 96 KiB part budget exercise the same split as 1,000 nodes with 512 KiB, while
    # the fake API server validates every object against k8s/crds/networktopology.yaml.
    big = _topology(200, version=4)
    budget = 96 * 1024
    report = publish.publish(topology=big, namespace="netaware-system", budget_bytes=budget)
    assert report.parts > 1 and len(report.applied) == report.parts + 2  # parts, main, diktyo
    objects = {o["metadata"]["name"]: o for o in fake_kube.list(G, V, P, "netaware-system")}
    assert set(objects) == {"netaware", *(f"netaware-{k}" for k in range(report.parts))}
    assert all(len(json.dumps(o).encode()) <= budget + 4096 for o in objects.values())
    assert objects["netaware"]["status"]["nodeCount"] == 200
    assert objects["netaware-0"]["spec"]["part"] == {"index": 0, "total": report.parts}

    diktyo = fake_kube.get("networktopology.diktyo.x-k8s.io", V, P, "netaware", "netaware-system")
    zone_list = next(
        t for t in diktyo["spec"]["weights"][0]["topologyList"] if t["topologyKey"].endswith("zone")
    )
    origin0 = next(o for o in zone_list["originList"] if o["origin"] == "zone-0")
    assert {c["destination"]: c["networkCost"] for c in origin0["costList"]}["zone-4"] == 4

    writes = fake_kube.count("PATCH") + fake_kube.count("DELETE")
    again = publish.publish(topology=big, namespace="netaware-system", budget_bytes=budget)
    assert again.unchanged and again.applied == []
    assert fake_kube.count("PATCH") + fake_kube.count("DELETE") == writes

    small = publish.publish(
        topology=_topology(19, zones=4, version=5), namespace="netaware-system", budget_bytes=budget
    )
    assert small.parts == 0 and sorted(small.deleted) == sorted(f"netaware-{k}" for k in range(report.parts))
    remaining = fake_kube.list(G, V, P, "netaware-system")
    assert [o["metadata"]["name"] for o in remaining] == ["netaware"]
    assert remaining[0]["spec"]["granularity"] == "Node" and len(remaining[0]["spec"]["nodes"]) == 19


@pytest.mark.django_db
def test_publish_without_a_snapshot_does_nothing(fake_kube):
    report = publish.publish(namespace="netaware-system")
    assert report.skipped and fake_kube.count("PATCH") == 0


@pytest.mark.django_db
def test_publish_task_publishes_the_current_snapshot(fake_kube, settings):

    document = {
        "zones": [
            {"name": "A", "region": "testbed", "nodes": ["a1", "a2"]},
            {"name": "B", "region": "testbed", "nodes": ["b1"]},
        ],
        "regions": [{"name": "testbed", "zones": ["A", "B"]}],
        "latency": {"a1": {"a2": 0.5, "b1": 4.0}, "a2": {"a1": 0.5, "b1": 4.2}, "b1": {"a1": 4.1, "a2": 4.3}},
        "bandwidth": {
            "a1": {"a2": 900, "b1": 200},
            "a2": {"a1": 900, "b1": 210},
            "b1": {"a1": 190, "a2": 205},
        },
        "lossrate": {"a1": {"a2": 0, "b1": 0.5}, "a2": {"a1": 0, "b1": 0.4}, "b1": {"a1": 0.6, "a2": 0.5}},
    }
    snapshot = services.import_topology(document=document)
    summary = tasks.publish_network_topology()
    assert summary["version"] == snapshot.version and "netaware" in summary["applied"]
    namespace = settings.NETAWARE["KUBE_NAMESPACE"]
    published = fake_kube.get(G, V, P, "netaware", namespace)
    assert published["spec"]["granularity"] == "Node"
    assert published["spec"]["latency"]["a1"]["b1"] == 4.0
    assert published["spec"]["bandwidth"]["b1"]["a2"] == 205
    assert {n["name"]: n["zone"] for n in published["spec"]["nodes"]} == {"a1": "A", "a2": "A", "b1": "B"}
    assert published["status"]["nodeCount"] == 3
    assert published["metadata"]["annotations"][documents.VERSION_ANNOTATION] == str(snapshot.version)
    assert tasks.publish_network_topology().get("unchanged") is True


@pytest.mark.django_db
def test_publish_during_an_outage_is_retried_by_the_next_run(fake_kube):

    services.import_topology(
        document={
            "zones": [{"name": "A", "region": "r", "nodes": ["a1", "a2"]}],
            "regions": [{"name": "r", "zones": ["A"]}],
            "latency": {"a1": {"a2": 0.5}, "a2": {"a1": 0.6}},
        }
    )
    fake_kube.down()
    failed = tasks.publish_network_topology()
    assert "error" in failed
    fake_kube.up()
    assert "netaware" in tasks.publish_network_topology()["applied"]
    assert fake_kube.list(G, V, P)[0]["spec"]["latency"] == {"a1": {"a2": 0.5}, "a2": {"a1": 0.6}}
