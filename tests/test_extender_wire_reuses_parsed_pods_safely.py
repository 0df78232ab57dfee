"""filter and prioritize of one pod carry the same v1.Pod: its parse is reused, but only while
every field the parse reads is unchanged (a resent uid/resourceVersion with other content is
parsed again), and the prioritize answer is the exact HostPriorityList JSON."""

from __future__ import annotations

import copy

import orjson
import pytest

from apps.scheduler import wire
from tests.support.extender_wire import extender_args, k8s_pod


def parse(pod: dict) -> wire.PodInfo:
    return wire.parse_extender_args(orjson.dumps(extender_args(pod, node_names=["n-1"]))).pod


def test_the_same_pod_is_parsed_once_and_changes_are_seen():
    pod = k8s_pod("cart-0", namespace="shop", labels={"app": "cart"}, cpu="250m", uid="uid-reuse-1")
    first = parse(pod)
    assert parse(copy.deepcopy(pod)) is first  # filter, then prioritize of the same pod

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


@pytest.mark.parametrize("scores", [[0, 10, 5, 7], [3, 3, 3, 3], [11, -1, 0, 2]])
def test_prioritize_result_is_the_exact_host_priority_list(scores):
    hosts = ["n-1", 'quote"node', "ünïcode", "n-1/2"]
    answer = wire.prioritize_result(hosts, scores)
    assert orjson.loads(answer) == [{"Host": h, "Score": s} for h, s in zip(hosts, scores, strict=True)]
    assert answer == orjson.dumps([{"Host": h, "Score": s} for h, s in zip(hosts, scores, strict=True)])
    assert wire.prioritize_result([], []) == b"[]"
