"""An AppGroup document's structure is judged by the CRD's openAPIV3Schema in k8s/crds/ (netaware_core.crdschema),
the same schema the (fake) Kubernetes API server applies: every structural error is reported at once
with its field path, rules only the schema states are enforced, and the semantic rules (selectors,
quantities, sensitivity sum, graph) follow in validators.semantic_errors."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import requests
import yaml

from apps.appgroups import documents
from netaware_core import crdschema

BOUTIQUE = yaml.safe_load((Path(__file__).resolve().parent.parent / "scenarios" / "online-boutique-appgroup.yaml")
                          .read_text())


def broken() -> dict:
    """Five structural errors in one document."""
    doc = copy.deepcopy(BOUTIQUE)
    workloads = doc["spec"]["workloads"]
    doc["spec"]["topologySortingAlgorithm"] = "Bogo"
    workloads[0]["weight"] = "heavy"
    workloads[1]["name"] = "Not Valid!"
    del workloads[2]["selector"]
    workloads[3]["replicas"] = 0
    return doc


EXPECTED = {
    "spec.topologySortingAlgorithm": "supported values",
    "spec.workloads[0].weight": "must be of type number",
    "spec.workloads[1].name": "should match",
    "spec.workloads[2].selector": "Required value",
    "spec.workloads[3].replicas": "greater than or equal to 1",
}


def test_every_structural_error_is_reported_at_once_with_its_path():
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(broken())
    errors = info.value.errors
    assert set(errors) == set(EXPECTED), errors
    for path, fragment in EXPECTED.items():
        assert fragment in errors[path][0], (path, errors[path])


def test_the_schema_in_k8s_crds_is_the_source():
    schema = crdschema.crd_schemas()[(documents.API_VERSION, documents.APPGROUP_KIND)]
    labels = schema["properties"]["spec"]["properties"]["workloads"]["items"]["properties"]["selector"][
        "properties"]["matchLabels"]
    doc = copy.deepcopy(BOUTIQUE)
    # A bound only the CRD states (no hand-written check has it): one label more than maxProperties.
    doc["spec"]["workloads"][0]["selector"] = {
        "matchLabels": {f"k{i}": "v" for i in range(labels["maxProperties"] + 1)}}
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(doc)
    assert list(info.value.errors) == ["spec.workloads[0].selector.matchLabels"]
    assert f"at most {labels['maxProperties']}" in info.value.message


def test_semantic_rules_follow_the_structure_and_string_selectors_stay_accepted():
    doc = copy.deepcopy(BOUTIQUE)
    doc["spec"]["workloads"][0]["selector"] = "app=frontend,tier in (web)"
    spec = documents.spec_from_document(doc)
    assert spec.workloads[0].selector.match_labels == {"app": "frontend"}
    doc["spec"]["workloads"][1]["selector"] = "app=a,app=b"
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(doc)
    assert info.value.field_path == "spec.workloads[1].selector" and "conflicts" in info.value.message
    doc = copy.deepcopy(BOUTIQUE)
    doc["spec"]["workloads"][0]["dependencies"][0]["metrics"] = {"latency": 0, "bandwidth": 0}  # a CEL rule
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(doc)
    assert info.value.field_path == "spec.workloads[0].dependencies[0].metrics"


def test_the_fake_api_server_refuses_the_same_fields(fake_kube):
    doc = broken()
    doc["metadata"]["namespace"] = "default"
    response = requests.post(f"{fake_kube.url}/apis/netaware.io/v1alpha1/namespaces/default/appgroups", json=doc,
                             timeout=10)
    assert response.status_code == 422, response.text[:300]
    fields = {cause["field"] for cause in response.json()["details"]["causes"]}
    assert fields == set(EXPECTED)
