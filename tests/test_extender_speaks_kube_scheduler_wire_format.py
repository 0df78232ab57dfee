"""The extender answers request bodies shaped exactly as kube-scheduler sends them, in both
node-cache modes, with the Go field names kube-scheduler decodes."""

from __future__ import annotations

import orjson
import pytest

from apps.scheduler.models import Decision
from tests.support.extender_wire import (
    extender_args,
    k8s_node,
    k8s_pod,
    load_kep_fixture,
    load_testbed,
    save_boutique,
)

FILTER_KEYS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
OVERHEAD = {"netaware.io/profile": "network-overhead"}


@pytest.fixture
def ext(start_extender):
    return start_extender()


def post(ext, path: str, body: object):
    response = ext.post(path, body)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return orjson.loads(response.content)


def kep_nodes_as_objects() -> list[dict]:
    from tests.support.extender_wire import KEP_NODES

    return [k8s_node(name, zone=zone, region=region) for name, (zone, region) in KEP_NODES.items()]


def test_filter_with_node_names_answers_node_names_and_failed_nodes(ext):
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-7c9d-x1", labels={"app": "p1"}, annotations=OVERHEAD)
    result = post(ext, "/scheduler/filter", extender_args(pod, node_names=nodes))
    assert set(result) == FILTER_KEYS
    assert result["Nodes"] is None
    assert result["Error"] == ""
    # p2 sits on n-5 (us-east-1/Z3); max network cost 0: only its zone satisfies (as scheduler-plugins).
    assert result["NodeNames"] == ["n-5", "n-6"]
    assert result["FailedNodes"] == {}
    assert set(result["FailedAndUnresolvableNodes"]) == set(nodes) - {"n-5", "n-6"}
    assert "Satisfied: 0 Violated: 1" in result["FailedAndUnresolvableNodes"]["n-1"]


def test_filter_with_full_node_objects_answers_the_same_node_objects(ext):
    load_kep_fixture()
    objects = kep_nodes_as_objects()
    pod = k8s_pod("p2-7c9d-x1", labels={"app": "p2"}, annotations=OVERHEAD)
    result = post(ext, "/scheduler/filter", extender_args(pod, nodes=objects))
    assert set(result) == FILTER_KEYS
    assert result["NodeNames"] is None
    # p3 on n-8 (Z4): p2 passes only in Z4; the passed nodes come back as the very objects we sent.
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["n-7", "n-8"]
    assert result["Nodes"]["items"] == objects[6:8]
    assert set(result["FailedAndUnresolvableNodes"]) == {f"n-{i}" for i in range(1, 7)}


def test_nodes_mode_takes_zones_from_the_node_objects(ext):
    """With nodeCacheCapable false the node objects are the truth: nodes unknown to our cache are
    judged by their zone/region labels."""
    load_kep_fixture()
    east = k8s_node("n-new-east", zone="Z3", region="us-east-1")
    west = k8s_node("n-new-west", zone="Z1", region="us-west-1")
    pod = k8s_pod("p1-7c9d-x2", labels={"app": "p1"}, annotations=OVERHEAD)
    scores = post(ext, "/scheduler/prioritize", extender_args(pod, nodes=[east, west, *kep_nodes_as_objects()]))
    by_host = {e["Host"]: e["Score"] for e in scores}
    assert by_host["n-new-east"] == by_host["n-6"] == 10  # same zone as p2's node: cost 1
    assert by_host["n-new-west"] == by_host["n-1"] == 0  # across regions: cost 20
    result = post(ext, "/scheduler/filter", extender_args(pod, nodes=[east, west]))
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["n-new-east"]
    assert set(result["FailedAndUnresolvableNodes"]) == {"n-new-west"}


def test_keys_are_accepted_case_insensitively(ext):
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-7c9d-x3", labels={"app": "p1"}, annotations=OVERHEAD)
    body = {"pod": pod, "nodes": None, "nodenames": nodes}
    result = post(ext, "/scheduler/filter", body)
    assert result["NodeNames"] == ["n-5", "n-6"]
    body = {"POD": pod, "NODENAMES": nodes}
    assert post(ext, "/scheduler/prioritize", body)[0]["Host"] == "n-1"


