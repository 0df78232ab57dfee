"""One bad AppGroup gets the same error text from every entry point: the API's own document, the API
import, the dashboard's editor, the Django admin's change form and the cluster sync (fake Kubernetes
API). The expected text is what the one validator (``documents.spec_from_document``) says about the
document; each entry point must show exactly that, at the path of its own field."""

from __future__ import annotations

import copy
import html
import json
from collections.abc import Callable
from typing import Any

import pytest

from apps.appgroups import documents, services, sync
from apps.appgroups.choices import Origin
from apps.appgroups.models import AppGroup, Workload
from netaware_core import kube

pytestmark = pytest.mark.django_db

G, V, P = "netaware.io", "v1alpha1", "appgroups"
NAMESPACE, NAME = "shop", "store"


def good() -> dict[str, Any]:
    """web -> db, and a cache; selectors pinned so nothing overlaps anything else."""
    def selector(app: str) -> dict[str, Any]:
        return {"matchLabels": {"app": app, "netaware.io/appgroup": NAME}}

    return {
        "apiVersion": f"{G}/{V}", "kind": "AppGroup", "metadata": {"namespace": NAMESPACE, "name": NAME},
        "spec": {"topologySortingAlgorithm": "KahnSort", "topologyMode": "soft", "workloads": [
            {"name": "web", "selector": selector("web"), "weight": 1.0,
             "dependencies": [{"name": "db", "metrics": {"latency": 0.5, "bandwidth": 0.4, "lossrate": 0.1}}]},
            {"name": "db", "selector": selector("db"), "weight": 0.5},
            {"name": "cache", "selector": selector("cache"), "weight": 0.5},
        ]},
    }


def web(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["spec"]["workloads"][0]


# (case, mutation, our document's path, the API's path, a fragment saying which rule it is, the entry points
# that can carry it). The admin chooses a dependency's target among the AppGroup's workloads, so it cannot name
# an unknown one; the cluster's API server refuses what the CRD's schema refuses before any sync sees it.
ALL = ("api", "import", "editor", "admin", "sync")
CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str, str, tuple[str, ...]]] = [
    ("self dependency", lambda d: web(d)["dependencies"][0].update(name="web"),
     "spec.workloads[0].dependencies[0].name", "workloads[0].dependencies[0].target", "itself", ALL),
    ("zero sensitivity sum", lambda d: web(d)["dependencies"][0].update(metrics={"latency": 0, "bandwidth": 0, "lossrate": 0}),
     "spec.workloads[0].dependencies[0].metrics", "workloads[0].dependencies[0]", "positive sum", ALL),
    ("repeated dependency", lambda d: web(d)["dependencies"].append(copy.deepcopy(web(d)["dependencies"][0])),
     "spec.workloads[0].dependencies[1].name", "workloads[0].dependencies[1].target", "duplicate dependency", ALL),
    ("repeated workload name", lambda d: d["spec"]["workloads"][2].update(name="db"),
     "spec.workloads[2].name", "workloads[2].name", "duplicate workload name", ALL),
    ("empty In values", lambda d: web(d).update(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}),
     "spec.workloads[0].selector.matchExpressions[0].values", "workloads[0].selector.matchExpressions[0].values",
     "non-empty", ALL),
    ("bad cpu quantity", lambda d: web(d).update(resources={"cpu": "lots"}),
     "spec.workloads[0].resources.cpu", "workloads[0].cpu_request", "quantity", ALL),
    ("unknown dependency target", lambda d: web(d)["dependencies"][0].update(name="nowhere"),
     "spec.workloads[0].dependencies[0].name", "workloads[0].dependencies[0].target", "unknown dependency target",
     ("api", "import", "editor", "sync")),
    ("zero replicas", lambda d: web(d).update(replicas=0),
     "spec.workloads[0].replicas", "workloads[0].replicas", "greater than or equal to 1",
     ("api", "import", "editor", "admin")),
    ("negative weight", lambda d: d["spec"]["workloads"][1].update(weight=-0.5),
     "spec.workloads[1].weight", "workloads[1].weight", "greater than or equal to 0", ("api", "import", "editor", "admin")),
]


