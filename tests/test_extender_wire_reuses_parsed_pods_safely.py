"""filter and prioritize of one pod carry the same v1.Pod: its parse is reused (through the
extender runtime's WireInterner, no module state), but only while every field the parse reads is
unchanged (a resent uid/resourceVersion with other content is parsed again), and the prioritize
answer is the exact HostPriorityList JSON with or without the interner."""

from __future__ import annotations

import copy

import orjson
import pytest

from apps.scheduler import wire
from tests.support.extender_wire import extender_args, k8s_pod

INTERNER = wire.WireInterner()


def parse(pod: dict, interner: wire.WireInterner | None = INTERNER) -> wire.PodInfo:
    return wire.parse_extender_args(orjson.dumps(extender_args(pod, node_names=["n-1"])), interner).pod


def test_the_same_pod_is_parsed_once_and_changes_are_seen():
    pod = k8s_pod("cart-0", namespace="shop", labels={"app": "cart"}, cpu="250m", uid="uid-reuse-1")
    first = parse(pod)
    assert parse(copy.deepcopy(pod)) is first  # filter, then prioritize of the same pod
    assert parse(copy.deepcopy(pod), None) is not first  # no interner: parsed again, to the same value
    assert parse(copy.deepcopy(pod), None) == first
    assert parse(copy.deepcopy(pod), wire.WireInterner()) is not first  # an interner belongs to its owner

    relabeled = copy.deepcopy(pod)
    relabeled["metadata"]["labels"]["app"] = "checkout"
    assert parse(relabeled).labels["app"] == "checkout"

    bigger = copy.deepcopy(pod)
    bigger["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert parse(bigger).cpu_request_millicores == 2000

    annotated = copy.deepcopy(pod)
    annotated["metadata"]["annotations"] = {"netaware.io/profile": "hybrid"}
    assert parse(annotated).annotations == {"netaware.io/profile": "hybrid"}

    renamed = copy.deepcopy(pod)
    renamed["metadata"]["name"] = "cart-1"
    assert parse(renamed).name == "cart-1"
    assert parse(copy.deepcopy(pod)).cpu_request_millicores == 250


def test_bad_pods_still_fail_after_a_good_one_with_the_same_identity():
    pod = k8s_pod("cart-0", labels={"app": "cart"}, uid="uid-reuse-2")
    parse(pod)
    broken = copy.deepcopy(pod)
    broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with pytest.raises(wire.WireError, match=r"Pod.spec.containers\[0\].resources.requests.cpu"):
        parse(broken)


@pytest.mark.parametrize("scores", [[0, 10, 5, 7], [3, 3, 3, 3], [0, 11, 3, 4], [11, -1, 0, 2]])
def test_prioritize_result_is_the_exact_host_priority_list(scores):
    hosts = ["n-1", 'quote"node', "ünïcode", "n-1/2"]
    expected = orjson.dumps([{"Host": h, "Score": s} for h, s in zip(hosts, scores, strict=True)])
    interner = wire.WireInterner(hosts_max=3)
    # No interner; an interner filled on the way (first call) and full (second); a bound that forces clearing.
    for answer in (wire.prioritize_result(hosts, scores), wire.prioritize_result(hosts, scores, INTERNER),
                   wire.prioritize_result(hosts, scores, INTERNER), wire.prioritize_result(hosts, scores, interner)):
        assert answer == expected
    assert len(interner.hosts) <= 3
    assert wire.prioritize_result([], []) == b"[]"


def test_node_objects_are_reused_only_at_the_same_resource_version():
    interner = wire.WireInterner()
    node = {"metadata": {"name": "n-1", "resourceVersion": "7", "labels": {"topology.kubernetes.io/zone": "a"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}
    first = wire.parse_node(node, "node", interner)
    assert wire.parse_node(copy.deepcopy(node), "node", interner).resources is first.resources
    assert wire.parse_node(copy.deepcopy(node), "node").resources == first.resources
    resized = copy.deepcopy(node)
    resized["metadata"]["resourceVersion"] = "8"
    resized["status"]["allocatable"]["cpu"] = "8"
    assert wire.parse_node(resized, "node", interner).resources.allocatable_cpu_millicores == 8000
