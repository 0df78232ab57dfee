"""``preempt`` answers ExtenderPreemptionResult keeping only the nodes where evicting the victims
could help: a network constraint cannot be fixed by eviction, so those nodes are dropped."""

from __future__ import annotations

import pytest

from apps.scheduler.models import Decision
from tests.support.extender_wire import k8s_pod, load_kep_fixture

OVERHEAD = {"netaware.io/profile": "network-overhead"}


@pytest.fixture
def ext(start_extender):
    extender = start_extender()
    load_kep_fixture()
    return extender


def post(ext, body: object):
    response = ext.post("/scheduler/preempt/", body)
    assert response.status_code == 200, response.content
    return response.json()


def test_meta_victims_of_nodes_violating_network_cost_are_dropped(ext):
    preemptor = k8s_pod("p1-hi-prio", labels={"app": "p1"}, annotations=OVERHEAD)
    body = {
        "Pod": preemptor,
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {
            "n-1": {"Pods": [{"UID": "uid-a"}], "NumPDBViolations": 0},
            "n-5": {"Pods": [{"UID": "uid-b"}, {"UID": "uid-c"}], "NumPDBViolations": 1},
            "n-6": {"Pods": [{"UID": "uid-d"}], "NumPDBViolations": 0},
        },
    }
    result = post(ext, body)
    assert result == {
        "NodeNameToMetaVictims": {
            "n-5": {"Pods": [{"UID": "uid-b"}, {"UID": "uid-c"}], "NumPDBViolations": 1},
            "n-6": {"Pods": [{"UID": "uid-d"}], "NumPDBViolations": 0},
        }
    }
    ext.drain_decisions()
    decision = Decision.objects.get(verb="preempt")
    assert decision.result["kept"] == ["n-5", "n-6"]
    assert "Violated: 1" in decision.result["dropped"]["n-1"]


def test_full_victims_are_answered_as_meta_victims(ext):
    """nodeCacheCapable false: kube-scheduler sends whole victim pods; the answer is always the
    meta form (UIDs), as kube-scheduler's ProcessPreemption expects."""
    victim = k8s_pod("low-prio-1", labels={"app": "batch"}, uid="uid-victim", node_name="n-7", phase="Running")
    preemptor = k8s_pod("p2-hi-prio", labels={"app": "p2"}, annotations=OVERHEAD)
    body = {
        "Pod": preemptor,
        "NodeNameToVictims": {
            "n-7": {"Pods": [victim], "NumPDBViolations": 0},
            "n-2": {"Pods": [k8s_pod("low-prio-2", uid="uid-2")], "NumPDBViolations": 0},
        },
        "NodeNameToMetaVictims": None,
    }
    assert post(ext, body) == {
        "NodeNameToMetaVictims": {"n-7": {"Pods": [{"UID": "uid-victim"}], "NumPDBViolations": 0}}
    }


def test_pod_in_no_appgroup_keeps_every_candidate(ext):
    body = {
        "Pod": k8s_pod("other-1", labels={"app": "other"}),
        "NodeNameToMetaVictims": {n: {"Pods": [{"UID": f"u-{n}"}], "NumPDBViolations": 0} for n in ("n-1", "n-8")},
    }
    assert set(post(ext, body)["NodeNameToMetaVictims"]) == {"n-1", "n-8"}
