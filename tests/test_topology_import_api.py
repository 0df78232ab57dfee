"""POST /api/topology/import: field-named 400s that store nothing, JSON and YAML bodies, round trip."""

from __future__ import annotations

import json

import pytest
import yaml

from apps.topology import selectors
from apps.topology.models import Node, TopologySnapshot

pytestmark = pytest.mark.django_db

GOOD = {
    "apiVersion": "netaware.io/v1alpha1",
    "kind": "NetworkTopology",
    "metadata": {"name": "static"},
    "spec": {
        "zones": [{"name": "z1", "region": "r", "nodes": ["n1", "n2"]}, {"name": "z2", "region": "r", "nodes": ["n3"]}],
        "latency": {"n1": {"n2": 0.5, "n3": 4.0}, "n2": {"n1": 0.5}, "n3": {"n1": 4.0}},
        "bandwidth": {"n1": {"n2": 1000, "n3": 100}},
        "lossrate": {"n1": {"n3": 2}},
        "costs": {"zones": {"z1": {"z2": 3}}},
    },
}


def post(client, body, *, path="/api/topology/import", content_type="application/json"):
    data = json.dumps(body) if content_type == "application/json" else body
    return client.post(path, data=data, content_type=content_type)


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"latency": {"n1": {"n2": -1}}}, "spec.latency.n1.n2", "should be greater than or equal to 0"),
        ({"latency": {"n1": {"n2": "slow"}}}, "spec.latency.n1.n2", "must be of type number"),
        ({"lossrate": {"n1": {"n2": 101}}}, "spec.lossrate.n1.n2", "should be less than or equal to 100"),
        ({"bandwidth": {"n1": [1, 2]}}, "spec.bandwidth.n1", "must be of type object"),
        ({"latency": "n1"}, "spec.latency", "must be of type object"),
        ({"latency": {"n1": {"n2": 1}}, "minLatency": 3, "maxLatency": 2}, "spec.minLatency", "must be <="),
        ({"latency": {"n1": {"n2": 1}}, "zonez": []}, "spec.zonez", "unknown field"),
        ({"zones": [{"name": "z", "nodes": ["n1", 7]}]}, "spec.zones[0].nodes[1]", "must be of type string"),
        ({"zones": [{"name": "z", "nodes": ["n1"]}], "costs": {"zones": {"z": {"q": 1}}}},
         "spec.costs.zones.z.q", "unknown zone"),
        ({"zones": [{"name": "z", "nodes": ["n1"]}, {"name": "y", "nodes": ["n1"]}]}, "spec.zones[1].nodes[0]",
         "already in zone 'z'"),
        ({}, "spec.latency", "names no nodes"),
    ],
)
def test_malformed_documents_get_400_naming_the_field_and_store_nothing(client, spec, field, message):
    response = post(client, {"kind": "NetworkTopology", "spec": spec})
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert field in errors, errors
    assert any(message in text for text in errors[field]), errors
    assert TopologySnapshot.objects.count() == 0 and Node.objects.count() == 0


def test_wrong_kind_and_non_mapping_bodies_are_400(client):
    response = post(client, {"kind": "AppGroup", "spec": {"latency": {"a": {"b": 1}}}})
    assert response.status_code == 400 and "kind" in response.json()["errors"]
    response = post(client, [1, 2])
    assert response.status_code == 400 and "(document)" in response.json()["errors"]
    response = client.post("/api/topology/import", data="latency: [unclosed", content_type="application/yaml")
    assert response.status_code == 400 and "YAML" in response.json()["detail"]
    assert TopologySnapshot.objects.count() == 0


def test_good_import_becomes_current_with_or_without_slash_and_round_trips(client):
    response = post(client, GOOD)
    assert response.status_code == 201, response.content
    doc = client.get("/api/topology/").json()
    assert doc["status"]["source"] == "imported" and doc["metadata"]["generation"] == 1
    spec = doc["spec"]
    assert spec["latency"]["n1"]["n3"] == 4.0 and spec["bandwidth"]["n1"]["n2"] == 1000.0
    # n2 -> n3 was not given: filled from the z1 -> z2 median and reported as inferred.
    assert spec["latency"]["n2"]["n3"] == 4.0 and "n3" in doc["status"]["inferred"]["n2"]
    assert (spec["minLatency"], spec["maxLatency"]) == (0.5, 4.0)
    # The user-defined cost replaces the latency-derived edge (4 ms / 0.5 ms unit = 8).
    assert spec["costs"]["zones"]["z1"]["z2"] == 3.0
    assert set(Node.objects.values_list("name", flat=True)) == {"n1", "n2", "n3"}
    assert Node.objects.get(name="n3").zone == "z2"

    # What GET serves can be imported again (trailing slash, YAML body) and yields the same maps.
    again = client.post("/api/topology/import/", data=yaml.safe_dump(doc), content_type="application/yaml")
    assert again.status_code == 201, again.content
    second = client.get("/api/topology/").json()
    assert second["metadata"]["generation"] == 2
    for key in ("latency", "bandwidth", "lossrate", "minLatency", "maxLatency", "zones", "costs"):
        assert second["spec"][key] == spec[key], key
    assert selectors.current_topology().version == 2


def test_bare_spec_import_uses_cached_node_zones(client):
    Node.objects.create(name="a", zone="za", region="r")
    Node.objects.create(name="b", zone="zb", region="r")
    response = post(client, {"latency": {"a": {"b": 2.0}}, "lossrate": {"a": {"b": 1.5}}})
    assert response.status_code == 201, response.content
    doc = response.json()
    assert doc["spec"]["lossrate"]["a"] == {"b": 1.5}
    assert doc["status"]["inferred"] == {"b": ["a"]}  # region r -> r median fills the reverse direction
    assert {z["name"] for z in doc["spec"]["zones"]} == {"za", "zb"}


def test_import_endpoint_does_not_redirect(client):
    assert client.post("/api/topology/import", data="{}", content_type="application/json").status_code == 400
    assert client.post("/api/topology/import/", data="{}", content_type="application/json").status_code == 400
