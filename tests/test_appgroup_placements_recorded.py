"""record_placement finds the pod's AppGroup workload by selector (honouring AppGroup labels), is
idempotent, and the selectors expose placements in ClusterState's shape."""

import pytest

from apps.appgroups import documents, selectors, services
from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.appgroups.models import Placement

pytestmark = pytest.mark.django_db


def make_spec(name, namespace="default", app_prefix=""):
    return AppGroupSpec(
        namespace=namespace,
        name=name,
        workloads=(
            WorkloadSpec(
                name="web",
                selector=LabelSelector({"app": f"{app_prefix}web"}),
                dependencies=(DependencySpec("db", Sensitivity(1, 0, 0)),),
            ),
            WorkloadSpec(name="db", selector=LabelSelector({"app": f"{app_prefix}db"}), weight=0.5),
        ),
    )


@pytest.fixture
def groups():
    first = services.upsert_appgroup_from_spec(spec=make_spec("alpha"), origin="netaware")
    # Same selectors in a second AppGroup of the namespace: only the AppGroup label disambiguates.
    second = services.upsert_appgroup_from_spec(spec=make_spec("beta"), origin="cluster")
    return first, second


def record(**kwargs):
    base = {"pod_namespace": "default", "pod_uid": "uid-1", "node_name": "n1", "source": "extender"}
    base.update(kwargs)
    return services.record_placement(**base)


def test_records_and_is_idempotent(groups):
    first = record(pod_name="web-1", labels={"app": "web"})
    assert first is not None and first.workload.name == "web" and first.appgroup.name == "alpha"
    bound_at = first.bound_at
    again = record(pod_name="web-1", labels={"app": "web"})
    assert again.pk == first.pk and again.bound_at == bound_at
    assert Placement.objects.count() == 1
    moved = record(pod_name="web-1", pod_uid="uid-2", node_name="n2", labels={"app": "web"}, source="watcher")
    assert moved.pk == first.pk and moved.node_name == "n2" and moved.bound_at >= bound_at


def test_appgroup_labels_are_honoured(groups):
    ours = record(pod_name="db-1", labels={"app": "db", documents.APPGROUP_LABEL: "beta"})
    assert ours.appgroup.name == "beta" and ours.workload.name == "db"
    diktyo = record(pod_name="db-2", labels={"app": "db", documents.DIKTYO_APPGROUP_LABEL: "beta"})
    assert diktyo.appgroup.name == "beta"
    assert record(pod_name="db-3", labels={"app": "db", documents.APPGROUP_LABEL: "missing"}) is None


def test_pod_outside_any_appgroup(groups):
    assert record(pod_name="x", labels={"app": "other"}) is None
    assert record(pod_name="web-9", pod_namespace="elsewhere", labels={"app": "web"}) is None
    # A pod relabelled out of its workload loses its placement.
    record(pod_name="web-1", labels={"app": "web"})
    assert record(pod_name="web-1", labels={"app": "nothing"}) is None
    assert not Placement.objects.filter(pod_name="web-1").exists()


def test_diktyo_workload_label_matches_imported_workload():
    doc = documents.document_from_spec(make_spec("gamma"), flavor="diktyo")
    del doc["metadata"][
        "annotations"
    ]  # plain scheduler-plugins resource: selectors come from the workload label
    services.import_document(document=doc, origin="cluster")
    placement = record(
        pod_name="db-7",
        labels={documents.DIKTYO_APPGROUP_LABEL: "gamma", documents.DIKTYO_WORKLOAD_LABEL: "db"},
    )
    assert placement.workload.name == "db" and placement.appgroup.origin == "cluster"


def test_remove_and_selectors(groups):
    record(pod_name="web-1", labels={"app": "web"}, node_name="n1")
    record(pod_name="web-2", labels={"app": "web"}, node_name="n2")
    record(pod_name="db-1", labels={"app": "db", documents.APPGROUP_LABEL: "beta"}, node_name="n3")
    assert selectors.placements_by_workload() == {
        ("default", "alpha", "web"): ("n1", "n2"),
        ("default", "beta", "db"): ("n3",),
    }
    alpha = selectors.get_appgroup(namespace="default", name="alpha")
    assert selectors.appgroup_placements(appgroup=alpha) == {
        "web": [{"pod": "web-1", "node": "n1"}, {"pod": "web-2", "node": "n2"}]
    }
    assert services.remove_placement(pod_namespace="default", pod_name="web-1") is True
    assert services.remove_placement(pod_namespace="default", pod_name="web-1") is False
    assert selectors.placements_by_workload()[("default", "alpha", "web")] == ("n2",)


def test_specs_round_trip_through_the_database(groups):
    specs = selectors.all_appgroup_specs()
    assert [s.name for s in specs] == ["alpha", "beta"]
    assert specs[0] == make_spec("alpha")
    assert selectors.topology_order(appgroup=groups[0]) == ["web", "db"]
    assert groups[0].spec_hash == documents.spec_hash(make_spec("alpha"))


def test_upsert_validates_and_rolls_back(groups):
    bad = AppGroupSpec(
        namespace="default",
        name="alpha",
        workloads=(
            WorkloadSpec(
                name="web",
                selector=LabelSelector({"app": "web"}),
                dependencies=(DependencySpec("web", Sensitivity(1, 0, 0)),),
            ),
        ),
    )
    with pytest.raises(services.AppGroupValidationError) as info:
        services.upsert_appgroup_from_spec(spec=bad, origin="netaware")
    assert "spec.workloads[0].dependencies[0].name" in info.value.errors
    assert selectors.appgroup_spec(appgroup=groups[0]) == make_spec("alpha")
    with pytest.raises(services.AppGroupValidationError):
        services.upsert_appgroup_from_spec(spec=make_spec("alpha"), origin="somewhere")
    with pytest.raises(ValueError):
        record(pod_name="web-1", labels={"app": "web"}, source="guess")
