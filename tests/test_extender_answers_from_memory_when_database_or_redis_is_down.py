"""With the database or Redis unreachable (a real refused connection, not a mock) filter and
prioritize keep answering from the last good state in memory, and the decision log says what is
stale; only an extender that never loaded its state lets every node pass with neutral scores.
(The extender server against a stopped, restarted and hung PostgreSQL and Redis: tests/test_fault_*.py
and tests/test_extender_server_answers_through_outages.py.)"""

from __future__ import annotations

import socket

from django.db import connection

from apps.scheduler.models import Decision
from tests.support.extender_runtime import wait_until
from tests.support.extender_wire import extender_args, k8s_pod, load_kep_fixture

OVERHEAD = {"netaware.io/profile": "network-overhead"}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(ext, verb: str, body: object):
    # No settling: while the database is away the loader cannot catch up, which is the point.
    response = ext.post(f"/scheduler/{verb}", body, settle=False)
    assert response.status_code == 200, response.content
    return response.json()


def answers(ext, pod: dict, nodes: list[str]) -> tuple[list[str], dict[str, int]]:
    passed = post(ext, "filter", extender_args(pod, node_names=nodes))["NodeNames"]
    scores = {s["Host"]: s["Score"] for s in post(ext, "prioritize", extender_args(pod, node_names=nodes))}
    return passed, scores


def database_away():
    """Every connection of this process cut (the server ends them, as a crashed or restarted
    PostgreSQL does) and every new one refused: the settings dict is shared by all threads."""
    original = dict(connection.settings_dict)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid() AND usename = current_user")
    connection.close()
    connection.settings_dict["HOST"] = "127.0.0.1"
    connection.settings_dict["PORT"] = str(closed_port())
    return original


def loader_failed(ext) -> bool:
    ext.runtime.wake.set()
    health = ext.runtime.cache.view().sources["topology"]
    return not health.ok and "database unavailable" in health.detail


def database_back(original: dict) -> None:
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(original)


def test_database_down_after_loading(start_extender):
    ext = start_extender()
    nodes = load_kep_fixture()
    ext.settle()
    pod = k8s_pod("p1-mem-0", labels={"app": "p1"}, annotations=OVERHEAD)
    healthy = answers(ext, pod, nodes)
    assert healthy[0] == ["n-5", "n-6"]
    ext.drain_decisions()  # the healthy answers' decisions are stored before counting
    before = Decision.objects.count()

    original = database_away()
    try:
        wait_until(lambda: loader_failed(ext), "the loader finds the database away")
        assert answers(ext, pod, nodes) == healthy  # from memory, unchanged
    finally:
        database_back(original)
    ext.drain_decisions()  # they waited in the Redis queue while the database was away
    logged = list(Decision.objects.order_by("id")[before:])
    assert [d.verb for d in logged] == ["filter", "prioritize"]
    assert all(d.error == "" for d in logged)
    assert all(any("database unavailable" in note for note in d.result["stale"]) for d in logged), [
        d.result for d in logged]
    ext.settle()
    assert answers(ext, pod, nodes) == healthy
    ext.drain_decisions()
    assert "stale" not in Decision.objects.order_by("-id").first().result  # healthy again


def test_database_down_from_the_start(start_extender):
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-deg-0", labels={"app": "p1"}, annotations=OVERHEAD)
    original = database_away()
    try:
        ext = start_extender(synced=False)
        wait_until(lambda: loader_failed(ext), "the loader finds the database away")
        passed, scores = answers(ext, pod, nodes)
    finally:
        database_back(original)
    assert passed == nodes and set(scores.values()) == {5}  # blind: every node passes, neutral
    ext.drain_decisions()
    logged = list(Decision.objects.order_by("id"))
    assert [d.verb for d in logged] == ["filter", "prioritize"]
    assert "every node passes" in logged[0].error and "neutral scores" in logged[1].error
    assert all("not loaded yet" in d.error and "database unavailable" in d.error for d in logged)


def test_redis_down(start_extender, settings):
    ext = start_extender()
    nodes = load_kep_fixture()
    ext.settle()
    pod = k8s_pod("p1-redis-0", labels={"app": "p1"}, annotations=OVERHEAD)
    healthy = answers(ext, pod, nodes)
    ext.drain_decisions()
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/7"
    assert answers(ext, pod, nodes) == healthy  # filter and prioritize never touch Redis
    # With the Redis queue away, the decision log's thread writes them straight to Postgres.
    wait_until(lambda: Decision.objects.filter(pod_name="p1-redis-0").count() == 4, "four decisions in Postgres")
    assert list(Decision.objects.filter(pod_name="p1-redis-0").order_by("id").values_list("verb", flat=True)) == [
        "filter", "prioritize", "filter", "prioritize"]
