"""Every manifest under k8s/ validates offline: built-in kinds against the Kubernetes 1.31 schemas
(kubernetes-validate, strict), our custom resources against our CRDs' openAPIV3Schema, and the
scheduler-plugins resources against their published shape; our examples also convert to specs."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from apps.appgroups import documents as appgroup_documents
from apps.topology import documents as topology_documents
from netaware_core import crdschema

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "k8s"
KUBERNETES_VERSION = "1.31"
# Component configuration files (not API objects the API server stores): nothing to validate against.
CONFIG_KINDS = {
    "KubeSchedulerConfiguration",
    "KubeletConfiguration",
    "KubeProxyConfiguration",
    "Config",
    "EncryptionConfiguration",
    "AdmissionConfiguration",
    "Policy",
    # kustomize's own files (the rendered overlays are validated in test_k8s_overlays_render_and_validate.py).
    "Kustomization",
}
# prometheus-operator's PrometheusRule: the shape here, the rules themselves by promtool
# (tests/test_monitoring_alerts_and_dashboard.py).
PROMETHEUS_RULE_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {
            "type": "object",
            "required": ["groups"],
            "additionalProperties": False,
            "properties": {"groups": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["name", "rules"],
                "properties": {"name": {"type": "string"}, "interval": {"type": "string"},
                               "rules": {"type": "array", "minItems": 1}},
            }}},
        },
    },
}
EXTRA_DOCUMENTS = [ROOT / "scenarios" / name for name in (
    "online-boutique-appgroup.yaml", "social-network-appgroup.yaml", "two-tenants-appgroups.yaml")]

QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string", "pattern": appgroup_documents.quantity.QUANTITY_PATTERN}]
}
STRING = {"type": "string"}


def closed(required: list[str], **properties: dict) -> dict:
    """An object the Go types decode strictly: unknown fields are an error."""
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties}


def array_of(items: dict) -> dict:
    return {"type": "array", "items": items}


DIKTYO_WORKLOAD_INFO = closed(
    ["kind", "name", "selector"], **{k: STRING for k in ("kind", "name", "selector", "apiVersion", "namespace")}
)
# The scheduler-plugins (diktyo) shapes, written from their Go types (appgroup-api, networktopology-api).
DIKTYO_SCHEMAS = {
    (appgroup_documents.DIKTYO_APPGROUP_API_VERSION, "AppGroup"): {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": closed(
                ["numMembers", "topologySortingAlgorithm", "workloads"],
                numMembers={"type": "integer", "minimum": 1},
                topologySortingAlgorithm=STRING,
                workloads=array_of(
                    closed(
                        ["workload"],
                        workload=DIKTYO_WORKLOAD_INFO,
                        dependencies=array_of(
                            closed(
                                ["workload"],
                                workload=DIKTYO_WORKLOAD_INFO,
                                minBandwidth=QUANTITY,
                                maxNetworkCost={"type": "integer", "minimum": 0, "maximum": 10000},
                            )
                        ),
                    )
                ),
            )
        },
    },
    (topology_documents.DIKTYO_API_VERSION, "NetworkTopology"): {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": closed(
                ["weights", "configmapName"],
                configmapName=STRING,
                weights=array_of(
                    closed(
                        ["name", "topologyList"],
                        name=STRING,
                        topologyList=array_of(
                            closed(
                                ["topologyKey", "originList"],
                                topologyKey=STRING,
                                originList=array_of(
                                    closed(
                                        ["origin"],
                                        origin=STRING,
                                        costList=array_of(
                                            closed(
                                                ["destination", "networkCost"],
                                                destination=STRING,
                                                networkCost={"type": "integer", "minimum": 0},
                                                bandwidthCapacity=QUANTITY,
                                                bandwidthAllocated=QUANTITY,
                                                isAllowed={"type": "boolean"},
                                            )
                                        ),
                                    )
                                ),
                            )
                        ),
                    )
                ),
            ),
            "status": {
                "type": "object",
                "properties": {
                    "nodeCount": {"type": "integer", "minimum": 0},
                    "weightCalculationTime": STRING,
                },
            },
        },
    },
}


def yaml_files() -> list[Path]:
    return sorted(p for p in K8S.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def documents(path: Path) -> list[dict]:
    with path.open() as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def strict(schema: dict) -> dict:
    """The API server prunes unknown fields; refusing them here catches typos instead."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if (
                node.get("type") == "object"
                and "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    # metadata is validated by the API server's ObjectMeta, not the CRD schema.
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


# Our CRDs' schemas as the product reads them (netaware_core/crdschema.py), made strict for our own examples.
OUR_SCHEMAS = {key: strict(schema) for key, schema in crdschema.crd_schemas().items()}


def validate_document(doc: dict) -> str:
    """Validate one document; returns how it was validated ('skipped: ...' for config files)."""
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if kind in CONFIG_KINDS:
        return f"skipped: {kind} is a component configuration file"
    key = (api_version, kind)
    if kind == "PrometheusRule":
        jsonschema.Draft7Validator(PROMETHEUS_RULE_SCHEMA).validate(doc)
        return "prometheusrule"
    if key in OUR_SCHEMAS:
        jsonschema.Draft7Validator(OUR_SCHEMAS[key]).validate(doc)
        return "crd"
    if key in DIKTYO_SCHEMAS:
        jsonschema.Draft7Validator(DIKTYO_SCHEMAS[key]).validate(doc)
        return "diktyo"
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    return "kubernetes"


