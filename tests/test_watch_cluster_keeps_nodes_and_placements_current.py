"""``watch_cluster`` lists and watches nodes and pods from the (fake) Kubernetes API: Node rows,
the pod cache and AppGroup placements follow the cluster, through watch resumes and a 410 Gone."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from itertools import pairwise

import pytest
from django.core.management import call_command

from apps.appgroups.models import Placement
from apps.demo.kubeapi import FakeKube
from apps.scheduler import selectors
from apps.scheduler.management.commands.watch_cluster import ClusterWatcher
from apps.scheduler.models import ObservedPod
from apps.topology.models import Node
from netaware_core import kube as kube_client
from tests.support.extender_wire import save_boutique


@pytest.fixture
def fake(settings):
    with FakeKube() as fake:
        settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": fake.url}
        kube_client.reset_clients()
        fake.add_node("n1", zone="A", region="testbed", allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"})
        fake.add_node("n2", zone="B", region="testbed", allocatable={"cpu": "2500m", "memory": "4Gi", "pods": "110"})
        fake.add_pod("boutique", "redis-cart-0", labels={"app": "redis-cart"}, node="n1", phase="Running",
                     requests={"cpu": "250m", "memory": "256Mi"})
        fake.add_pod("boutique", "frontend-0", labels={"app": "frontend"}, phase="Pending")
        fake.add_pod("boutique", "job-1", labels={"app": "cartservice"}, node="n2", phase="Succeeded",
                     requests={"cpu": "1"})
        yield fake
    kube_client.reset_clients()


def wait_for(check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout}s")


def placement_node(name: str) -> str | None:
    return Placement.objects.filter(pod_namespace="boutique", pod_name=name).values_list("node_name", flat=True).first()


def test_once_lists_nodes_pods_and_placements(fake, db):
    save_boutique()
    call_command("watch_cluster", "--once")
    n1 = Node.objects.get(name="n1")
    assert (n1.zone, n1.region, n1.allocatable_cpu_millicores, n1.allocatable_memory_bytes, n1.ready) == (
        "A", "testbed", 4000, 8 * 2**30, True)
    assert n1.labels["kubernetes.io/hostname"] == "n1" and n1.address == "10.0.0.1"
    assert Node.objects.get(name="n2").allocatable_cpu_millicores == 2500
    assert placement_node("redis-cart-0") == "n1"
    assert placement_node("frontend-0") is None  # not bound yet
    assert placement_node("job-1") is None  # finished pods hold no placement
    assert ObservedPod.objects.get(name="job-1").terminal
    # Requested resources per node come from the pod cache (terminal pods excluded).
    assert selectors.requested_by_node() == {"n1": (250, 256 * 2**20, 1)}
    state = selectors.build_cluster_state()
    assert state.nodes["n1"].requested_cpu_millicores == 250
    assert state.placements[("boutique", "online-boutique", "redis-cart")] == ("n1",)


def test_once_fails_clearly_when_the_api_is_down(fake, db):
    fake.down()
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="cluster watch failed"):
        call_command("watch_cluster", "--once")
    fake.up()


def test_watch_follows_changes_resumes_and_relists_after_410(fake, transactional_db):
    save_boutique()
    stop = threading.Event()
    messages: list[str] = []
    watcher = ClusterWatcher(watch_timeout=1, stop=stop, out=messages.append)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: placement_node("redis-cart-0") == "n1")

        fake.add_pod("boutique", "cartservice-0", labels={"app": "cartservice"}, node="n2", phase="Running",
                     requests={"cpu": "100m"})
        wait_for(lambda: placement_node("cartservice-0") == "n2")

        fake.remove("", "v1", "pods", "redis-cart-0", namespace="boutique")
        wait_for(lambda: placement_node("redis-cart-0") is None)
        assert not ObservedPod.objects.filter(name="redis-cart-0").exists()

        fake.merge("", "v1", "nodes", "n2", {"metadata": {"labels": {"topology.kubernetes.io/zone": "C"}}})
        wait_for(lambda: Node.objects.get(name="n2").zone == "C")

        # Status churn (conditions, heartbeats) is not written: it would invalidate every
        # extender's state for nothing. Events are applied in order, so once a later change is
        # visible the churn has been seen.
        pod_stamp = ObservedPod.objects.get(name="cartservice-0").updated_at
        node_stamp = Node.objects.get(name="n1").updated_at
        fake.merge("", "v1", "pods", "cartservice-0", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                   namespace="boutique")
        fake.merge("", "v1", "nodes", "n1", {"status": {"conditions": [{"type": "Ready", "status": "True",
                                                                         "lastHeartbeatTime": "2026-11-22T08:00:00Z"}]}})
        fake.add_pod("boutique", "emailservice-0", labels={"app": "emailservice"}, node="n1", phase="Running")
        fake.merge("", "v1", "nodes", "n2", {"metadata": {"labels": {"topology.kubernetes.io/zone": "B"}}})
        wait_for(lambda: placement_node("emailservice-0") == "n1" and Node.objects.get(name="n2").zone == "B")
        assert ObservedPod.objects.get(name="cartservice-0").updated_at == pod_stamp
        assert Node.objects.get(name="n1").updated_at == node_stamp

        # Streams time out every second and resume from their last resourceVersion. Pod events move
        # the global version past the node watch's; after a compaction the node watch's resume
        # answers 410 Gone and the watcher re-lists nodes.
        fake.add_pod("boutique", "adservice-0", labels={"app": "adservice"}, node="n1", phase="Running")
        wait_for(lambda: placement_node("adservice-0") == "n1")
        fake.compact()
        wait_for(lambda: any(m.startswith("nodes: watch expired") and "re-listing" in m for m in messages))
        fake.merge("", "v1", "pods", "cartservice-0", {"status": {"phase": "Failed"}}, namespace="boutique")
        wait_for(lambda: placement_node("cartservice-0") is None)
        fake.add_node("n3", zone="A", region="testbed")
        wait_for(lambda: Node.objects.filter(name="n3", zone="A").exists())
        assert fake.count("GET", r"/api/v1/pods$") >= 2  # at least one watch resume besides lists
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_watch_backs_off_while_the_api_is_down(fake, transactional_db):
    """Each failed attempt announces its delay; the next attempt of that watch comes no sooner, and
    every delay lies within the exponential cap of its attempt (full jitter: 0.5 s * 2**k, at most 30 s)."""
    stop = threading.Event()
    messages: list[tuple[float, str]] = []
    watcher = ClusterWatcher(watch_timeout=1, stop=stop, out=lambda m: messages.append((time.monotonic(), m)))
    fake.down()
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: sum("/api/v1/nodes" in m and "retrying in" in m for _, m in messages) >= 4, timeout=60)
        fake.up()
        wait_for(lambda: Node.objects.filter(name="n1").exists(), timeout=40)
    finally:
        stop.set()
        thread.join(5)
    for path in ("/api/v1/nodes", "/api/v1/pods"):
        failures = [(at, float(re.search(r"retrying in ([0-9.]+)s", m).group(1)))
                    for at, m in messages if path in m and "retrying in" in m]
        assert len(failures) >= 2, (path, messages)
        for attempt, ((at, delay), (next_at, _)) in enumerate(pairwise(failures)):
            assert delay <= min(30.0, 0.5 * 2**attempt) + 0.05, (path, attempt, delay)  # printed to 0.1 s
            assert next_at - at >= delay - 0.05, (path, attempt, next_at - at, delay)  # it waited


def test_resync_places_pods_of_an_appgroup_created_later(fake, transactional_db):
    stop = threading.Event()
    watcher = ClusterWatcher(watch_timeout=1, stop=stop, out=lambda m: None, resync_seconds=1.0)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: ObservedPod.objects.filter(name="redis-cart-0", node_name="n1").exists())
        assert placement_node("redis-cart-0") is None  # no AppGroup yet
        save_boutique()
        wait_for(lambda: placement_node("redis-cart-0") == "n1")  # the periodic re-list reconciles
    finally:
        stop.set()
        thread.join(5)
