"""AppGroup, Workload, Dependency and Placement reject bad data in full_clean() and in the database."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.appgroups.models import AppGroup, Dependency, Placement, Workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def group():
    return AppGroup.objects.create(namespace="default", name="shop")


def workload(group, name, **kwargs):
    kwargs.setdefault("selector", {"matchLabels": {"app": name}})
    return Workload.objects.create(appgroup=group, name=name, **kwargs)


def errors_of(instance):
    with pytest.raises(ValidationError) as info:
        instance.full_clean()
    return info.value.message_dict


def test_valid_graph_passes(group):
    a, b = workload(group, "a"), workload(group, "b")
    dep = Dependency(
        appgroup=group, source=a, target=b, latency=0.7, bandwidth=0.2, lossrate=0.1, min_bandwidth="100M"
    )
    dep.full_clean()
    dep.save()
    assert dep.min_bandwidth_bps == 1e8


def test_paper_string_selector_is_normalized(group):
    w = Workload(appgroup=group, name="frontend", selector="app=frontend,tier in (web, edge),!canary")
    w.full_clean()
    assert w.selector == {
        "matchLabels": {"app": "frontend"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web", "edge"]},
            {"key": "canary", "operator": "DoesNotExist", "values": []},
        ],
    }


@pytest.mark.parametrize(
    "selector,fragment",
    [
        ({}, "cannot be blank"),
        ({"matchLabels": {}}, "must not be empty"),
        ({"matchLabels": {"bad key!": "x"}}, "matchLabels.bad key!"),
        ({"matchLabels": {"app": "-x"}}, "label value"),
        ({"matchExpressions": [{"key": "app", "operator": "Like", "values": ["a"]}]}, "operator"),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}, "non-empty"),
        ({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]}, "must be empty"),
        ({"matchLabels": {"a" * 64: "x"}}, "longer than 63"),
        ({"matchLabels": {"Bad_Prefix/app": "x"}}, "prefix"),
        ("", "cannot be blank"),
        ("   ", "must not be empty"),
        ({"selector": "x"}, "unknown selector field"),
    ],
)
def test_invalid_selector_is_a_field_error(group, selector, fragment):
    errors = errors_of(Workload(appgroup=group, name="w", selector=selector))
    assert "selector" in errors
    assert fragment in errors["selector"][0]


def test_negative_weight_rejected_by_clean_and_database(group):
    assert "weight" in errors_of(Workload(appgroup=group, name="w", selector="app=w", weight=-1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Workload.objects.create(appgroup=group, name="w", selector={"matchLabels": {"app": "w"}}, weight=-0.5)


def test_duplicate_workload_name_rejected(group):
    workload(group, "a")
    assert "__all__" in errors_of(Workload(appgroup=group, name="a", selector="app=a"))
    with pytest.raises(IntegrityError), transaction.atomic():
        workload(group, "a")


def test_bad_quantities_and_names(group):
    errors = errors_of(
        Workload(appgroup=group, name="Bad Name", selector="app=x", cpu_request="lots", memory_request="-1")
    )
    assert {"name", "cpu_request", "memory_request"} <= set(errors)


def test_self_dependency_rejected(group):
    a = workload(group, "a")
    errors = errors_of(Dependency(appgroup=group, source=a, target=a, latency=1, bandwidth=0, lossrate=0))
    assert "cannot depend on itself" in " ".join(errors["target"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Dependency.objects.create(appgroup=group, source=a, target=a, latency=1, bandwidth=0, lossrate=0)


def test_target_in_another_appgroup_is_unknown(group):
    other = AppGroup.objects.create(namespace="default", name="other")
    a, foreign = workload(group, "a"), workload(other, "b")
    errors = errors_of(
        Dependency(appgroup=group, source=a, target=foreign, latency=1, bandwidth=0, lossrate=0)
    )
    assert "Unknown dependency target" in errors["target"][0]


def test_zero_sensitivity_sum_rejected(group):
    a, b = workload(group, "a"), workload(group, "b")
    errors = errors_of(Dependency(appgroup=group, source=a, target=b, latency=0, bandwidth=0, lossrate=0))
    assert "positive sum" in " ".join(errors["__all__"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Dependency.objects.create(appgroup=group, source=a, target=b, latency=0, bandwidth=0, lossrate=0)


def test_negative_sensitivity_and_cost_range(group):
    a, b = workload(group, "a"), workload(group, "b")
    errors = errors_of(
        Dependency(
            appgroup=group, source=a, target=b, latency=-1, bandwidth=1, lossrate=0, max_network_cost=10001
        )
    )
    assert {"latency", "max_network_cost"} <= set(errors)
    with pytest.raises(IntegrityError), transaction.atomic():
        Dependency.objects.create(appgroup=group, source=a, target=b, latency=-1, bandwidth=2, lossrate=0)


def test_duplicate_dependency_rejected(group):
    a, b = workload(group, "a"), workload(group, "b")
    Dependency.objects.create(appgroup=group, source=a, target=b, latency=1, bandwidth=0, lossrate=0)
    assert "__all__" in errors_of(
        Dependency(appgroup=group, source=a, target=b, latency=1, bandwidth=0, lossrate=0)
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Dependency.objects.create(appgroup=group, source=a, target=b, latency=1, bandwidth=0, lossrate=0)


def test_bad_min_bandwidth(group):
    a, b = workload(group, "a"), workload(group, "b")
    errors = errors_of(
        Dependency(
            appgroup=group, source=a, target=b, latency=1, bandwidth=0, lossrate=0, min_bandwidth="fast"
        )
    )
    assert "min_bandwidth" in errors


def test_appgroup_name_namespace_algorithm(group):
    errors = errors_of(AppGroup(namespace="Bad_NS", name="UPPER", topology_sorting_algorithm="Random"))
    assert {"namespace", "name", "topology_sorting_algorithm"} <= set(errors)
    assert "__all__" in errors_of(AppGroup(namespace="default", name="shop"))


def test_placement_workload_must_belong_to_appgroup(group):
    other = AppGroup.objects.create(namespace="default", name="other")
    foreign = workload(other, "x")
    errors = errors_of(
        Placement(pod_namespace="default", pod_name="p", node_name="n1", appgroup=group, workload=foreign)
    )
    assert "workload" in errors
    Placement.objects.create(
        pod_namespace="default", pod_name="p", node_name="n1", appgroup=other, workload=foreign
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Placement.objects.create(
            pod_namespace="default", pod_name="p", node_name="n2", appgroup=other, workload=foreign
        )
