"""A NetworkTopology import is judged by the CRD's openAPIV3Schema in k8s/crds/networktopology.yaml
(netaware_core.crdschema, strict about undeclared fields) plus a semantic step: every problem at once
with its field path, bounds only the schema states are enforced, and what the cluster holds (the
document netaware publishes) imports as well as what the API serves."""

from __future__ import annotations

import numpy as np
import pytest

from apps.topology import documents
from apps.topology.models import Node, TopologySnapshot
from apps.topology.topomath import EXTREMA_FIELDS, Topology, metric_extrema, nested_maps
from netaware_core import crdschema


def spec_schema() -> dict:
    return crdschema.crd_schemas()[(documents.API_VERSION, documents.KIND)]["properties"]["spec"]


def errors_of(document) -> dict[str, list[str]]:
    with pytest.raises(documents.TopologyDocumentError) as info:
        documents.read_import(document)
    return info.value.errors


def test_a_bound_only_the_crd_states_is_enforced():
    limit = spec_schema()["properties"]["nodes"]["items"]["properties"]["name"]["maxLength"]
    errors = errors_of({"spec": {"nodes": ["n" * (limit + 1)], "latency": {"a": {"b": 1.0}}}})
    assert list(errors) == ["spec.nodes[0].name"] and f"longer than {limit}" in errors["spec.nodes[0].name"][0]
    assert documents.read_import({"spec": {"nodes": ["n" * limit], "latency": {"a": {"b": 1.0}}}}).nodes


def test_every_structural_problem_is_reported_at_once_and_undeclared_fields_are_refused():
    errors = errors_of({"kind": "NetworkTopology", "spec": {
        "latency": {"a": {"b": -1.0}}, "lossrate": {"a": {"b": 150}}, "bandwidth": {"a": "fast"},
        "zones": [{"region": "r"}], "costs": {"zones": {"A": {"B": "cheap"}}, "perHour": 3}, "colour": "blue"}})
    assert set(errors) == {"spec.latency.a.b", "spec.lossrate.a.b", "spec.bandwidth.a", "spec.zones[0].name",
                           "spec.costs.zones.A.B", "spec.costs.perHour", "spec.colour"}, errors
    declared = sorted(spec_schema()["properties"])
    assert errors["spec.colour"] == [f"unknown field (declared: {', '.join(declared)})"]


def test_semantic_rules_follow_the_structure_with_paths_of_the_document_as_sent():
    errors = errors_of({"spec": {
        "regions": [{"name": "r1", "zones": ["A"]}, {"name": "r2", "zones": ["A"]}],
        "zones": [{"name": "A", "nodes": ["a1"]}, {"name": "B", "region": "r2", "nodes": ["a1"]}],
        "latency": {"a1": {"b1": 1.0}}, "minLatency": 5.0, "maxLatency": 1.0, "granularity": "Zone",
        "regionCosts": {"r1": {"r9": 1.0}}}})
    assert set(errors) == {"spec.regions[1].zones[0]", "spec.zones[1].nodes[0]", "spec.minLatency",
                           "spec.granularity", "spec.regionCosts.r1.r9"}, errors
    bare = errors_of({"latency": {"a1": {"b1": -1.0}}, "part": {"index": 0, "total": 2}})
    assert set(bare) == {"latency.a1.b1"}  # structure first; a bare spec's paths have no "spec."
    assert set(errors_of({"part": {"index": 0, "total": 2}, "latency": {"a": {"b": 1.0}}})) == {"part"}


def _topology() -> Topology:
    rng = np.random.default_rng(11)
    nodes = ("a1", "a2", "b1", "c1")
    latency, bandwidth, loss = (rng.uniform(0.5, 9.0, (4, 4)), rng.uniform(100, 1000, (4, 4)),
                                rng.uniform(0, 2, (4, 4)))
    for matrix in (latency, bandwidth, loss):
        np.fill_diagonal(matrix, 0.0)
    return Topology(
        nodes=nodes, zones=("A", "A", "B", "C"), regions=("r1", "r1", "r1", "r2"),
        latency_ms=latency, bandwidth_mbps=bandwidth, loss_pct=loss,
        inferred=np.zeros((4, 4), dtype=bool), stale=np.zeros((4, 4), dtype=bool),
        **dict(zip(EXTREMA_FIELDS, metric_extrema(latency, bandwidth, loss), strict=True)),
        zone_costs={("A", "B"): 2.0, ("B", "A"): 2.0}, region_costs={("r1", "r2"): 9.0, ("r2", "r1"): 9.0},
        version=3,
    )


@pytest.mark.django_db
def test_the_document_published_to_the_cluster_imports(client):
    topology = _topology()
    (published,) = documents.build_documents(topology)
    assert published["spec"]["granularity"] == "Node" and "zoneCosts" in published["spec"]
    response = client.post("/api/topology/import", data=published, content_type="application/json")
    assert response.status_code == 201, response.content
    served = client.get("/api/topology/").json()
    spec = served["spec"]
    expected = nested_maps(topology)
    for metric in ("latency", "bandwidth", "lossrate"):  # published rounded to 0.01 at most
        assert spec[metric].keys() == expected[metric].keys(), metric
        for source, row in expected[metric].items():
            assert spec[metric][source] == pytest.approx(row, abs=0.01), (metric, source)
    assert {n.name: (n.zone, n.region) for n in Node.objects.all()} == {
        "a1": ("A", "r1"), "a2": ("A", "r1"), "b1": ("B", "r1"), "c1": ("C", "r2")}
    # The published zone/region costs become the import's user-defined edge costs.
    overrides = served["status"]["costOverrides"]
    assert overrides["zones"]["A"] == {"B": 2.0} and overrides["regions"]["r1"] == {"r2": 9.0}
    assert TopologySnapshot.objects.get().source == "imported"
