"""Every AppGroup rule the database can express is held twice: the document validator refuses the
document (what users meet, from every entry point) and ``Meta.constraints`` refuse the row (the last
line of defence behind ``services.save_appgroup``). Selector rules, which the database cannot state,
are the validator's alone; a placement's workload must belong to its AppGroup."""

import copy

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.appgroups import documents
from apps.appgroups.models import AppGroup, Dependency, Placement, Workload

pytestmark = pytest.mark.django_db

DOC = {
    "apiVersion": "netaware.io/v1alpha1", "kind": "AppGroup", "metadata": {"namespace": "default", "name": "shop"},
    "spec": {"workloads": [
        {"name": "a", "selector": {"matchLabels": {"app": "a"}},
         "dependencies": [{"name": "b", "metrics": {"latency": 1, "bandwidth": 0, "lossrate": 0}}]},
        {"name": "b", "selector": {"matchLabels": {"app": "b"}}},
    ]},
}


@pytest.fixture
def group():
    return AppGroup.objects.create(namespace="default", name="shop")


def workload(group, name, **kwargs):
    kwargs.setdefault("selector", {"matchLabels": {"app": name}})
    return Workload.objects.create(appgroup=group, name=name, **kwargs)


def refused(mutate):
    """The validator's errors for DOC changed by ``mutate``."""
    doc = copy.deepcopy(DOC)
    mutate(doc)
    with pytest.raises(documents.DocumentError) as info:
        documents.spec_from_document(doc)
    return info.value.errors


def a(doc):
    return doc["spec"]["workloads"][0]


@pytest.mark.parametrize(("mutate", "path", "write"), [
    (lambda d: a(d).update(weight=-0.5), "spec.workloads[0].weight",
     lambda g: workload(g, "w", weight=-0.5)),
    (lambda d: a(d).update(replicas=0), "spec.workloads[0].replicas",
     lambda g: workload(g, "w", replicas=0)),
    (lambda d: d["spec"]["workloads"][1].update(name="a"), "spec.workloads[1].name",
     lambda g: (workload(g, "a"), workload(g, "a"))),
    (lambda d: a(d)["dependencies"][0].update(name="a"), "spec.workloads[0].dependencies[0].name",
     lambda g: Dependency.objects.create(appgroup=g, source=(w := workload(g, "a")), target=w, latency=1, bandwidth=0,
                                         lossrate=0)),
    (lambda d: a(d)["dependencies"].append(copy.deepcopy(a(d)["dependencies"][0])), "spec.workloads[0].dependencies[1].name",
     lambda g: [Dependency.objects.create(appgroup=g, source=s, target=t, latency=1, bandwidth=0, lossrate=0)
                for s, t in [(workload(g, "a"), workload(g, "b"))] * 2]),
    (lambda d: a(d)["dependencies"][0].update(metrics={"latency": 0, "bandwidth": 0}), "spec.workloads[0].dependencies[0].metrics",
     lambda g: Dependency.objects.create(appgroup=g, source=workload(g, "a"), target=workload(g, "b"), latency=0,
                                         bandwidth=0, lossrate=0)),
    (lambda d: a(d)["dependencies"][0]["metrics"].update(latency=-1, bandwidth=2), "spec.workloads[0].dependencies[0].metrics.latency",
     lambda g: Dependency.objects.create(appgroup=g, source=workload(g, "a"), target=workload(g, "b"), latency=-1,
                                         bandwidth=2, lossrate=0)),
    (lambda d: a(d)["dependencies"][0].update(maxNetworkCost=10001), "spec.workloads[0].dependencies[0].maxNetworkCost",
     lambda g: Dependency.objects.create(appgroup=g, source=workload(g, "a"), target=workload(g, "b"), latency=1,
                                         bandwidth=0, lossrate=0, max_network_cost=10001)),
    (lambda d: a(d)["dependencies"][0].update(weight=0), "spec.workloads[0].dependencies[0].weight",
     lambda g: Dependency.objects.create(appgroup=g, source=workload(g, "a"), target=workload(g, "b"), latency=1,
                                         bandwidth=0, lossrate=0, weight=0)),
    (lambda d: d["spec"].update(topologyMode="galaxy"), "spec.topologyMode",
     lambda g: AppGroup.objects.create(namespace="default", name="odd", topology_mode="galaxy")),
    (lambda d: d["spec"].update(topologySortingAlgorithm="Random"), "spec.topologySortingAlgorithm",
     lambda g: AppGroup.objects.create(namespace="default", name="odd", topology_sorting_algorithm="Random")),
])
def test_the_validator_and_the_database_refuse_the_same_rule(group, mutate, path, write):
    assert path in refused(mutate)
    with pytest.raises(IntegrityError), transaction.atomic():
        write(group)


