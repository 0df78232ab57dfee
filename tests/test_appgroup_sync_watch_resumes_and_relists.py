"""The long-running list + watch sync follows kubectl changes as they happen, resumes a finished
watch from its resourceVersion without re-listing, re-lists after 410 Gone, and recovers from an
API server outage without losing anything."""

from __future__ import annotations

import threading
import time

import pytest

from apps.appgroups import documents, sync
from apps.appgroups.models import AppGroup
from netaware_core import kube
from tests.support.appgroup_docs import G, P, V, wait_for
from tests.support.appgroup_docs import small_appgroup as _doc

pytestmark = pytest.mark.django_db(transaction=True)

LIST_PATH = r"^/apis/netaware\.io/v1alpha1/appgroups$"


def _wait_for(predicate, timeout: float = 60.0) -> bool:
    return wait_for(predicate, timeout)


def _settled(fake, name: str) -> bool:
    cr = fake.get(G, V, P, name, "shop")
    spec_hash = documents.spec_hash(documents.spec_from_document(cr))
    return (cr["metadata"].get("annotations") or {}).get(sync.SYNCED_HASH_ANNOTATION) == spec_hash and (
        cr.get("status") or {}
    ).get("observedGeneration") == cr["metadata"]["generation"]


def _lists(fake) -> int:
    return sum(
        1
        for r in fake.requests
        if r.method == "GET"
        and r.path.endswith("/appgroups")
        and "watch" not in r.query
        and r.path.startswith("/apis/netaware.io/")
    )


def _watches(fake) -> list:
    return [
        r for r in fake.requests if r.query.get("watch") == "true" and r.path.startswith("/apis/netaware.io/")
    ]


@pytest.fixture
def watcher(fake_kube):
    stop = threading.Event()
    passes: list[sync.SyncReport] = []
    thread = threading.Thread(
        target=sync.watch,
        kwargs={"stop": stop, "watch_timeout": 1, "resync_seconds": 600, "on_pass": passes.append},
        daemon=True,
    )
    thread.start()
    assert _wait_for(lambda: passes and _watches(fake_kube))
    yield passes
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_watch_imports_kubectl_changes_resumes_and_relists_after_410(fake_kube, watcher):
    api = kube.custom_objects()
    api.create_namespaced_custom_object(G, V, "shop", P, _doc("first"))
    assert _wait_for(lambda: AppGroup.objects.filter(name="first").exists())
    assert _lists(fake_kube) == 1  # delivered by the watch, not by a re-list

    # a finished watch (timeoutSeconds=1) is resumed from the last resourceVersion, not re-listed
    seen = len(_watches(fake_kube))
    assert _wait_for(lambda: len(_watches(fake_kube)) >= seen + 2)
    assert _lists(fake_kube) == 1
    last = _watches(fake_kube)[-1]
    assert int(last.query["resourceVersion"]) > 100

    # edits flow through the watch too
    live = api.get_namespaced_custom_object(G, V, "shop", P, "first")
    live["spec"]["workloads"][0]["weight"] = 0.25
    api.replace_namespaced_custom_object(G, V, "shop", P, "first", live)
    assert _wait_for(lambda: AppGroup.objects.get(name="first").workloads.get(name="web").weight == 0.25)
    assert _wait_for(lambda: _settled(fake_kube, "first"))  # the sync's own follow-up writes are done

    # history compacted past the watcher's version: the next watch gets 410 and the loop re-lists
    for i in range(3):
        fake_kube.add_pod("other", f"filler-{i}")  # moves the global resourceVersion on
    fake_kube.compact()
    assert _wait_for(lambda: _lists(fake_kube) == 2)
    api.create_namespaced_custom_object(G, V, "shop", P, _doc("second"))
    assert _wait_for(lambda: AppGroup.objects.filter(name="second").exists())
    assert len(watcher) == 2


def test_watch_survives_an_api_server_outage(fake_kube, watcher):
    watches = fake_kube.count("GET", "/appgroups")
    fake_kube.down()
    time.sleep(1.5)  # the watch breaks; resuming it fails while the API server is away (backing off)
    assert AppGroup.objects.count() == 0
    fake_kube.create(G, V, P, _doc("after-outage"), namespace="shop")  # written while we were cut off
    fake_kube.up()
    # The watch resumes from its resourceVersion and delivers what happened meanwhile.
    assert _wait_for(lambda: AppGroup.objects.filter(name="after-outage").exists(), timeout=40)
    assert fake_kube.count("GET", "/appgroups") > watches
    assert all(report.ok for report in watcher)
