"""The fake API server answers the real ``kubernetes`` client the way a real API server does.

These self-tests guard the other tests: if the fake drifted from the protocol (no 409 on a stale
resourceVersion, status writable through the main resource, watch not streaming), the sync and
extender tests built on it would prove nothing.
"""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from netaware_core import kube

G, V, P = "netaware.io", "v1alpha1", "appgroups"


def _appgroup(name: str, spec: dict | None = None, **extra) -> dict:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "AppGroup",
        "metadata": {"name": name},
        "spec": spec or {"a": 1},
        **extra,
    }


@pytest.fixture
def api(fake_kube):
    fake_kube.register(G, V, P, "AppGroup")  # schema-less: these tests exercise the protocol only
    return kube.custom_objects()


def test_stale_resource_version_gets_409_conflict_with_status_body(fake_kube, api):
    created = api.create_namespaced_custom_object(G, V, "default", P, _appgroup("ob"))
    first = dict(created, spec={"a": 2})
    updated = api.replace_namespaced_custom_object(G, V, "default", P, "ob", first)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert updated["metadata"]["generation"] == 2

    stale = dict(created, spec={"a": 3})  # still carries the old resourceVersion
    with pytest.raises(ApiException) as caught:
        api.replace_namespaced_custom_object(G, V, "default", P, "ob", stale)
    assert caught.value.status == 409
    body = kube.status_body(caught.value)
    assert body["kind"] == "Status" and body["reason"] == "Conflict" and body["code"] == 409
    assert "the object has been modified" in body["message"]
    assert kube.is_retryable(caught.value)
    assert fake_kube.get(G, V, P, "ob", "default")["spec"] == {"a": 2}

    with pytest.raises(ApiException) as again:
        api.create_namespaced_custom_object(G, V, "default", P, _appgroup("ob"))
    assert again.value.status == 409 and kube.status_body(again.value)["reason"] == "AlreadyExists"

    with pytest.raises(ApiException) as missing:
        api.get_namespaced_custom_object(G, V, "default", P, "nope")
    assert missing.value.status == 404 and not kube.is_retryable(missing.value)


def test_status_subresource_is_separate_from_the_main_resource(fake_kube, api):
    created = api.create_namespaced_custom_object(G, V, "default", P, _appgroup("ob", status={"x": 1}))
    assert "status" not in created  # status is dropped on create

    with_status = api.patch_namespaced_custom_object_status(
        G, V, "default", P, "ob", {"status": {"order": ["a"]}}
    )
    assert with_status["status"] == {"order": ["a"]}
    assert with_status["metadata"]["generation"] == 1  # status writes never bump generation

    main_write = dict(with_status, spec={"a": 9}, status={"order": ["hijacked"]})
    after = api.replace_namespaced_custom_object(G, V, "default", P, "ob", main_write)
    assert after["status"] == {"order": ["a"]} and after["spec"] == {"a": 9}

    status_write = dict(after, spec={"a": 100}, status={"order": ["b"]})
    after_status = api.replace_namespaced_custom_object_status(G, V, "default", P, "ob", status_write)
    assert after_status["spec"] == {"a": 9} and after_status["status"] == {"order": ["b"]}

    rv = after_status["metadata"]["resourceVersion"]
    noop = api.replace_namespaced_custom_object_status(G, V, "default", P, "ob", after_status)
    assert noop["metadata"]["resourceVersion"] == rv  # an unchanged write is not a new version


def test_server_side_apply_creates_updates_and_reports_manager_conflicts(fake_kube, api):
    def apply(spec: dict, manager: str, force: bool = False):
        return api.patch_namespaced_custom_object(
            G,
            V,
            "default",
            P,
            "ob",
            _appgroup("ob", spec),
            field_manager=manager,
            force=force,
            _content_type="application/apply-patch+yaml",
        )

    apply({"a": 1}, "netaware", force=True)
    assert fake_kube.get(G, V, P, "ob", "default")["spec"] == {"a": 1}
    apply({"a": 2, "b": 1}, "netaware")
    apply({"b": 1}, "netaware")
    assert fake_kube.get(G, V, P, "ob", "default")["spec"] == {"b": 1}
    with pytest.raises(ApiException) as caught:
        apply({"c": 1}, "kubectl")
    assert (
        caught.value.status == 409 and 'conflict with "netaware"' in kube.status_body(caught.value)["message"]
    )
    apply({"c": 1}, "kubectl", force=True)
    assert fake_kube.get(G, V, P, "ob", "default")["spec"] == {"c": 1}