def test_there_is_something_to_validate():
    assert {("netaware.io/v1alpha1", "AppGroup"), ("netaware.io/v1alpha1", "NetworkTopology")} <= set(
        OUR_SCHEMAS
    )
    assert len(yaml_files()) >= 6


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_manifest_validates(path):
    docs = documents(path)
    assert docs, f"{path} has no documents"
    for index, doc in enumerate(docs):
        assert isinstance(doc, dict) and doc.get("kind") and doc.get("apiVersion"), f"{path} document {index}"
        try:
            validate_document(doc)
        except Exception as exc:  # report which document failed and why
            pytest.fail(f"{path.relative_to(ROOT)} document {index} ({doc.get('kind')}): {exc}")


@pytest.mark.parametrize(
    "path", sorted((K8S / "examples").glob("*.yaml")) + EXTRA_DOCUMENTS, ids=lambda p: p.name
)
def test_examples_match_crds_and_convert(path):
    for doc in documents(path):
        assert validate_document(doc) in ("crd", "diktyo")
        if doc["kind"] == "AppGroup":
            spec = appgroup_documents.spec_from_document(doc)
            assert spec.workloads
            # The export of the converted spec validates too, in both flavours.
            for flavor in ("netaware", "diktyo"):
                validate_document(appgroup_documents.document_from_spec(spec, flavor=flavor))


def test_boutique_status_validates_against_crd():
    doc = documents(ROOT / "scenarios" / "online-boutique-appgroup.yaml")[0]
    spec = appgroup_documents.spec_from_document(doc)
    doc["status"] = appgroup_documents.status_document(
        spec,
        placements={"frontend": [{"pod": "frontend-1", "node": "n1402"}]},
        observed_generation=3,
        conditions=[
            {
                "type": "Ready",
                "status": "True",
                "reason": "Synced",
                "message": "ok",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        calculation_time="2026-01-01T00:00:00Z",
    )
    assert validate_document(doc) == "crd"
    assert doc["status"]["runningWorkloads"] == 1


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["spec"]["workloads"][0].__setitem__("weight", -1),
        lambda d: d["spec"]["workloads"][0]["dependencies"][0]["metrics"].__setitem__("latency", -0.1),
        lambda d: d["spec"]["workloads"][0]["dependencies"][0].__setitem__("minBandwidth", "fast"),
        lambda d: d["spec"]["workloads"][0]["dependencies"][0].__setitem__("maxNetworkCost", 10001),
        lambda d: d["spec"].__setitem__("topologySortingAlgorithm", "Random"),
        lambda d: d["spec"]["workloads"][1].__setitem__("replicas", 0),
        lambda d: d["spec"]["workloads"][1].__setitem__("weigth", 1),
        lambda d: d["spec"]["workloads"][1]["selector"].__setitem__("matchLabels", {"app": "-x"}),
        lambda d: d["spec"]["workloads"][1]["selector"].__setitem__(
            "matchExpressions", [{"key": "a", "operator": "Is"}]
        ),
        lambda d: d["spec"].__delitem__("workloads"),
    ],
)
def test_crd_schema_rejects_bad_appgroups(mutate):
    doc = documents(ROOT / "scenarios" / "online-boutique-appgroup.yaml")[0]
    mutate(doc)
    with pytest.raises(jsonschema.ValidationError):
        validate_document(doc)


def test_kubernetes_validate_rejects_a_broken_builtin():
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_document(
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": "80"}}
        )
    assert validate_document(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    ).startswith("skipped")


def test_diktyo_networktopology_export_is_sorted_for_binary_search():
    doc = topology_documents.diktyo_networktopology_from_costs(
        name="costs",
        zone_costs={
            ("b", "a"): 3.4,
            ("a", "c"): 7.6,
            ("a", "b"): 2.5,
            ("a", "a"): 1.0,
            ("c", "a"): float("nan"),
        },
        region_costs={("r2", "r1"): 40.0, ("r1", "r2"): 41.0},
        zone_bandwidth_bps={("a", "b"): 1e9},
        node_count=3,
    )
    assert validate_document(doc) == "diktyo"
    weights = doc["spec"]["weights"][0]
    assert weights["name"] == "NetperfCosts"
    keys = [t["topologyKey"] for t in weights["topologyList"]]
    assert keys == sorted(keys) == ["topology.kubernetes.io/region", "topology.kubernetes.io/zone"]
    zones = weights["topologyList"][1]["originList"]
    assert [o["origin"] for o in zones] == ["a", "b"]
    assert zones[0]["costList"] == [
        {"destination": "b", "networkCost": 3, "bandwidthCapacity": "1G"},
        {"destination": "c", "networkCost": 8},
    ]
    assert zones[1]["costList"] == [{"destination": "a", "networkCost": 3}]
    assert doc["status"]["nodeCount"] == 3


def test_crd_rules_are_the_code_rules():
    from apps.appgroups import toposort, validators

    schema = OUR_SCHEMAS[("netaware.io/v1alpha1", "AppGroup")]["properties"]["spec"]["properties"]
    assert schema["topologySortingAlgorithm"]["enum"] == list(toposort.ALGORITHMS)
    workload = schema["workloads"]["items"]["properties"]
    assert workload["name"]["pattern"] == validators.LABEL_VALUE_PATTERN
    selector = workload["selector"]["properties"]
    assert (
        selector["matchExpressions"]["items"]["properties"]["key"]["pattern"] == validators.LABEL_KEY_PATTERN
    )
    assert selector["matchExpressions"]["items"]["properties"]["operator"]["enum"] == list(
        validators.OPERATORS
    )
    dependency = workload["dependencies"]["items"]["properties"]
    assert dependency["minBandwidth"]["pattern"] == appgroup_documents.quantity.QUANTITY_PATTERN
    assert dependency["maxNetworkCost"]["maximum"] == appgroup_documents.MAX_NETWORK_COST
