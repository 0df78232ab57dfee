"""Online Boutique: import -> edit via the API -> export (ours and diktyo) -> re-import equal; 400s name fields."""

import copy
import json
from pathlib import Path

import pytest
import yaml

from apps.appgroups import documents, selectors, services
from apps.appgroups.models import AppGroup, Placement

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
BOUTIQUE_YAML = (ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text()


def import_yaml(client, body, path="/api/appgroups/import"):
    return client.post(path, data=body, content_type="application/yaml")


@pytest.fixture
def boutique(client):
    response = import_yaml(client, BOUTIQUE_YAML)
    assert response.status_code == 201, response.content
    return response.json()


def spec_of(pk):
    return selectors.appgroup_spec(appgroup=AppGroup.objects.get(pk=pk))


def test_import_is_an_upsert_with_or_without_slash(client, boutique):
    again = import_yaml(client, BOUTIQUE_YAML, "/api/appgroups/import/")
    assert again.status_code == 200
    assert again.json()["id"] == boutique["id"]
    as_json = client.post(
        "/api/appgroups/import", data=yaml.safe_load(BOUTIQUE_YAML), content_type="application/json"
    )
    assert as_json.status_code == 200
    assert AppGroup.objects.count() == 1
    spec = spec_of(boutique["id"])
    assert len(spec.workloads) == 11
    frontend = spec.workload("frontend")
    assert (
        frontend.weight == 1.0
        and frontend.cpu_request_millicores == 100
        and frontend.memory_request_bytes == 64 * 2**20
    )
    assert [d.target for d in frontend.dependencies] == [
        "recommendation",
        "productcatalog",
        "checkout",
        "currency",
        "cart",
        "shipping",
        "ad",
    ]
    checkout = spec.workload("checkout")
    assert checkout.weight == 0.9
    assert checkout.dependencies[0].target == "payment"
    assert (checkout.dependencies[0].sensitivity.latency, checkout.dependencies[0].sensitivity.lossrate) == (
        0.4,
        0.3,
    )
    assert spec.workload("redis-cart").memory_request_bytes == 200 * 2**20


def test_edit_export_and_reimport_round_trip(client, boutique):
    document = client.get(f"/api/appgroups/{boutique['id']}").json()
    assert client.get(f"/api/appgroups/{boutique['id']}/").status_code == 200
    # Edit: heavier frontend, a new dependency with KEP fields, and an algorithm change.
    document["topology_sorting_algorithm"] = "AlternateKahn"
    assert document["topology_mode"] == "soft"  # the default
    document["topology_mode"] = "zone"
    assert document["rebalance_mode"] == "off"  # the default
    document["rebalance_mode"] = "dry-run"
    document["description"] = "edited"
    for workload in document["workloads"]:
        if workload["name"] == "frontend":
            workload["weight"] = 1.5
        if workload["name"] == "ad":
            workload["dependencies"] = [
                {
                    "target": "currency",
                    "latency": 0.5,
                    "bandwidth": 0.5,
                    "lossrate": 0,
                    "max_network_cost": 40,
                    "min_bandwidth": "100Mi",
                }
            ]
            workload["selector"] = "app=adservice,tier in (backend)"
    response = client.put(f"/api/appgroups/{boutique['id']}", data=document, content_type="application/json")
    assert response.status_code == 200, response.content
    edited = spec_of(boutique["id"])
    assert edited.topology_sorting_algorithm == "AlternateKahn" and edited.topology_mode == "zone"
    assert edited.rebalance_mode == "dry-run"
    assert edited.workload("frontend").weight == 1.5
    ad_dep = edited.workload("ad").dependencies[0]
    assert (ad_dep.target, ad_dep.max_network_cost, ad_dep.min_bandwidth_bps) == ("currency", 40, 100 * 2**20)
    assert edited.workload("ad").selector.match_expressions == (("tier", "In", ("backend",)),)

    ours = client.get(f"/api/appgroups/{boutique['id']}/export?format=yaml&flavor=netaware")
    assert ours.status_code == 200 and ours["Content-Type"].startswith("application/yaml")
    ours_doc = yaml.safe_load(ours.content)
    assert ours_doc["apiVersion"] == "netaware.io/v1alpha1"
    assert ours_doc["metadata"]["annotations"]["netaware.io/description"] == "edited"
    assert ours_doc["spec"]["topologyMode"] == "zone" and ours_doc["spec"]["rebalanceMode"] == "dry-run"
    diktyo = client.get(f"/api/appgroups/{boutique['id']}/export?format=json&flavor=diktyo")
    assert diktyo.status_code == 200 and diktyo["Content-Type"].startswith("application/json")
    diktyo_doc = json.loads(diktyo.content)
    assert diktyo_doc["apiVersion"] == "appgroup.diktyo.x-k8s.io/v1alpha1"
    assert diktyo_doc["spec"]["numMembers"] == 11
    ad_entry = next(w for w in diktyo_doc["spec"]["workloads"] if w["workload"]["selector"] == "ad")
    assert ad_entry["dependencies"][0] == {
        "workload": {
            "kind": "Deployment",
            "name": "currencyservice",
            "selector": "currency",
            "apiVersion": "apps/v1",
            "namespace": "default",
        },
        "minBandwidth": "100Mi",
        "maxNetworkCost": 40,
    }

    # Re-import each export from scratch: the stored graph is the edited one again.
    for body, content_type in ((ours.content, "application/yaml"), (diktyo.content, "application/json")):
        AppGroup.objects.all().delete()
        response = client.post("/api/appgroups/import", data=body, content_type=content_type)
        assert response.status_code == 201, response.content
        assert spec_of(response.json()["id"]) == edited


def test_diktyo_import_without_extras_uses_defaults(client):
    doc = yaml.safe_load((ROOT / "k8s" / "examples" / "appgroup-diktyo.yaml").read_text())
    del doc["metadata"]["annotations"]
    response = client.post("/api/appgroups/import", data=doc, content_type="application/json")
    assert response.status_code == 201, response.content
    spec = spec_of(response.json()["id"])
    frontend = spec.workload("frontend")
    assert frontend.selector.match_labels == {documents.DIKTYO_WORKLOAD_LABEL: "frontend"}
    assert frontend.controller_name == "frontend" and frontend.weight == 1.0
    assert frontend.dependencies[0].sensitivity == documents.DEFAULT_SENSITIVITY


def put_error(client, pk, mutate):
    document = client.get(f"/api/appgroups/{pk}").json()
    mutate(document)
    response = client.put(f"/api/appgroups/{pk}", data=document, content_type="application/json")
    assert response.status_code == 400, response.content
    return response.json()["errors"]


def test_bad_documents_get_field_paths_and_change_nothing(client, boutique):
    pk = boutique["id"]
    before = spec_of(pk)

    def unknown_target(doc):
        doc["workloads"][1]["dependencies"] = [
            {"target": "nowhere", "latency": 1, "bandwidth": 0, "lossrate": 0}
        ]

    assert "workloads[1].dependencies[0].target" in put_error(client, pk, unknown_target)

    def zero_sum(doc):
        doc["workloads"][0]["dependencies"][2].update(latency=0, bandwidth=0, lossrate=0)

    errors = put_error(client, pk, zero_sum)
    assert "positive sum" in " ".join(errors["workloads[0].dependencies[2]"])

    def self_dep(doc):
        doc["workloads"][3]["dependencies"] = [
            {"target": doc["workloads"][3]["name"], "latency": 1, "bandwidth": 0, "lossrate": 0}
        ]

    assert "workloads[3].dependencies[0].target" in put_error(client, pk, self_dep)

    def bad_selector(doc):
        doc["workloads"][2]["selector"] = {
            "matchExpressions": [{"key": "app", "operator": "In", "values": []}]
        }

    errors = put_error(client, pk, bad_selector)
    assert "workloads[2].selector.matchExpressions[0].values" in errors

    def wrong_types(doc):
        doc["workloads"][0]["dependencies"][0]["latency"] = "very"
        doc["workloads"][4]["weight"] = -1

    errors = put_error(client, pk, wrong_types)
    assert "workloads[0].dependencies[0].latency" in errors

    def negative_weight(doc):
        doc["workloads"][4]["weight"] = -1

    assert "workloads[4].weight" in put_error(client, pk, negative_weight)

    def duplicate(doc):
        doc["workloads"][5]["name"] = doc["workloads"][6]["name"]

    assert "workloads[6].name" in put_error(client, pk, duplicate)

    def bad_quantity(doc):
        doc["workloads"][0]["dependencies"][0]["min_bandwidth"] = "lots"
        doc["workloads"][1]["cpu_request"] = "1x"

    errors = put_error(client, pk, bad_quantity)
    assert {"workloads[0].dependencies[0].min_bandwidth", "workloads[1].cpu_request"} <= set(errors)
    def bad_mode(doc):
        doc["topology_mode"] = "galaxy"

    assert "topology_mode" in put_error(client, pk, bad_mode)

    def bad_rebalance_mode(doc):
        doc["rebalance_mode"] = "sometimes"

    assert "rebalance_mode" in put_error(client, pk, bad_rebalance_mode)
    assert spec_of(pk) == before


def test_import_errors_name_the_resource_field(client):
    doc = yaml.safe_load(BOUTIQUE_YAML)
    bad = copy.deepcopy(doc)
    bad["spec"]["workloads"][2]["dependencies"][0]["metrics"]["latency"] = -1
    response = client.post("/api/appgroups/import", data=bad, content_type="application/json")
    assert response.status_code == 400
    assert "spec.workloads[2].dependencies[0].metrics.latency" in response.json()["errors"]
    bad = copy.deepcopy(doc)
    bad["spec"]["workloads"][0]["dependencies"][0]["name"] = "ghost"
    response = client.post("/api/appgroups/import", data=bad, content_type="application/json")
    assert "spec.workloads[0].dependencies[0].name" in response.json()["errors"]
    bad = copy.deepcopy(doc)
    bad["spec"]["topologyMode"] = "galaxy"
    response = client.post("/api/appgroups/import", data=bad, content_type="application/json")
    assert response.status_code == 400 and "spec.topologyMode" in response.json()["errors"]
    bad = copy.deepcopy(doc)
    bad["spec"]["rebalanceMode"] = "sometimes"
    response = client.post("/api/appgroups/import", data=bad, content_type="application/json")
    assert response.status_code == 400 and "spec.rebalanceMode" in response.json()["errors"]
    response = import_yaml(client, "apiVersion: v1\nkind: AppGroup\n")
    assert response.status_code == 400 and "apiVersion" in response.json()["errors"]
    response = import_yaml(client, "spec: [unclosed")
    assert response.status_code == 400
    assert AppGroup.objects.count() == 0


def test_create_via_api_with_string_selector_and_list_filters(client):
    body = {
        "namespace": "shop",
        "name": "mini",
        "workloads": [
            {
                "name": "web",
                "selector": "app=web",
                "dependencies": [
                    {"target": "db", "latency": 1, "bandwidth": 0, "lossrate": 0, "min_bandwidth": "10M"}
                ],
            },
            {"name": "db", "selector": {"matchLabels": {"app": "db"}}, "weight": 0.5},
        ],
    }
    response = client.post("/api/appgroups/", data=body, content_type="application/json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["workloads"][0]["selector"] == {"matchLabels": {"app": "web"}}
    assert created["workloads"][0]["dependencies"][0]["min_bandwidth_bps"] == 1e7
    duplicate = client.post("/api/appgroups", data=body, content_type="application/json")
    assert duplicate.status_code == 400
    assert client.get("/api/appgroups?namespace=shop").json()["count"] == 1
    assert client.get("/api/appgroups?namespace=other").json()["count"] == 0
    assert client.get("/api/appgroups/?name=mini").json()["results"][0]["id"] == created["id"]
    assert client.delete(f"/api/appgroups/{created['id']}").status_code == 204


def test_order_and_placements_endpoints(client, boutique):
    pk = boutique["id"]
    expected = documents.topology_order(spec_of(pk)).order
    order = client.get(f"/api/appgroups/{pk}/order/").json()
    assert order["algorithm"] == "KahnSort" and order["order"] == list(expected) and not order["cyclic"]
    assert order["order"][0] == "frontend"
    alternate = client.get(f"/api/appgroups/{pk}/order?algorithm=AlternateKahn").json()
    assert alternate["order"][:2] == [expected[0], expected[-1]]
    assert client.get(f"/api/appgroups/{pk}/order?algorithm=Bogus").status_code == 400
    assert client.get(f"/api/appgroups/{pk}/export?format=xml").status_code == 400
    assert client.get(f"/api/appgroups/{pk}/export?flavor=other").status_code == 400

    services.record_placement(
        pod_namespace="default",
        pod_name="frontend-1",
        pod_uid="u1",
        node_name="n1402",
        labels={"app": "frontend"},
        source="extender",
    )
    page = client.get(f"/api/appgroups/{pk}/placements/").json()
    assert page["count"] == 1, page  # paginated as the schema says (schemathesis found a bare list)
    assert [(p["pod_name"], p["node_name"], p["workload"]) for p in page["results"]] == [
        ("frontend-1", "n1402", "frontend")
    ]
    # Placements survive an edit of the graph through the API.
    document = client.get(f"/api/appgroups/{pk}").json()
    document["workloads"][0]["weight"] = 0.3
    assert (
        client.put(f"/api/appgroups/{pk}", data=document, content_type="application/json").status_code == 200
    )
    assert Placement.objects.filter(appgroup_id=pk).count() == 1


def test_schema_lists_appgroup_endpoints(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = (
        json.loads(response.content)["paths"]
        if response["Content-Type"].startswith("application/json")
        else yaml.safe_load(response.content)["paths"]
    )
    joined = " ".join(paths)
    for fragment in ("/api/appgroups/import", "/export", "/placements", "/order", "/api/appgroups/{id}"):
        assert fragment in joined
