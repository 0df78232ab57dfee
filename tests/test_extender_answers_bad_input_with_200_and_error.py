"""Malformed JSON, wrong types, a missing Pod, unknown nodes and oversized bodies never produce a
5xx or a redirect: the four verbs answer 200 with a clear ``Error`` naming what is wrong."""

from __future__ import annotations

import orjson
import pytest

from apps.scheduler.models import Decision
from tests.support.extender_wire import extender_args, k8s_pod, load_kep_fixture


@pytest.fixture
def ext(start_extender):
    extender = start_extender()
    load_kep_fixture()
    return extender


def raw_post(ext, path: str, body: bytes):
    response = ext.post(path, body)
    assert response.status_code == 200, (path, response.status_code, response.content[:300])
    return response.json()


POD = k8s_pod("p1-bad-1", labels={"app": "p1"})

CASES = [
    ("malformed JSON", b'{"Pod": {', "malformed JSON"),
    ("not an object", b"[1, 2, 3]", "expected a JSON object"),
    ("empty body", b"", "malformed JSON"),
    ("missing Pod", orjson.dumps({"NodeNames": ["n-1"]}), "Pod: required"),
    ("Pod of wrong type", orjson.dumps({"Pod": "p1", "NodeNames": ["n-1"]}), "Pod: expected an object"),
    ("NodeNames of wrong type", orjson.dumps({"Pod": POD, "NodeNames": "n-1"}), "NodeNames: expected a list"),
    ("NodeNames with a number", orjson.dumps({"Pod": POD, "NodeNames": ["n-1", 7]}), "NodeNames[1]"),
    ("both null", orjson.dumps({"Pod": POD, "Nodes": None, "NodeNames": None}), "NodeNames and Nodes"),
    ("bad quantity", orjson.dumps(extender_args(k8s_pod("p1-bad-2", cpu="lots"), node_names=["n-1"])),
     "Pod.spec.containers[0].resources.requests.cpu"),
    ("node without name", orjson.dumps({"Pod": POD, "Nodes": {"items": [{"metadata": {}}]}}),
     "Nodes.items[0].metadata.name: required"),
    ("labels not strings", orjson.dumps(extender_args(k8s_pod("p1-bad-3", labels={"app": 1}), node_names=["n-1"])),
     "Pod.metadata.labels.app"),
]


@pytest.mark.parametrize(("case", "body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_filter_reports_bad_requests_in_error(ext, case, body, expected):
    result = raw_post(ext, "/scheduler/filter", body)
    assert expected in result["Error"], result
    assert result["NodeNames"] is None and result["Nodes"] is None
    ext.drain_decisions()
    logged = Decision.objects.get(verb="filter")
    assert expected in logged.error


@pytest.mark.parametrize(("case", "body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_prioritize_reports_bad_requests_in_error(ext, case, body, expected):
    result = raw_post(ext, "/scheduler/prioritize", body)
    # A HostPriorityList cannot carry an error: an object makes kube-scheduler ignore this
    # extender's scores for the cycle, and logs our message.
    assert isinstance(result, dict) and expected in result["Error"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{nope", "malformed JSON"),
        (orjson.dumps({"PodNamespace": "default", "Node": "n-1"}), "PodName: required"),
        (orjson.dumps({"PodName": "p", "PodNamespace": "default"}), "Node: required"),
        (orjson.dumps({"PodName": 5, "Node": "n-1"}), "PodName: expected a string"),
    ],
)
def test_bind_reports_bad_requests_in_error(ext, body, expected):
    result = raw_post(ext, "/scheduler/bind", body)
    assert set(result) == {"Error"} and expected in result["Error"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"\xff\xfe", "malformed JSON"),
        (orjson.dumps({"NodeNameToMetaVictims": {}}), "Pod: required"),
        (orjson.dumps({"Pod": POD, "NodeNameToMetaVictims": {"n-1": {"Pods": "x"}}}),
         "NodeNameToMetaVictims.n-1.Pods: expected a list"),
        (orjson.dumps({"Pod": POD, "NodeNameToMetaVictims": {"n-1": {"Pods": [], "NumPDBViolations": "2"}}}),
         "NumPDBViolations: expected an integer"),
    ],
)
def test_preempt_reports_bad_requests_in_error(ext, body, expected):
    result = raw_post(ext, "/scheduler/preempt", body)
    assert result["NodeNameToMetaVictims"] == {}
    assert expected in result["Error"]


@pytest.mark.parametrize("verb", ["filter", "prioritize", "bind", "preempt"])
def test_oversized_bodies_are_refused_with_error(ext, settings, verb):
    settings.MAX_EXTENDER_BODY = 10_000
    body = orjson.dumps(extender_args(POD, node_names=[f"node-{i:06d}" for i in range(2000)]))
    assert len(body) > 10_000
    result = raw_post(ext, f"/scheduler/{verb}", body)
    assert "exceeds the limit of 10000 bytes" in result["Error"]


def test_unknown_nodes_pass_with_neutral_scores_and_are_noted(ext):
    pod = k8s_pod("p1-unknown", labels={"app": "p1"}, annotations={"netaware.io/profile": "network-overhead"})
    names = ["ghost-1", "n-5", "ghost-2"]
    result = raw_post(ext, "/scheduler/filter", orjson.dumps(extender_args(pod, node_names=names)))
    assert result["NodeNames"] == ["ghost-1", "n-5", "ghost-2"] and result["Error"] == ""
    scores = raw_post(ext, "/scheduler/prioritize", orjson.dumps(extender_args(pod, node_names=names)))
    assert [(s["Host"], s["Score"]) for s in scores] == [("ghost-1", 5), ("n-5", 10), ("ghost-2", 5)]
    ext.drain_decisions()
    notes = Decision.objects.get(verb="filter").result["notes"]
    assert any("ghost-1" in note and "unknown" in note for note in notes)


def test_unknown_profile_annotation_falls_back_to_the_default_and_says_so(ext):
    pod = k8s_pod("p1-typo", labels={"app": "p1"}, annotations={"netaware.io/profile": "netwrok"})
    raw_post(ext, "/scheduler/filter", orjson.dumps(extender_args(pod, node_names=["n-1"])))
    ext.drain_decisions()
    decision = Decision.objects.get(verb="filter")
    assert decision.profile == "network"
    assert any("'netwrok'" in note for note in decision.result["notes"])
