"""The optional per-dependency ``weight``: absent means 1 (today's documents and hashes unchanged), it
round-trips through both document flavours, the database and the API, and a bad one is refused naming its field."""

import copy
from pathlib import Path

import pytest
import yaml

from apps.appgroups import documents, selectors
from apps.appgroups.models import AppGroup, Dependency

ROOT = Path(__file__).resolve().parent.parent
BOUTIQUE_YAML = (ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text()
BOUTIQUE = yaml.safe_load(BOUTIQUE_YAML)


def weighted(doc, weight, *, workload=0, dependency=1):
    doc = copy.deepcopy(doc)
    doc["spec"]["workloads"][workload]["dependencies"][dependency]["weight"] = weight
    return doc


def test_a_document_without_weights_reads_as_weight_one_and_writes_back_unchanged():
    spec = documents.spec_from_document(BOUTIQUE)
    assert {dep.weight for w in spec.workloads for dep in w.dependencies} == {1.0}
    written = documents.document_from_spec(spec)
    assert not any("weight" in dep for w in written["spec"]["workloads"] for dep in w.get("dependencies", []))
    heavy = documents.spec_from_document(weighted(BOUTIQUE, 1))  # an explicit 1 is the default
    assert heavy == spec and documents.spec_hash(heavy) == documents.spec_hash(spec)


@pytest.mark.parametrize("flavor", ["netaware", "diktyo"])
def test_weights_round_trip_through_both_flavours(flavor):
    spec = documents.spec_from_document(weighted(weighted(BOUTIQUE, 7.5), 0.25, workload=2, dependency=0))
    first = spec.workloads[0].dependencies[1]
    assert first.weight == 7.5 and spec.workloads[2].dependencies[0].weight == 0.25
    assert documents.spec_hash(spec) != documents.spec_hash(documents.spec_from_document(BOUTIQUE))
    assert documents.spec_from_document(documents.document_from_spec(spec, flavor=flavor)) == spec


@pytest.mark.parametrize(("weight", "message"), [(0, "greater than 0"), (-2, "greater than or equal to 0"),
                                                 ("heavy", "must be of type number")])
def test_a_bad_weight_is_refused_naming_its_field(weight, message):
    with pytest.raises(documents.DocumentError) as caught:
        documents.spec_from_document(weighted(BOUTIQUE, weight))
    assert list(caught.value.errors) == ["spec.workloads[0].dependencies[1].weight"]
    assert message in " ".join(caught.value.errors["spec.workloads[0].dependencies[1].weight"])


def test_a_bad_weight_in_the_diktyo_extras_names_the_annotation():
    spec = documents.spec_from_document(weighted(BOUTIQUE, 3))
    doc = documents.document_from_spec(spec, flavor="diktyo")
    annotations = doc["metadata"]["annotations"]
    assert '"dependencyWeights":{"productcatalog":3.0}' in annotations[documents.EXTRAS_ANNOTATION]
    annotations[documents.EXTRAS_ANNOTATION] = annotations[documents.EXTRAS_ANNOTATION].replace(
        '"productcatalog":3.0}', '"productcatalog":0}')
    with pytest.raises(documents.DocumentError) as caught:
        documents.spec_from_document(doc)
    assert list(caught.value.errors) == [
        f"metadata.annotations[{documents.EXTRAS_ANNOTATION}].frontend.dependencyWeights.productcatalog"]


@pytest.mark.django_db
def test_the_api_stores_and_returns_weights_and_names_a_bad_one(client):
    created = client.post("/api/appgroups/import", data=yaml.safe_dump(weighted(BOUTIQUE, 4)),
                          content_type="application/yaml")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    stored = Dependency.objects.get(appgroup_id=pk, source__name="frontend", target__name="productcatalog")
    assert stored.weight == 4.0
    assert selectors.appgroup_spec(appgroup=AppGroup.objects.get(pk=pk)).workloads[0].dependencies[1].weight == 4.0
    document = client.get(f"/api/appgroups/{pk}").json()
    assert [d["weight"] for d in document["workloads"][0]["dependencies"]][:3] == [1.0, 4.0, 1.0]
    exported = yaml.safe_load(client.get(f"/api/appgroups/{pk}/export?format=yaml").content)
    assert exported["spec"]["workloads"][0]["dependencies"][1]["weight"] == 4.0
    document["workloads"][0]["dependencies"][2]["weight"] = 0
    response = client.put(f"/api/appgroups/{pk}", data=document, content_type="application/json")
    assert response.status_code == 400, response.content
    assert list(response.json()["errors"]) == ["workloads[0].dependencies[2].weight"]
    assert Dependency.objects.get(pk=stored.pk).weight == 4.0