def bad(mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = good()
    mutate(doc)
    return doc


def api_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The same AppGroup in the API's own shape."""
    def workload(w: dict[str, Any]) -> dict[str, Any]:
        return {"name": w["name"], "selector": w["selector"], "weight": w.get("weight", 1.0),
                "replicas": w.get("replicas"), "cpu_request": (w.get("resources") or {}).get("cpu", ""),
                "dependencies": [{"target": d["name"], **{k: d["metrics"].get(k, 0) for k in ("latency", "bandwidth", "lossrate")}}
                                 for d in w.get("dependencies") or ()]}

    return {"namespace": doc["metadata"]["namespace"], "name": doc["metadata"]["name"],
            "topology_sorting_algorithm": doc["spec"]["topologySortingAlgorithm"],
            "topology_mode": doc["spec"]["topologyMode"], "workloads": [workload(w) for w in doc["spec"]["workloads"]]}


def admin_post(group: AppGroup, doc: dict[str, Any]) -> dict[str, Any]:
    """The admin change form of ``group`` edited into ``doc`` (workload rows matched by position)."""
    rows = list(Workload.objects.filter(appgroup=group).order_by("position"))
    workloads = doc["spec"]["workloads"]
    pk_of = {w["name"]: row.pk for w, row in zip(workloads, rows, strict=True)}
    data: dict[str, Any] = {"namespace": group.namespace, "name": group.name, "description": "",
                            "topology_sorting_algorithm": doc["spec"]["topologySortingAlgorithm"],
                            "topology_mode": doc["spec"]["topologyMode"],
                            "rebalance_mode": doc["spec"].get("rebalanceMode", "off"), "origin": Origin.NETAWARE}
    dependencies = [(w, d) for w in workloads for d in w.get("dependencies") or ()]
    for prefix, count, initial in (("workloads", len(workloads), len(rows)), ("dependencies", len(dependencies), 0)):
        data.update({f"{prefix}-TOTAL_FORMS": count, f"{prefix}-INITIAL_FORMS": initial,
                     f"{prefix}-MIN_NUM_FORMS": 0, f"{prefix}-MAX_NUM_FORMS": 1000})
    for i, (w, row) in enumerate(zip(workloads, rows, strict=True)):
        data.update({f"workloads-{i}-id": row.pk, f"workloads-{i}-appgroup": group.pk, f"workloads-{i}-name": w["name"],
                     f"workloads-{i}-position": i, f"workloads-{i}-selector": json.dumps(w["selector"]),
                     f"workloads-{i}-weight": w.get("weight", 1.0), f"workloads-{i}-controller_kind": "",
                     f"workloads-{i}-controller_name": "", f"workloads-{i}-replicas": w.get("replicas", ""),
                     f"workloads-{i}-cpu_request": (w.get("resources") or {}).get("cpu", ""),
                     f"workloads-{i}-memory_request": ""})
    for i, (w, d) in enumerate(dependencies):
        data.update({f"dependencies-{i}-appgroup": group.pk, f"dependencies-{i}-source": pk_of[w["name"]],
                     f"dependencies-{i}-target": pk_of[d["name"]], f"dependencies-{i}-position": i,
                     f"dependencies-{i}-max_network_cost": "", f"dependencies-{i}-min_bandwidth": "",
                     **{f"dependencies-{i}-{k}": d["metrics"].get(k, 0) for k in ("latency", "bandwidth", "lossrate")}})
    return data


def shown_by(entry: str, doc: dict[str, Any], api_path: str, doc_path: str, client: Any) -> str:
    """What ``entry`` says about ``doc``, as one text; asserts it refused the document at the right field."""
    if entry == "api":
        response = client.post("/api/appgroups/", data=api_document(doc), content_type="application/json")
        assert response.status_code == 400, response.content
        return "\n".join(response.json()["errors"][api_path])
    if entry == "import":
        response = client.post("/api/appgroups/import", data=doc, content_type="application/json")
        assert response.status_code == 400, response.content
        return "\n".join(response.json()["errors"][doc_path])
    if entry == "editor":
        response = client.post("/dashboard/data/appgroups/save", data={"document": doc}, content_type="application/json")
        assert response.status_code == 400, response.content
        return "\n".join(response.json()["errors"][doc_path])
    if entry == "admin":
        group = services.import_document(document=good(), origin=Origin.NETAWARE)
        response = client.post(f"/admin/appgroups/appgroup/{group.pk}/change/", admin_post(group, doc))
        assert response.status_code == 200, response.status_code  # the form again, not a redirect
        return html.unescape(response.content.decode())
    kube.custom_objects().create_namespaced_custom_object(G, V, NAMESPACE, P, doc)
    report = sync.sync_once()
    assert report.invalid == [f"{NAMESPACE}/{NAME}"], report.summary()
    (issue,) = sync.current_issues()
    return issue["message"]


@pytest.mark.parametrize(
    ("case", "mutate", "doc_path", "api_path", "rule", "entry"),
    [pytest.param(*case[:5], entry, id=f"{case[0]}-{entry}") for case in CASES for entry in case[5]],
)
def test_the_same_bad_document_gets_the_validators_words_from_every_entry_point(
        client, request, case, mutate, doc_path, api_path, rule, entry):
    if entry == "sync":
        request.getfixturevalue("fake_kube")
    doc = bad(mutate)
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(copy.deepcopy(doc))
    expected = info.value.errors[doc_path]
    assert rule in " ".join(expected)
    shown = shown_by(entry, doc, api_path, doc_path, client)
    for message in expected:
        needle = f"{doc_path}: {message}" if entry == "sync" else message  # the sync's one line names the path
        assert needle in shown, (entry, needle, shown[:3000])
    stored = AppGroup.objects.filter(namespace=NAMESPACE, name=NAME).first()
    assert stored is None or stored.spec_hash == documents.spec_hash(documents.spec_from_document(good()))
