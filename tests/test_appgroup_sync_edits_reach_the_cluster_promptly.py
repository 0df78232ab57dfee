"""An AppGroup created, edited or deleted through netaware reaches the cluster within seconds, through
the ``sync_appgroup`` task a real Celery worker runs after the commit — no sync pass by hand, no
waiting for the periodic resync. A broker that is down never fails the save."""

from __future__ import annotations

import ast
import json

import pytest
import redis
from django.db import transaction

from apps.appgroups import documents, services
from apps.appgroups.choices import Origin
from apps.appgroups.models import AppGroup, AppGroupTombstone
from netaware_core import kube
from netaware_site.celery import app as celery_app
from tests.support.appgroup_docs import G, P, V, wait_for
from tests.support.appgroup_docs import small_appgroup as _small_appgroup


def _doc(name: str, *, weight: float = 1.0) -> dict:
    return _small_appgroup(name, weight=weight)


def _weight(cr: dict | None) -> float | None:
    return cr["spec"]["workloads"][0]["weight"] if cr else None


def test_api_create_edit_and_delete_reach_the_fake_cluster_through_the_worker(
    fake_kube, celery_worker_thread, client
):
    response = client.post("/api/appgroups/import", data=_doc("store"), content_type="application/json")
    assert response.status_code == 201, response.content
    pk = response.json()["id"]
    assert wait_for(lambda: fake_kube.get(G, V, P, "store", "shop") is not None)
    cr = fake_kube.get(G, V, P, "store", "shop")
    assert cr["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "netaware"
    assert wait_for(lambda: AppGroup.objects.get(pk=pk).resource_version != "")

    document = client.get(f"/api/appgroups/{pk}").json()
    document["workloads"][0]["weight"] = 0.25
    response = client.put(f"/api/appgroups/{pk}", data=document, content_type="application/json")
    assert response.status_code == 200, response.content
    assert wait_for(lambda: _weight(fake_kube.get(G, V, P, "store", "shop")) == 0.25)
    assert documents.spec_hash(
        documents.spec_from_document(fake_kube.get(G, V, P, "store", "shop"))
    ) == documents.spec_hash(documents.spec_from_document(_doc("store", weight=0.25)))

    assert client.delete(f"/api/appgroups/{pk}").status_code == 204
    assert wait_for(lambda: fake_kube.get(G, V, P, "store", "shop") is None)
    assert wait_for(lambda: not AppGroupTombstone.objects.exists())
    assert fake_kube.count("POST", r"/appgroups$") == 1  # created once, by the task


def test_nothing_is_enqueued_for_changes_that_do_not_commit(fake_kube, celery_worker_thread):
    with pytest.raises(RuntimeError), transaction.atomic():
        services.import_document(document=_doc("rolled-back"), origin=Origin.NETAWARE)
        raise RuntimeError("abort")
    services.import_document(document=_doc("committed"), origin=Origin.NETAWARE)
    assert wait_for(lambda: fake_kube.get(G, V, P, "committed", "shop") is not None)
    assert fake_kube.get(G, V, P, "rolled-back", "shop") is None
    assert fake_kube.count("GET", r"/appgroups/rolled-back$") == 0  # no task ever ran for it


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_is_down_never_fails_the_save(fake_kube, monkeypatch, caplog):
    # A real broker outage: the producer connects to a port where nothing listens.
    monkeypatch.setattr(celery_app.conf, "broker_url", "redis://127.0.0.1:1/0")
    celery_app._after_fork()  # drop cached connection/producer pools (what Celery does in a child)
    try:
        appgroup = services.import_document(document=_doc("offline"), origin=Origin.NETAWARE)
    finally:
        monkeypatch.undo()
        celery_app._after_fork()  # never hand the dead-broker pools to the next test
    assert AppGroup.objects.filter(pk=appgroup.pk).exists()
    assert "could not enqueue the sync of AppGroup shop/offline" in caplog.text
    assert fake_kube.get(G, V, P, "offline", "shop") is None  # left for the periodic resync


@pytest.mark.django_db(transaction=True)
def test_without_a_kubernetes_api_nothing_is_enqueued(settings, monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": ""}
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    assert not kube.configured()
    services.import_document(document=_doc("local"), origin=Origin.NETAWARE)
    assert queued_syncs(broker, settings) == []

    settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": "http://127.0.0.1:1"}
    services.import_document(document=_doc("local", weight=2.0), origin=Origin.NETAWARE)
    assert queued_syncs(broker, settings) == [(("shop", "local"), services.SYNC_TASK_EXPIRES > 0)]


def queued_syncs(broker, settings) -> list[tuple]:
    """Sync requests waiting on the (real) broker's queue: (args, has an expiry)."""
    out = []
    for raw in broker.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1):
        headers = json.loads(raw)["headers"]
        if headers["task"] == services.SYNC_TASK:
            out.append((tuple(ast.literal_eval(headers["argsrepr"])), bool(headers.get("expires"))))
    return out
