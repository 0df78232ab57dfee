"""AppGroup documents <-> AppGroupSpec (ours and scheduler-plugins'), quantities, and field-named errors."""

import copy
import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from apps.appgroups import documents
from apps.appgroups.choices import RebalanceMode, TopologyMode
from apps.appgroups.graph import REBALANCE_MODES, TOPOLOGY_MODES, LabelSelector
from netaware_core import quantity
from tests.support.scoring_fixtures import pod_labels

ROOT = Path(__file__).resolve().parent.parent
BOUTIQUE = yaml.safe_load((ROOT / "scenarios" / "online-boutique-appgroup.yaml").read_text())

TABLE_4 = {  # service: (importance, {dependency: (latency, bandwidth, lossrate)})
    "frontend": (
        1.0,
        {
            "recommendation": (0.6, 0.3, 0.1),
            "productcatalog": (0.7, 0.2, 0.1),
            "checkout": (0.6, 0.3, 0.1),
            "currency": (0.4, 0.4, 0.2),
            "cart": (0.5, 0.4, 0.1),
            "shipping": (0.4, 0.3, 0.3),
            "ad": (0.7, 0.2, 0.1),
        },
    ),
    "recommendation": (0.8, {"productcatalog": (0.7, 0.2, 0.1)}),
    "checkout": (
        0.9,
        {
            "payment": (0.4, 0.3, 0.3),
            "email": (0.4, 0.3, 0.3),
            "shipping": (0.5, 0.3, 0.2),
            "currency": (0.4, 0.3, 0.2),
            "cart": (0.4, 0.3, 0.2),
            "productcatalog": (0.7, 0.2, 0.1),
        },
    ),
    "cart": (0.8, {"redis-cart": (0.5, 0.4, 0.1)}),
    "ad": (0.4, {}),
    "productcatalog": (0.6, {}),
    "currency": (0.8, {}),
    "payment": (0.8, {}),
    "shipping": (0.8, {}),
    "email": (0.7, {}),
    "redis-cart": (0.7, {}),
}


def test_boutique_scenario_is_table_4():
    spec = documents.spec_from_document(BOUTIQUE)
    assert {w.name for w in spec.workloads} == set(TABLE_4)
    for workload in spec.workloads:
        weight, deps = TABLE_4[workload.name]
        assert workload.weight == weight
        # Selectors are upstream's pod labels (app=cartservice for the paper's "cart"), see
        # tests/test_appgroup_boutique_selectors_match_upstream_pods.py.
        assert workload.selector == LabelSelector(pod_labels(workload.name))
        assert workload.replicas == 1
        assert {
            d.target: (d.sensitivity.latency, d.sensitivity.bandwidth, d.sensitivity.lossrate)
            for d in workload.dependencies
        } == deps
    assert spec.workload("recommendation").memory_request_bytes == 220 * 2**20
    assert spec.workload("ad").cpu_request_millicores == 200
    assert spec.workload("redis-cart").cpu_request_millicores == 70


@pytest.mark.parametrize("flavor", ["netaware", "diktyo"])
@pytest.mark.parametrize("mode", ["soft", "zone", "region"])
def test_round_trip_both_flavors(flavor, mode):
    spec = replace(documents.spec_from_document(BOUTIQUE), topology_mode=mode)
    document = documents.document_from_spec(spec, flavor=flavor)
    assert documents.spec_from_document(yaml.safe_load(yaml.safe_dump(document))) == spec
    assert documents.spec_hash(documents.spec_from_document(document)) == documents.spec_hash(spec)
    if flavor == "netaware":  # written even when soft: the API server's CRD default puts it in the cluster's copy
        assert document["spec"]["topologyMode"] == mode


def test_topology_mode_has_one_set_of_values_and_defaults_to_soft():
    crd = yaml.safe_load((ROOT / "k8s" / "crds" / "appgroup.yaml").read_text())
    field = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["topologyMode"]
    assert tuple(field["enum"]) == TOPOLOGY_MODES == tuple(TopologyMode.values) and field["default"] == "soft"
    assert documents.spec_from_document(BOUTIQUE).topology_mode == "soft"
    diktyo = documents.document_from_spec(
        replace(documents.spec_from_document(BOUTIQUE), topology_mode="zone"), flavor="diktyo")
    extras = json.loads(diktyo["metadata"]["annotations"][documents.EXTRAS_ANNOTATION])
    extras["topologyMode"] = "galaxy"
    diktyo["metadata"]["annotations"][documents.EXTRAS_ANNOTATION] = json.dumps(extras)
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(diktyo)
    assert info.value.field_path == f"metadata.annotations[{documents.EXTRAS_ANNOTATION}].topologyMode"


