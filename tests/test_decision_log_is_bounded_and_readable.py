"""Every filter/prioritize decision is kept with its per-node, per-scorer breakdown, readable via
/api/scheduler/decisions/, and the log never grows past DECISION_RETENTION."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.scheduler import decisionlog, selectors, services, tasks
from apps.scheduler.models import Decision
from tests.support.extender_runtime import wait_until
from tests.support.extender_wire import extender_args, k8s_pod, load_kep_fixture

OVERHEAD = {"netaware.io/profile": "network-overhead"}


@pytest.fixture
def ext(start_extender):
    return start_extender()


@pytest.fixture
def nodes(ext):
    names = load_kep_fixture()
    ext.settle()
    return names


def call(ext, verb: str, pod: dict, nodes: list[str]) -> None:
    assert ext.post(f"/scheduler/{verb}", extender_args(pod, node_names=nodes), settle=False).status_code == 200


def test_retention_keeps_only_the_newest_decisions(ext, nodes, settings):
    settings.NETAWARE = {**settings.NETAWARE, "DECISION_RETENTION": 5}
    for i in range(12):
        call(ext, "filter", k8s_pod(f"p3-{i}", labels={"app": "p3"}), nodes)
    ext.drain_decisions()  # the drain prunes to DECISION_RETENTION
    names = list(Decision.objects.order_by("id").values_list("pod_name", flat=True))
    assert names == [f"p3-{i}" for i in range(7, 12)]
    # The Celery task prunes the same way (for deployments that buffer more between prunes).
    settings.NETAWARE = {**settings.NETAWARE, "DECISION_RETENTION": 2}
    assert tasks.prune_decisions() == 3
    assert Decision.objects.count() == 2


def test_decisions_are_queued_in_redis_and_drained_in_batches(client, ext, nodes):
    """Off the request path: the extender's decision-log thread ships decisions to a Redis list, and
    the Celery task moves the queue into Postgres in batches; reading the API never writes. A drain
    redone after a worker died mid-batch stores nothing twice."""
    redis = selectors.redis_client()
    redis.delete(decisionlog.DECISION_QUEUE_KEY)
    for i in range(4):
        call(ext, "filter" if i < 3 else "prioritize", k8s_pod(f"p3-q{i}", labels={"app": "p3"}), nodes)
    log = ext.runtime.decisions
    wait_until(lambda: log.logged == log.recorded, "the decision log thread ships the four decisions")
    assert Decision.objects.count() == 0
    assert redis.llen(decisionlog.DECISION_QUEUE_KEY) == 4
    queued = redis.lrange(decisionlog.DECISION_QUEUE_KEY, 0, -1)
    assert tasks.drain_decisions() == 4
    assert redis.llen(decisionlog.DECISION_QUEUE_KEY) == 0
    assert list(Decision.objects.order_by("id").values_list("pod_name", flat=True)) == [
        "p3-q0", "p3-q1", "p3-q2", "p3-q3"]
    assert Decision.objects.get(pod_name="p3-q3").breakdown_data["nodes"] == nodes
    # Reads only read: the API does not move the queue; the drain task does.
    call(ext, "filter", k8s_pod("p3-q4", labels={"app": "p3"}), nodes)
    wait_until(lambda: log.logged == log.recorded, "the decision log thread ships the fifth decision")
    assert client.get("/api/scheduler/decisions/", {"pod": "p3-q4"}).json()["count"] == 0
    assert tasks.drain_decisions() == 1
    assert client.get("/api/scheduler/decisions/", {"pod": "p3-q4"}).json()["count"] == 1
    # A worker that stored the batch but died before trimming the queue: the batch is drained again.
    redis.rpush(decisionlog.DECISION_QUEUE_KEY, *queued)
    assert tasks.drain_decisions() == 4
    assert Decision.objects.count() == 5


def test_the_decision_log_thread_ships_without_a_request(transactional_db, settings):
    """A real extender ships from a background thread, batched, whether or not requests follow."""
    redis = selectors.redis_client()
    redis.delete(decisionlog.DECISION_QUEUE_KEY)
    log = decisionlog.DecisionLog(redis_client=selectors.redis_client)
    log.start()
    try:
        for i in range(3):
            log.add({"verb": "filter", "pod_namespace": "default", "pod_name": f"idle-{i}", "breakdown": None})
        wait_until(lambda: redis.llen(decisionlog.DECISION_QUEUE_KEY) >= 3, "the thread ships without a request")
        assert redis.llen(decisionlog.DECISION_QUEUE_KEY) == 3
        assert log.logged == 3 and log.dropped == 0
    finally:
        log.stop()
    assert services.drain_decisions() == 3
    assert sorted(Decision.objects.values_list("pod_name", flat=True)) == ["idle-0", "idle-1", "idle-2"]


def test_decisions_api_lists_filters_and_shows_the_breakdown(client, ext, nodes):
    call(ext, "filter", k8s_pod("p1-api", labels={"app": "p1"}, annotations=OVERHEAD), nodes)
    call(ext, "prioritize", k8s_pod("p1-api", labels={"app": "p1"}, annotations=OVERHEAD), nodes)
    call(ext, "prioritize", k8s_pod("p2-api", labels={"app": "p2"}), nodes)
    ext.drain_decisions()

    listed = client.get("/api/scheduler/decisions/").json()
    assert listed["count"] == 3
    assert "breakdown" not in listed["results"][0]

    only = client.get("/api/scheduler/decisions/", {"pod": "default/p1-api", "verb": "prioritize"}).json()
    assert only["count"] == 1
    entry = only["results"][0]
    assert (entry["pod"], entry["verb"], entry["profile"], entry["workload"]) == (
        "default/p1-api", "prioritize", "network-overhead", "default/a1/p1")

    detail = client.get(f"/api/scheduler/decisions/{entry['id']}/").json()
    breakdown = detail["breakdown"]
    assert list(breakdown) == nodes
    assert breakdown["n-5"] == {"network-overhead": 100.0, "total": 100.0, "extender": 10}
    assert breakdown["n-6"]["network-overhead"] == 95.0 and breakdown["n-1"]["extender"] == 0

    filt = client.get("/api/scheduler/decisions/", {"pod": "p1-api", "verb": "filter"}).json()["results"][0]
    reasons = client.get(f"/api/scheduler/decisions/{filt['id']}/").json()["breakdown"]
    assert "Violated: 1" in reasons["n-1"]["reason"]

    future = (timezone.now() + timedelta(hours=1)).isoformat()
    assert client.get("/api/scheduler/decisions/", {"since": future}).json()["count"] == 0
    assert client.get("/api/scheduler/decisions/", {"verb": "jump"}).status_code == 400
    assert client.get("/api/scheduler/decisions/", {"since": "yesterday"}).status_code == 400
    assert client.get("/api/scheduler/decisions/999999/").status_code == 404
