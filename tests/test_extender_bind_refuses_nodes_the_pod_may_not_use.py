"""``bind`` does not trust the chosen node blindly (issue 21): it checks the pod's ``nodeSelector``, its
required node affinity (``nodeSelectorTerms`` with In/NotIn/Exists/DoesNotExist/Gt/Lt and
``matchFields`` on ``metadata.name``) and the node's NoSchedule/NoExecute taints against the pod's
tolerations, from the scheduling cache's pod and node objects (no extra API call), and refuses with
what does not match. One implementation, kube-scheduler's NodeAffinity and TaintToleration filters
(``scoring.default_plugins.node_constraints_reason``), checked here against the rules and then
through the real extender server, called with kube-scheduler's client certificate."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from apps.scheduler import wire
from apps.scheduler.scoring.default_plugins import node_constraints_reason
from tests.support.certs import make_certs, mtls_args, mtls_post
from tests.support.extender_server import extender_server
from tests.support.extender_wire import load_testbed

OURS = "netaware-scheduler"


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


NODE_LABELS = {"disktype": "hdd", "cores": "4", "topology.kubernetes.io/zone": "zone-a", "gpu": "none"}

# (pod spec fragment, node taints, the reason's expected words or None when the pod may run there)
CASES: dict[str, tuple[dict[str, Any], list[dict[str, str]], str | None]] = {
    "nodeSelector matches": ({"nodeSelector": {"disktype": "hdd"}}, [], None),
    "nodeSelector value differs": ({"nodeSelector": {"disktype": "ssd"}}, [],
                                   "nodeSelector disktype=ssd (node has disktype=hdd)"),
    "nodeSelector label missing": ({"nodeSelector": {"tier": "gold"}}, [], "nodeSelector tier=gold (node has no label tier)"),
    "In matches": (affinity({"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "zone-a", "zone-b")]}),
                   [], None),
    "In misses": (affinity({"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "zone-b")]}), [],
                  "term 0: topology.kubernetes.io/zone In [zone-b] (node has topology.kubernetes.io/zone=zone-a)"),
    "NotIn misses": (affinity({"matchExpressions": [expr("disktype", "NotIn", "hdd")]}), [], "disktype NotIn [hdd]"),
    "Exists misses": (affinity({"matchExpressions": [expr("tier", "Exists")]}), [], "tier Exists (node has no label tier)"),
    "DoesNotExist misses": (affinity({"matchExpressions": [expr("gpu", "DoesNotExist")]}), [],
                            "gpu DoesNotExist (node has gpu=none)"),
    "Gt misses": (affinity({"matchExpressions": [expr("cores", "Gt", "8")]}), [], "cores Gt 8 (node has cores=4)"),
    "Lt matches": (affinity({"matchExpressions": [expr("cores", "Lt", "8")]}), [], None),
    "Gt on a non-number misses": (affinity({"matchExpressions": [expr("disktype", "Gt", "1")]}), [], "disktype Gt 1"),
    "matchFields misses": (affinity({"matchFields": [expr("metadata.name", "In", "some-other-node")]}), [],
                           "matchFields metadata.name In [some-other-node] (node is NODE)"),
    "second term matches": (affinity({"matchExpressions": [expr("disktype", "In", "ssd")]},
                                     {"matchFields": [expr("metadata.name", "In", "NODE")]}), [], None),
    "no term matches": (affinity({"matchExpressions": [expr("disktype", "In", "ssd")]},
                                 {"matchFields": [expr("metadata.name", "NotIn", "NODE")]}), [],
                        "term 0: disktype In [ssd] (node has disktype=hdd); term 1: matchFields metadata.name NotIn"),
    "NoSchedule taint untolerated": ({}, [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
                                     "has the taint dedicated=infra:NoSchedule, which the pod does not tolerate"),
    "NoExecute taint untolerated": ({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "batch"}]},
                                    [{"key": "dedicated", "value": "infra", "effect": "NoExecute"}],
                                    "dedicated=infra:NoExecute"),
    "taint tolerated by Equal": ({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra",
                                                   "effect": "NoSchedule"}]},
                                 [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}], None),
    "taint tolerated by Exists without key": ({"tolerations": [{"operator": "Exists"}]},
                                              [{"key": "dedicated", "value": "infra", "effect": "NoExecute"}], None),
    "toleration for another effect": ({"tolerations": [{"key": "dedicated", "operator": "Exists",
                                                        "effect": "NoExecute"}]},
                                      [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
                                      "dedicated=infra:NoSchedule"),
    "PreferNoSchedule does not filter": ({}, [{"key": "dedicated", "value": "infra", "effect": "PreferNoSchedule"}], None),
}


def _node_spec(node: str, taints: list[dict[str, str]]) -> tuple[dict[str, str], Any]:
    return {**NODE_LABELS, "kubernetes.io/hostname": node}, wire.node_taints({"taints": taints})


def _pod_spec(fragment: dict[str, Any], node: str) -> dict[str, Any]:
    return orjson.loads(orjson.dumps(fragment).replace(b"NODE", node.encode()))


@pytest.mark.parametrize("case", list(CASES))
def test_node_constraints_follow_kubernetes_rules(case):
    fragment, taints, expected = CASES[case]
    labels, node_taints = _node_spec("n1", taints)
    reason = node_constraints_reason(wire.pod_node_constraints(_pod_spec(fragment, "n1")), node_name="n1",
                                     labels=labels, taints=node_taints)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected.replace("NODE", "n1") in reason, reason


@pytest.mark.parametrize("spec,where", [
    ({"nodeSelector": {"disktype": 1}}, "pod.spec.nodeSelector.disktype"),
    (affinity({"matchExpressions": [expr("a", "Near", "b")]}),
     "pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].operator"),
    ({"tolerations": [{"key": "a", "operator": "Maybe"}]}, "pod.spec.tolerations[0].operator"),
])
def test_malformed_constraints_name_the_field(spec, where):
    with pytest.raises(wire.WireError, match=f"^{re.escape(where)}: "):
        wire.pod_node_constraints(spec)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"), strangers={})


@pytest.mark.slow
def test_the_extender_server_binds_only_where_the_pod_may_run(certs, transactional_db, fake_kube):
    load_testbed()  # the topology the extender loads before it is ready
    # Each case gets a node of its own with the case's taints (a bind to another case's node could
    # also be refused by that node's taints).
    node_of = {case: f"bind-case-{i:02d}" for i, case in enumerate(CASES)}
    for node in node_of.values():
        fake_kube.add_node(node, labels=NODE_LABELS)
    uids = {}
    for case, (fragment, taints, _) in CASES.items():
        node = node_of[case]
        if taints:
            fake_kube.merge("", "v1", "nodes", node, {"spec": {"taints": taints}})
        name = "pod-" + case.lower().replace(" ", "-")
        spec = {"schedulerName": OURS, "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                **_pod_spec(fragment, node)}
        created = fake_kube.create("", "v1", "pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "default"}, "spec": spec, "status": {"phase": "Pending"}}, namespace="default")
        uids[case] = (name, created["metadata"]["uid"])

    with extender_server(kube_url=fake_kube.url, args=mtls_args(certs)) as ext:
        answers = {}
        for case, (name, uid) in uids.items():
            status, _, body = mtls_post(ext.port, certs, "/scheduler/bind", orjson.dumps(
                {"PodName": name, "PodNamespace": "default", "PodUID": uid, "Node": node_of[case]}))
            assert status == 200
            answers[case] = orjson.loads(body)["Error"]

    for case, (_, _, expected) in CASES.items():
        name, _ = uids[case]
        bound_to = (fake_kube.get("", "v1", "pods", name, namespace="default")["spec"]).get("nodeName")
        if expected is None:
            assert answers[case] == "", (case, answers[case])
            assert bound_to == node_of[case], case
        else:
            wanted = f"pod default/{name} may not run there: node {node_of[case]} "
            assert answers[case].startswith(wanted), (case, answers[case])
            assert expected.replace("NODE", node_of[case]) in answers[case], (case, answers[case])
            assert bound_to is None, case
    refused = sum(1 for _, _, expected in CASES.values() if expected is not None)
    assert fake_kube.count("POST", r"/binding$") == len(CASES) - refused