def test_watch_streams_events_resumes_and_answers_410_for_compacted_versions(fake_kube, api):
    api.create_namespaced_custom_object(G, V, "default", P, _appgroup("one"))
    listed = api.list_cluster_custom_object(G, V, P)
    rv = listed["metadata"]["resourceVersion"]
    assert [o["metadata"]["name"] for o in listed["items"]] == ["one"]

    def writer():
        time.sleep(0.2)
        api.create_namespaced_custom_object(G, V, "other", P, _appgroup("two"))
        api.patch_namespaced_custom_object(G, V, "default", P, "one", {"spec": {"a": 5}})
        api.delete_namespaced_custom_object(G, V, "other", P, "two")

    thread = threading.Thread(target=writer)
    thread.start()
    seen = []
    started = time.monotonic()
    w = watch.Watch()
    stream_seconds = 5
    for event in w.stream(api.list_cluster_custom_object, G, V, P, resource_version=rv, timeout_seconds=stream_seconds):
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        if len(seen) == 3:
            w.stop()
    thread.join()
    assert seen == [("ADDED", "two"), ("MODIFIED", "one"), ("DELETED", "two")]
    assert time.monotonic() - started < stream_seconds  # delivered as they happened, not at the stream's end

    # resuming from the last version sees only what came after it
    api.patch_namespaced_custom_object(G, V, "default", P, "one", {"spec": {"a": 6}})
    resumed = [
        e["type"]
        for e in watch.Watch().stream(
            api.list_namespaced_custom_object,
            G,
            V,
            "default",
            P,
            resource_version=w.resource_version,
            timeout_seconds=1,
        )
    ]
    assert resumed == ["MODIFIED"]

    fake_kube.compact()
    with pytest.raises(ApiException) as gone:
        list(
            watch.Watch().stream(
                api.list_cluster_custom_object, G, V, P, resource_version=rv, timeout_seconds=1
            )
        )
    assert gone.value.status == 410


def test_watch_honours_timeout_seconds(fake_kube, api):
    started = time.monotonic()
    # The server ends the stream itself (a hang would hit the client's own 30 s limit and raise).
    events = list(watch.Watch().stream(api.list_cluster_custom_object, G, V, P, timeout_seconds=1,
                                       _request_timeout=30))
    elapsed = time.monotonic() - started
    assert events == [] and elapsed >= 0.9


def test_nodes_pods_binding_and_events(fake_kube):
    core = kube.core_v1()
    fake_kube.add_node("n1", zone="A", region="r")
    fake_kube.add_node("n2", zone="B", region="r")
    fake_kube.add_pod("shop", "cart-1", labels={"app": "cart"})
    fake_kube.add_pod("shop", "web-1", labels={"app": "web"}, node="n2", phase="Running")
    fake_kube.add_pod("other", "db-1", labels={"app": "db"})

    assert [n.metadata.name for n in core.list_node().items] == ["n1", "n2"]
    assert core.read_node("n1").metadata.labels["topology.kubernetes.io/zone"] == "A"
    assert [p.metadata.name for p in core.list_namespaced_pod("shop").items] == ["cart-1", "web-1"]
    assert [
        p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector="app in (db,cart)").items
    ] == [
        "db-1",
        "cart-1",
    ]
    unbound = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=").items
    assert sorted(p.metadata.name for p in unbound) == ["cart-1", "db-1"]

    kube.bind_pod(namespace="shop", pod="cart-1", node="n1")
    assert core.read_namespaced_pod("cart-1", "shop").spec.node_name == "n1"
    with pytest.raises(ApiException) as bound:
        kube.bind_pod(namespace="shop", pod="cart-1", node="n2")
    assert bound.value.status == 409 and "already assigned" in kube.status_body(bound.value)["message"]
    assert fake_kube.get("", "v1", "pods", "cart-1", "shop")["spec"]["nodeName"] == "n1"

    core.create_namespaced_event(
        "shop",
        k8s.CoreV1Event(
            metadata=k8s.V1ObjectMeta(generate_name="cart-1."),
            involved_object=k8s.V1ObjectReference(kind="Pod", name="cart-1", namespace="shop"),
            reason="Scheduled",
            message="bound to n1",
            type="Normal",
        ),
    )
    assert [e["reason"] for e in fake_kube.events("shop", "cart-1")] == ["Scheduled"]
    assert len(core.list_namespaced_event("shop").items) == 1