@pytest.mark.parametrize(("selector", "path", "fragment"), [
    ({}, "", "must not be empty"),
    ({"matchLabels": {}}, "", "must not be empty"),
    ({"matchLabels": {"bad key!": "x"}}, ".matchLabels.bad key!", "name part"),
    ({"matchLabels": {"app": "-x"}}, ".matchLabels.app", "should match"),  # the CRD states label values
    ({"matchExpressions": [{"key": "app", "operator": "Like", "values": ["a"]}]}, ".matchExpressions[0].operator",
     "supported values"),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}, ".matchExpressions[0].values", "non-empty"),
    ({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]}, ".matchExpressions[0].values",
     "must be empty"),
    ({"matchLabels": {"a" * 64: "x"}}, ".matchLabels." + "a" * 64, "longer than 63"),
    ({"matchLabels": {"Bad_Prefix/app": "x"}}, ".matchLabels.Bad_Prefix/app", "prefix"),
    ("", "", "must not be empty"),
    ("   ", "", "must not be empty"),
    ("app=a,app=b", "", "conflicts"),
    ({"selector": "x"}, ".selector", "unknown selector field"),
])
def test_invalid_selectors_are_refused_by_the_validator_with_their_path(selector, path, fragment):
    errors = refused(lambda d: a(d).update(selector=selector))
    where = f"spec.workloads[0].selector{path}"
    assert where in errors, errors
    assert fragment in " ".join(errors[where])


def test_paper_string_selector_is_normalized():
    spec = documents.spec_from_document({**DOC, "spec": {"workloads": [
        {"name": "frontend", "selector": "app=frontend,tier in (web, edge),!canary"}]}})
    assert documents.label_selector_to_mapping(spec.workloads[0].selector) == {
        "matchLabels": {"app": "frontend"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web", "edge"]},
            {"key": "canary", "operator": "DoesNotExist", "values": []},
        ],
    }


def test_names_and_quantities_are_refused_by_the_validator():
    errors = refused(lambda d: d["metadata"].update(name="UPPER", namespace="Bad_NS"))
    assert {"metadata.name", "metadata.namespace"} == set(errors)
    assert "spec.workloads[0].name" in refused(lambda d: a(d).update(name="Bad Name"))
    errors = refused(lambda d: a(d).update(resources={"cpu": "lots", "memory": "-1"}))
    assert {"spec.workloads[0].resources.cpu", "spec.workloads[0].resources.memory"} <= set(errors)
    errors = refused(lambda d: a(d)["dependencies"][0].update(minBandwidth="fast"))
    assert "spec.workloads[0].dependencies[0].minBandwidth" in errors


def test_placement_workload_must_belong_to_appgroup(group):
    other = AppGroup.objects.create(namespace="default", name="other")
    foreign = workload(other, "x")
    with pytest.raises(ValidationError) as info:
        Placement(pod_namespace="default", pod_name="p", node_name="n1", appgroup=group, workload=foreign).full_clean()
    assert "workload" in info.value.message_dict
    Placement.objects.create(
        pod_namespace="default", pod_name="p", node_name="n1", appgroup=other, workload=foreign
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Placement.objects.create(
            pod_namespace="default", pod_name="p", node_name="n2", appgroup=other, workload=foreign
        )
