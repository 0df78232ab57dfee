"""Node cache: scenario loading, metrics upserts that never clobber, /api/nodes/ filters, schema, admin."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from apps.topology import services
from apps.topology.models import Node

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper-testbed.yaml"

pytestmark = pytest.mark.django_db


def test_nodes_api_lists_the_scenario_nodes_and_filters_by_zone(client):
    assert services.load_nodes_from_scenario(scenario=SCENARIO) == 19
    services.upsert_node(name="n1402", zone="A", region="testbed", address="10.0.0.2", source="cluster")
    assert Node.objects.get(name="n1402").allocatable_cpu_millicores == 4000  # None keeps allocatable
    nodes = client.get("/api/nodes/").json()
    assert isinstance(nodes, list) and len(nodes) == 19
    first = nodes[0]
    assert first["name"] == "n1402" and first["address"] == "10.0.0.2"
    assert first["allocatable"] == {"cpu_millicores": 4000, "memory_bytes": 8 * 2**30}
    assert first["labels"]["topology.kubernetes.io/zone"] == "A"  # labels kept when not given
    services.load_nodes_from_scenario(scenario=SCENARIO)  # reloading keeps the known address
    assert client.get("/api/nodes/", {"name": "n1402"}).json()[0]["address"] == "10.0.0.2"
    far = client.get("/api/nodes/", {"zone": "FAR"}).json()
    assert [n["name"] for n in far] == ["n1417", "n1418", "n1419", "n1420"]
    assert client.get("/api/nodes/", {"region": "elsewhere"}).json() == []


def test_metrics_upsert_creates_new_nodes_and_never_blanks_known_zones():
    services.upsert_node(name="n1", zone="A", region="r1", source="cluster")
    changed = services.upsert_nodes_from_metrics(nodes=[("n1", "", ""), ("n2", "B", "r1"), ("n1", "", "")])
    assert changed == 1
    assert Node.objects.get(name="n1").zone == "A" and Node.objects.get(name="n1").source == "cluster"
    assert Node.objects.get(name="n2").source == "metrics"
    assert services.upsert_nodes_from_metrics(nodes=[("n1", "C", "r1")]) == 1
    assert Node.objects.get(name="n1").zone == "C"
    assert services.upsert_nodes_from_metrics(nodes=[("n1", "C", "r1")]) == 0


def test_upsert_node_rejects_bad_input_naming_the_field():
    with pytest.raises(ValidationError) as err:
        services.upsert_node(name="n1", address="not-an-ip", source="cluster")
    assert "address" in err.value.message_dict
    with pytest.raises(ValidationError) as err:
        services.upsert_node(name="n1", source="carrier-pigeon")
    assert "source" in err.value.message_dict
    assert Node.objects.count() == 0


def test_topology_endpoints_are_in_the_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    for path in ("/api/topology/", "/api/topology/import", "/api/topology/snapshots/",
                 "/api/topology/snapshots/{version}/", "/api/nodes/"):
        assert path in schema["paths"], path
    assert "post" in schema["paths"]["/api/topology/import"]


def test_admin_pages_render(admin_client):
    services.load_nodes_from_scenario(scenario=SCENARIO)
    assert admin_client.get("/admin/topology/node/").status_code == 200
    assert admin_client.get("/admin/topology/node/?zone=A").status_code == 200
    assert admin_client.get("/admin/topology/topologysnapshot/").status_code == 200
    services.rebuild_topology()
    from apps.topology.models import TopologySnapshot

    snap = TopologySnapshot.objects.get()
    page = admin_client.get(f"/admin/topology/topologysnapshot/{snap.pk}/change/")
    assert page.status_code == 200 and b"19 nodes" in page.content
