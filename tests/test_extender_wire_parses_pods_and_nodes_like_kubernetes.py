"""The wire parser reads v1.Pod / v1.Node JSON as Kubernetes means it: quantities with every
suffix, effective requests (max of the containers' sum and any init container, plus overhead),
bandwidth as an extended resource, zone/region/readiness from a Node."""

from __future__ import annotations

import orjson
import pytest

from apps.scheduler import wire
from tests.support.extender_wire import extender_args, k8s_node, k8s_pod


@pytest.mark.parametrize(
    ("value", "expected"),
    [("500m", 0.5), ("2", 2.0), ("1.5", 1.5), ("16Gi", 16 * 2**30), ("128974848", 128974848.0),
     ("129M", 129e6), ("123Mi", 123 * 2**20), ("1e3", 1000.0), ("100k", 1e5), ("10n", 1e-8), (3, 3.0)],
)
def test_quantities(value, expected):
    assert wire.parse_quantity(value, "q") == pytest.approx(expected)


@pytest.mark.parametrize("value", ["lots", "5 Gi", "Gi", "", True, None, [1]])
def test_bad_quantities_name_the_field(value):
    with pytest.raises(wire.WireError, match=r"^x\.cpu: "):
        wire.parse_quantity(value, "x.cpu")


def test_effective_pod_requests():
    pod = k8s_pod("web-1", cpu="250m", memory="64Mi")
    pod["spec"]["containers"].append(
        {"name": "sidecar", "resources": {"requests": {"cpu": "250m", "memory": "64Mi",
                                                        "networkAware.com/bandwidth": "10M"}}}
    )
    pod["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "1", "memory": "16Mi"}}}]
    pod["spec"]["overhead"] = {"cpu": "100m", "memory": "1Mi"}
    info = wire.parse_pod(pod)
    assert info.cpu_request_millicores == 1000 + 100  # the init container's 1 CPU dominates, plus overhead
    assert info.memory_request_bytes == 128 * 2**20 + 2**20
    assert info.bandwidth_request_bps == 10e6
    assert info.labels == {"pod-template-hash": "5d8f7c9b8d"}
    assert info.namespace == "default" and info.name == "web-1" and info.uid


def test_node_objects():
    args = wire.parse_extender_args(orjson.dumps(extender_args(
        k8s_pod("a-1"), nodes=[k8s_node("n1", zone="A", region="r", cpu="3500m", memory="16305440Ki"),
                               k8s_node("n2", ready=False)])))
    n1, n2 = args.nodes
    assert (n1.name, n1.resources.zone, n1.resources.region) == ("n1", "A", "r")
    assert n1.resources.allocatable_cpu_millicores == 3500
    assert n1.resources.allocatable_memory_bytes == 16305440 * 1024
    assert n1.ready and not n2.ready
    assert args.node_names is None and args.candidates == ("n1", "n2")


def test_results_use_go_field_names():
    args = wire.parse_extender_args(orjson.dumps({"pod": k8s_pod("a-1"), "nodeNames": ["n1", "n2"]}))
    assert orjson.loads(wire.filter_result(args=args, passed=["n1"], failed={"n2": "why"}, unresolvable={})) == {
        "Nodes": None, "NodeNames": ["n1"], "FailedNodes": {"n2": "why"}, "FailedAndUnresolvableNodes": {},
        "Error": ""}
    assert orjson.loads(wire.prioritize_result(["n1", "n2"], [10, 0])) == [
        {"Host": "n1", "Score": 10}, {"Host": "n2", "Score": 0}]
    binding = wire.parse_binding_args(b'{"podname": "p", "PODNAMESPACE": "ns", "PodUID": "u", "node": "n1"}')
    assert binding == wire.BindingArgs("p", "ns", "u", "n1")