@pytest.mark.parametrize("flavor", ["netaware", "diktyo"])
@pytest.mark.parametrize("mode", ["off", "dry-run", "on"])
def test_rebalance_mode_round_trips_in_both_flavors_and_off_leaves_the_hash_alone(flavor, mode):
    base = documents.spec_from_document(BOUTIQUE)
    spec = replace(base, rebalance_mode=mode)
    document = documents.document_from_spec(spec, flavor=flavor)
    assert documents.spec_from_document(yaml.safe_load(yaml.safe_dump(document))) == spec
    # off is the absent field: AppGroups stored before the field existed keep their hash (no resync)
    assert (documents.spec_hash(spec) == documents.spec_hash(base)) == (mode == "off")


def test_rebalance_mode_has_one_set_of_values_and_a_bad_one_is_named():
    crd = yaml.safe_load((ROOT / "k8s" / "crds" / "appgroup.yaml").read_text())
    field = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rebalanceMode"]
    assert tuple(field["enum"]) == REBALANCE_MODES == tuple(RebalanceMode.values) and "default" not in field
    bad = copy.deepcopy(BOUTIQUE)
    bad["spec"]["rebalanceMode"] = "sometimes"
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(bad)
    assert info.value.field_path == "spec.rebalanceMode"
    diktyo = documents.document_from_spec(replace(documents.spec_from_document(BOUTIQUE), rebalance_mode="on"),
                                          flavor="diktyo")
    extras = json.loads(diktyo["metadata"]["annotations"][documents.EXTRAS_ANNOTATION])
    extras["rebalanceMode"] = "sometimes"
    diktyo["metadata"]["annotations"][documents.EXTRAS_ANNOTATION] = json.dumps(extras)
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(diktyo)
    assert info.value.field_path == f"metadata.annotations[{documents.EXTRAS_ANNOTATION}].rebalanceMode"


def test_paper_string_selector_and_defaults():
    doc = {
        "apiVersion": "netaware.io/v1alpha1",
        "kind": "AppGroup",
        "metadata": {"name": "p"},
        "spec": {
            "workloads": [
                {
                    "name": "frontend",
                    "selector": "app=frontend",
                    "weight": 2.0,
                    "dependencies": [
                        {"name": "checkout", "metrics": {"latency": 0.7, "bandwidth": 0.2, "lossrate": 0.1}}
                    ],
                },
                {"name": "checkout", "selector": "app=checkout"},
            ]
        },
    }
    spec = documents.spec_from_document(doc)
    assert spec.namespace == "default" and spec.topology_sorting_algorithm == "KahnSort"
    assert spec.workload("frontend").selector.match_labels == {"app": "frontend"}
    assert spec.workload("checkout").weight == 1.0


def mutated(mutate):
    doc = copy.deepcopy(BOUTIQUE)
    mutate(doc)
    return doc


@pytest.mark.parametrize(
    "mutate,path",
    [
        (
            lambda d: d["spec"]["workloads"][2]["dependencies"][0]["metrics"].__setitem__("latency", -1),
            "spec.workloads[2].dependencies[0].metrics.latency",
        ),
        (
            lambda d: d["spec"]["workloads"][2]["dependencies"][0].__setitem__("metrics", {"latency": 0}),
            "spec.workloads[2].dependencies[0].metrics",
        ),
        (
            lambda d: d["spec"]["workloads"][0]["dependencies"][1].__setitem__("name", "nowhere"),
            "spec.workloads[0].dependencies[1].name",
        ),
        (
            lambda d: d["spec"]["workloads"][3]["dependencies"][0].__setitem__("name", "cart"),
            "spec.workloads[3].dependencies[0].name",
        ),
        (
            lambda d: d["spec"]["workloads"][0]["dependencies"][1].__setitem__("name", "recommendation"),
            "spec.workloads[0].dependencies[1].name",
        ),
        (lambda d: d["spec"]["workloads"][4].__setitem__("name", "frontend"), "spec.workloads[4].name"),
        (lambda d: d["spec"]["workloads"][4].__setitem__("weight", -0.5), "spec.workloads[4].weight"),
        (
            lambda d: d["spec"]["workloads"][5].__setitem__(
                "selector", {"matchExpressions": [{"key": "a", "operator": "In"}]}
            ),
            "spec.workloads[5].selector.matchExpressions[0].values",
        ),
        (
            lambda d: d["spec"]["workloads"][5].__setitem__("selector", "bad key=x"),
            "spec.workloads[5].selector.matchLabels.bad key",
        ),
        (
            lambda d: d["spec"]["workloads"][6]["resources"].__setitem__("memory", "64MB"),
            "spec.workloads[6].resources.memory",
        ),
        (
            lambda d: d["spec"]["workloads"][0]["dependencies"][0].__setitem__("maxNetworkCost", 10001),
            "spec.workloads[0].dependencies[0].maxNetworkCost",
        ),
        (
            lambda d: d["spec"]["workloads"][0]["dependencies"][0].__setitem__("minBandwidth", "1 Gbps"),
            "spec.workloads[0].dependencies[0].minBandwidth",
        ),
        (lambda d: d["spec"]["workloads"][7].__setitem__("replicas", 0), "spec.workloads[7].replicas"),
        (
            lambda d: d["spec"].__setitem__("topologySortingAlgorithm", "Bogo"),
            "spec.topologySortingAlgorithm",
        ),
        (lambda d: d["spec"].__setitem__("topologyMode", "galaxy"), "spec.topologyMode"),
        (lambda d: d["spec"].__setitem__("workloads", []), "spec.workloads"),
        (lambda d: d["metadata"].__setitem__("name", "Not_Valid"), "metadata.name"),
        (lambda d: d.__setitem__("apiVersion", "example.com/v1"), "apiVersion"),
        (lambda d: d.__setitem__("kind", "Pod"), "kind"),
    ],
)
def test_errors_name_the_field(mutate, path):
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(mutated(mutate))
    assert info.value.field_path == path


