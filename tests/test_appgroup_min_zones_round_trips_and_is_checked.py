"""``spec.minZones`` and a workload's ``minZones`` (high availability): absent means 1 (today's documents and
hashes unchanged), they round-trip through both document flavours, the database and the API, and a minimum
that the replicas cannot reach is refused naming the field, by the validator and by the database."""

import copy
from pathlib import Path

import pytest
import yaml
from django.db import IntegrityError, transaction

from apps.appgroups import documents, selectors
from apps.appgroups.models import AppGroup, Workload

ROOT = Path(__file__).resolve().parent.parent
BOUTIQUE = yaml.safe_load((ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text())


def highly_available(doc, min_zones=2, *, replicas=2, exempt=()):
    """The document with ``spec.minZones`` and every workload at ``replicas``, ``exempt`` ones at minZones 1."""
    doc = copy.deepcopy(doc)
    doc["spec"]["minZones"] = min_zones
    for workload in doc["spec"]["workloads"]:
        workload["replicas"] = replicas
        if workload["name"] in exempt:
            workload["minZones"] = 1
    return doc


def test_a_document_without_min_zones_reads_as_one_and_writes_back_unchanged():
    spec = documents.spec_from_document(BOUTIQUE)
    assert spec.min_zones == 1 and {w.min_zones for w in spec.workloads} == {None}
    written = documents.document_from_spec(spec)
    assert "minZones" not in written["spec"] and not any("minZones" in w for w in written["spec"]["workloads"])
    explicit = copy.deepcopy(BOUTIQUE)
    explicit["spec"]["minZones"] = 1
    assert documents.spec_hash(documents.spec_from_document(explicit)) == documents.spec_hash(spec)


@pytest.mark.parametrize("flavor", ["netaware", "diktyo"])
def test_min_zones_round_trip_through_both_flavours(flavor):
    doc = highly_available(BOUTIQUE, 2, exempt=("ad",))
    doc["spec"]["workloads"][0]["replicas"] = 3
    doc["spec"]["workloads"][0]["minZones"] = 3
    spec = documents.spec_from_document(doc)
    assert spec.min_zones == 2
    assert spec.min_zones_of(spec.workload("frontend")) == 3 and spec.min_zones_of(spec.workload("ad")) == 1
    assert spec.min_zones_of(spec.workload("cart")) == 2
    back = documents.spec_from_document(documents.document_from_spec(spec, flavor=flavor))
    assert back.min_zones == 2 and [w.min_zones for w in back.workloads] == [w.min_zones for w in spec.workloads]


def test_more_zones_than_replicas_is_refused_naming_each_field():
    doc = highly_available(BOUTIQUE, 2, exempt=("ad",))
    doc["spec"]["workloads"][1]["replicas"] = 1  # recommendation: inherits 2 zones with one replica
    doc["spec"]["workloads"][2]["minZones"] = 3  # productcatalog: 3 zones with 2 replicas
    with pytest.raises(documents.DocumentError) as caught:
        documents.spec_from_document(doc)
    assert sorted(caught.value.errors) == ["spec.workloads[1].replicas", "spec.workloads[2].minZones"]
    assert "set this workload's minZones to 1" in caught.value.errors["spec.workloads[1].replicas"][0]
    doc["spec"]["minZones"] = 0
    with pytest.raises(documents.DocumentError) as caught:
        documents.spec_from_document(doc)
    assert "spec.minZones" in caught.value.errors


@pytest.mark.django_db
def test_the_api_stores_and_returns_min_zones_and_names_a_bad_one(client):
    created = client.post("/api/appgroups/import", data=yaml.safe_dump(highly_available(BOUTIQUE, exempt=("ad",))),
                          content_type="application/yaml")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    row = AppGroup.objects.get(pk=pk)
    assert row.min_zones == 2 and Workload.objects.get(appgroup=row, name="ad").min_zones == 1
    spec = selectors.appgroup_spec(appgroup=row)
    assert spec.min_zones == 2 and spec.min_zones_of(spec.workload("ad")) == 1
    document = client.get(f"/api/appgroups/{pk}").json()
    assert document["min_zones"] == 2
    exported = yaml.safe_load(client.get(f"/api/appgroups/{pk}/export?format=yaml").content)
    assert exported["spec"]["minZones"] == 2
    document["min_zones"] = 3
    response = client.put(f"/api/appgroups/{pk}", data=document, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "workloads[0].replicas" in response.json()["errors"]
    assert AppGroup.objects.get(pk=pk).min_zones == 2


@pytest.mark.django_db
def test_the_database_refuses_a_workload_spread_beyond_its_replicas():
    group = AppGroup.objects.create(namespace="default", name="ha")
    with pytest.raises(IntegrityError), transaction.atomic():
        Workload.objects.create(appgroup=group, name="one", selector={"matchLabels": {"app": "one"}}, replicas=1,
                                min_zones=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        AppGroup.objects.filter(pk=group.pk).update(min_zones=0)