def test_faults_errors_delays_and_downtime(fake_kube, api):
    api.create_namespaced_custom_object(G, V, "default", P, _appgroup("ob"))
    fake_kube.fail(500, path=r"/appgroups/ob$", method="GET", times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as caught:
            api.get_namespaced_custom_object(G, V, "default", P, "ob")
        assert caught.value.status == 500 and kube.is_retryable(caught.value)
    assert api.get_namespaced_custom_object(G, V, "default", P, "ob")["metadata"]["name"] == "ob"

    fake_kube.fail(429, path="appgroups", retry_after=1)
    with pytest.raises(ApiException) as throttled:
        api.list_cluster_custom_object(G, V, P)
    assert throttled.value.status == 429 and kube.retry_after_seconds(throttled.value) == 1.0

    fake_kube.slow(1.5, path="appgroups")
    with pytest.raises(Exception) as slow:
        api.list_cluster_custom_object(G, V, P, _request_timeout=(1, 0.3))
    assert kube.is_retryable(slow.value)

    fake_kube.down()
    with pytest.raises(Exception) as down:
        api.list_cluster_custom_object(G, V, P)
    assert kube.is_retryable(down.value)
    fake_kube.up()
    assert len(api.list_cluster_custom_object(G, V, P)["items"]) == 1  # state survived the outage
    assert fake_kube.count("GET", r"/appgroups/ob$") == 3


def test_retry_backs_off_on_retryable_errors_and_stops_on_permanent_ones(fake_kube, api):
    api.create_namespaced_custom_object(G, V, "default", P, _appgroup("ob"))
    fake_kube.fail(503, path=r"/appgroups/ob$", times=2)
    sleeps: list[float] = []
    got = kube.retry(
        lambda: api.get_namespaced_custom_object(G, V, "default", P, "ob"),
        attempts=3,
        base_delay=0.01,
        sleep=sleeps.append,
    )
    assert got["metadata"]["name"] == "ob" and len(sleeps) == 2

    fake_kube.fail(503, path=r"/appgroups/ob$", times=5)
    with pytest.raises(ApiException):
        kube.retry(
            lambda: api.get_namespaced_custom_object(G, V, "default", P, "ob"), attempts=3, base_delay=0.01
        )

    calls = []

    def missing():
        calls.append(1)
        return api.get_namespaced_custom_object(G, V, "default", P, "nope")

    fake_kube.clear_faults()
    with pytest.raises(ApiException):
        kube.retry(missing, attempts=5, base_delay=0.01)
    assert len(calls) == 1  # 404 is permanent: no retry


def test_crd_schema_is_enforced_with_a_field_error(fake_kube):
    fake_kube.register_crd(
        {
            "spec": {
                "group": "example.io",
                "names": {"plural": "widgets", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "subresources": {"status": {}},
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "required": ["size"],
                                        "properties": {
                                            "size": {"type": "integer", "minimum": 0},
                                            "color": {"type": "string", "default": "blue"},
                                        },
                                    }
                                },
                            }
                        },
                    }
                ],
            }
        }
    )
    api = kube.custom_objects()
    ok = {
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1, "x": 1},
    }
    created = api.create_namespaced_custom_object("example.io", "v1", "default", "widgets", ok)
    assert created["spec"] == {"size": 1, "color": "blue"}  # unknown field pruned, default filled in
    same = api.replace_namespaced_custom_object(
        "example.io", "v1", "default", "widgets", "w", dict(created, extra=1)
    )
    assert (
        same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"] and "extra" not in same
    )
    bad = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": {"size": -1}}
    with pytest.raises(ApiException) as caught:
        api.create_namespaced_custom_object("example.io", "v1", "default", "widgets", bad)
    body = kube.status_body(caught.value)
    assert caught.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "spec.size"


def test_core_watches_deliver_typed_pods_and_nodes(fake_kube):
    core = kube.core_v1()
    fake_kube.add_node("n1", zone="A")
    fake_kube.add_pod("shop", "web-1", labels={"app": "web"})
    listed = core.list_pod_for_all_namespaces()
    rv = listed.metadata.resource_version

    def later():
        time.sleep(0.2)
        kube.bind_pod(namespace="shop", pod="web-1", node="n1")
        fake_kube.remove("", "v1", "pods", "web-1", "shop")

    thread = threading.Thread(target=later)
    thread.start()
    events = []
    w = watch.Watch()
    for event in w.stream(core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=3):
        events.append((event["type"], event["object"].metadata.name, event["object"].spec.node_name))
        if len(events) == 2:
            w.stop()
    thread.join()
    assert events == [("MODIFIED", "web-1", "n1"), ("DELETED", "web-1", "n1")]

    nodes = [e["object"] for e in watch.Watch().stream(core.list_node, timeout_seconds=1)]
    assert [n.metadata.name for n in nodes] == ["n1"] and nodes[0].status.allocatable["cpu"] == "4"