@pytest.mark.parametrize("mode", ["names", "objects"])
def test_prioritize_answers_a_bare_host_priority_list(ext, mode):
    load_kep_fixture()
    objects = kep_nodes_as_objects()
    names = [o["metadata"]["name"] for o in objects]
    pod = k8s_pod("p1-7c9d-x4", labels={"app": "p1"}, annotations=OVERHEAD)
    args = extender_args(pod, node_names=names) if mode == "names" else extender_args(pod, nodes=objects)
    result = post(ext, "/scheduler/prioritize", args)
    assert isinstance(result, list)
    assert [entry["Host"] for entry in result] == names
    for entry in result:
        assert set(entry) == {"Host", "Score"}
        assert isinstance(entry["Score"], int) and 0 <= entry["Score"] <= 10
    scores = {e["Host"]: e["Score"] for e in result}
    # KEP vector for p1 (p2 on n-5): normalized [0,0,0,0,100,95,50,50] → 0..10.
    assert scores == {"n-1": 0, "n-2": 0, "n-3": 0, "n-4": 0, "n-5": 10, "n-6": 10, "n-7": 5, "n-8": 5}


def test_pod_in_no_appgroup_passes_every_filter_with_neutral_scores(ext):
    nodes = load_testbed()
    save_boutique()
    pod = k8s_pod("batch-job-x9", namespace="boutique", labels={"app": "batch-job"})
    result = post(ext, "/scheduler/filter", extender_args(pod, node_names=nodes))
    assert result["NodeNames"] == nodes and result["FailedNodes"] == {} and result["FailedAndUnresolvableNodes"] == {}
    scores = post(ext, "/scheduler/prioritize", extender_args(pod, node_names=nodes))
    assert {e["Score"] for e in scores} == {5}


def test_boutique_pod_prefers_nodes_near_its_placed_dependency(ext):
    from apps.appgroups.services import record_placement

    nodes = load_testbed()
    save_boutique()
    record_placement(pod_namespace="boutique", pod_name="redis-cart-0", pod_uid="u-1", node_name="n1402",
                     labels={"app": "redis-cart"}, source="watcher")
    pod = k8s_pod("cartservice-5d8f-a1", namespace="boutique", labels={"app": "cartservice"})
    scores = {e["Host"]: e["Score"] for e in post(ext, "/scheduler/prioritize", extender_args(pod, node_names=nodes))}
    # ComputeScore toward redis-cart's node: same node 0.8, same zone 1.0, zone C lower, FAR 0.
    assert (scores["n1402"], scores["n1403"], scores["n1417"]) == (8, 10, 0)
    assert 0 < scores["n1412"] < scores["n1402"]


@pytest.mark.parametrize("verb", ["filter", "prioritize", "bind", "preempt"])
def test_trailing_slash_and_no_redirects(ext, verb):
    load_kep_fixture()
    pod = k8s_pod("p3-aa-1", labels={"app": "p3"})
    bodies = {
        "filter": extender_args(pod, node_names=["n-1"]),
        "prioritize": extender_args(pod, node_names=["n-1"]),
        "bind": {"PodName": "", "PodNamespace": "default", "PodUID": "", "Node": "n-1"},
        "preempt": {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": {}},
    }
    for path in (f"/scheduler/{verb}", f"/scheduler/{verb}/"):
        response = ext.post(path, bodies[verb])
        assert response.status_code == 200, (path, response.content)
        orjson.loads(response.content)
        got = ext.get(path)
        assert got.status_code == 405
        assert got["Allow"] == "POST"
        assert "Error" in orjson.loads(got.content)


def test_filter_and_prioritize_are_logged_with_a_per_node_breakdown(ext):
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-7c9d-x5", labels={"app": "p1"}, annotations=OVERHEAD)
    post(ext, "/scheduler/filter", extender_args(pod, node_names=nodes))
    post(ext, "/scheduler/prioritize", extender_args(pod, node_names=nodes))
    ext.drain_decisions()
    filt = Decision.objects.get(verb="filter", pod_name="p1-7c9d-x5")
    prio = Decision.objects.get(verb="prioritize", pod_name="p1-7c9d-x5")
    assert filt.profile == prio.profile == "network-overhead"
    assert filt.workload == "default/a1/p1" and filt.candidates == 8
    assert "Violated: 1" in filt.breakdown_data["reasons"]["n-1"]
    assert prio.node in {"n-5", "n-6"}
    assert prio.breakdown_data["nodes"] == nodes
    assert prio.breakdown_data["scorers"]["network-overhead"][4] == 100.0
    assert prio.breakdown_data["extender"] == [0, 0, 0, 0, 10, 10, 5, 5]
