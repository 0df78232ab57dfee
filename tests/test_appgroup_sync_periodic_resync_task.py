"""The periodic resync is seeded as a django-celery-beat schedule, runs in a real Celery worker and
converges both sides; the management command runs one pass and reports an incomplete one."""

from __future__ import annotations

import json
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django_celery_beat.models import PeriodicTask

from apps.appgroups import documents, services, tasks
from apps.appgroups.choices import Origin
from apps.appgroups.models import AppGroup
from netaware_core import kube
from tests.support.appgroup_docs import G, P, V, small_appgroup


def _doc(name: str, namespace: str = "shop") -> dict:
    return small_appgroup(name, namespace, bandwidth=1)


@pytest.mark.django_db
def test_resync_and_publish_schedules_are_seeded():
    resync = PeriodicTask.objects.get(task="apps.appgroups.tasks.resync_cluster")
    publish = PeriodicTask.objects.get(task="apps.topology.tasks.publish_network_topology")
    assert resync.enabled and resync.interval.every == 60 and resync.interval.period == "seconds"
    assert publish.enabled and publish.interval.every == 60


def test_resync_task_in_a_real_worker_converges_both_sides(fake_kube, celery_worker_thread):
    kube.custom_objects().create_namespaced_custom_object(G, V, "shop", P, _doc("from-kubectl"))
    services.import_document(document=_doc("from-netaware", "default"), origin=Origin.NETAWARE)

    tasks.resync_cluster.delay()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if AppGroup.objects.filter(name="from-kubectl").exists() and fake_kube.get(
            G, V, P, "from-netaware", "default"
        ):
            break
        time.sleep(0.1)
    assert AppGroup.objects.get(name="from-kubectl").origin == Origin.CLUSTER
    cr = fake_kube.get(G, V, P, "from-netaware", "default")
    assert cr is not None and cr["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "netaware"
    assert (
        cr["spec"]
        == documents.document_from_spec(documents.spec_from_document(_doc("from-netaware", "default")))[
            "spec"
        ]
    )


@pytest.mark.django_db
def test_sync_command_once_reports_the_pass_and_fails_when_incomplete(fake_kube):
    kube.custom_objects().create_namespaced_custom_object(G, V, "shop", P, _doc("store"))
    out = StringIO()
    call_command("sync_appgroups", "--once", stdout=out)
    assert json.loads(out.getvalue())["imported"] == ["shop/store"]

    fake_kube.down()
    with pytest.raises(CommandError, match="sync pass incomplete"):
        call_command("sync_appgroups", "--once", stdout=StringIO())
    assert AppGroup.objects.filter(name="store").exists()

    with pytest.raises(CommandError, match="--resync"):
        call_command("sync_appgroups", "--resync", "0")


@pytest.mark.django_db
def test_without_any_kubernetes_api_the_command_says_so(settings, monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": ""}
    kube.reset_clients()
    with pytest.raises(CommandError, match="no Kubernetes API configured"):
        call_command("sync_appgroups", "--once", stdout=StringIO())
    assert "skipped" in tasks.resync_cluster()
    kube.reset_clients()