def test_diktyo_errors_name_the_field():
    spec = documents.spec_from_document(BOUTIQUE)
    doc = documents.document_from_spec(spec, flavor="diktyo")
    bad = copy.deepcopy(doc)
    bad["spec"]["workloads"][1]["dependencies"][0]["workload"]["selector"] = "ghost"
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(bad)
    assert info.value.field_path == "spec.workloads[1].dependencies[0].workload.selector"
    bad = copy.deepcopy(doc)
    del bad["spec"]["numMembers"]
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(bad)
    assert info.value.field_path == "spec.numMembers"
    bad = copy.deepcopy(doc)
    bad["metadata"]["annotations"][documents.EXTRAS_ANNOTATION] = "{not json"
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(bad)
    assert info.value.field_path.startswith("metadata.annotations")


def test_diktyo_upstream_style_document_with_cycles_imports():
    doc = {
        "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1",
        "kind": "AppGroup",
        "metadata": {"name": "ob", "namespace": "default"},
        "spec": {
            "numMembers": 2,
            "topologySortingAlgorithm": "AlternateKahn",
            "workloads": [
                {
                    "workload": {"kind": "Deployment", "name": "frontend-deployment", "selector": "frontend"},
                    "dependencies": [
                        {
                            "workload": {"kind": "Deployment", "name": "cart-deployment", "selector": "cart"},
                            "minBandwidth": "100Mi",
                            "maxNetworkCost": 80,
                        }
                    ],
                },
                {
                    "workload": {"kind": "Deployment", "name": "cart-deployment", "selector": "cart"},
                    "dependencies": [
                        {
                            "workload": {
                                "kind": "Deployment",
                                "name": "frontend-deployment",
                                "selector": "frontend",
                            }
                        }
                    ],
                },
            ],
        },
    }
    spec = documents.spec_from_document(doc)
    assert spec.workload("frontend").controller_name == "frontend-deployment"
    dep = spec.workload("frontend").dependencies[0]
    assert (dep.min_bandwidth_bps, dep.max_network_cost) == (100 * 2**20, 80)
    order = documents.topology_order(spec)
    assert order.cyclic and sorted(order.order) == ["cart", "frontend"]


def test_status_documents():
    spec = documents.spec_from_document(BOUTIQUE)
    ours = documents.status_document(
        spec, placements={"cart": [{"pod": "cart-1", "node": "n1"}]}, observed_generation=2
    )
    assert ours["topologyOrder"][0] == {"workload": "frontend", "index": 1}
    assert ours["placements"] == {"cart": [{"pod": "cart-1", "node": "n1"}]} and ours["runningWorkloads"] == 1
    diktyo = documents.status_document(spec, flavor="diktyo")
    selectors_in_order = [entry["workload"]["selector"] for entry in diktyo["topologyOrder"]]
    assert selectors_in_order == sorted(selectors_in_order)
    assert {
        e["workload"]["selector"]: e["index"] for e in diktyo["topologyOrder"]
    } == documents.topology_order(spec).index()


@pytest.mark.parametrize(
    "text,value",
    [
        ("100m", Decimal("0.1")),
        ("64Mi", 64 * 2**20),
        ("100M", 10**8),
        ("1e3", 1000),
        ("1.5Gi", Decimal("1.5") * 2**30),
        ("0.5", Decimal("0.5")),
        (".5k", 500),
        ("+2", 2),
        ("7", 7),
    ],
)
def test_quantity_parsing(text, value):
    assert quantity.parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.2.3", "10MB", "1 Gi", "mi", "abc", "1e", "Ki"])
def test_bad_quantities(text):
    with pytest.raises(quantity.QuantityError):
        quantity.parse_quantity(text)


def test_quantity_conversions_and_formatting():
    assert quantity.cpu_millicores("0.1") == quantity.cpu_millicores("100m") == 100
    assert quantity.cpu_millicores("1.0001") == 1001  # rounded up like the kubelet
    assert quantity.memory_bytes("64Mi") == 67108864
    assert quantity.bandwidth_bps("100M") == 1e8
    for text in ("100M", "100Mi", "1G", "64Mi", "180Mi", "1500", "0"):
        assert quantity.format_bytes(quantity.parse_quantity(text)) == text
    assert quantity.format_cpu(100) == "100m" and quantity.format_cpu(2000) == "2"
    with pytest.raises(quantity.QuantityError):
        quantity.memory_bytes("-1Mi")
