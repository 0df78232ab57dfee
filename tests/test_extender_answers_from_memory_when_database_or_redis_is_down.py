"""With the database or Redis unreachable (a real refused connection, not a mock) filter and
prioritize keep answering from the last good state in memory, and the decision log says what is
stale; only an extender that never loaded its state lets every node pass with neutral scores.
(The extender server against a stopped, restarted and hung PostgreSQL and Redis: tests/test_fault_*.py
and tests/test_extender_server_answers_through_outages.py.)"""

from __future__ import annotations

import socket

import orjson
from django.db import connection

from apps.scheduler import services
from apps.scheduler.models import Decision
from tests.support.extender_wire import extender_args, k8s_pod, load_kep_fixture, use_extender_test_settings

OVERHEAD = {"netaware.io/profile": "network-overhead"}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(client, verb: str, body: object):
    response = client.post(f"/scheduler/{verb}", orjson.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return orjson.loads(response.content)


def answers(client, pod: dict, nodes: list[str]) -> tuple[list[str], dict[str, int]]:
    passed = post(client, "filter", extender_args(pod, node_names=nodes))["NodeNames"]
    scores = {s["Host"]: s["Score"] for s in post(client, "prioritize", extender_args(pod, node_names=nodes))}
    return passed, scores


def database_away():
    original = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict["HOST"] = "127.0.0.1"
    connection.settings_dict["PORT"] = str(closed_port())
    return original


def database_back(original: dict) -> None:
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(original)


def test_database_down_after_loading(client, settings, transactional_db):
    use_extender_test_settings(settings)
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-mem-0", labels={"app": "p1"}, annotations=OVERHEAD)
    healthy = answers(client, pod, nodes)
    assert healthy[0] == ["n-5", "n-6"]
    services.flush_decisions()  # the healthy answers' decisions are stored before counting
    before = Decision.objects.count()

    original = database_away()
    try:
        assert answers(client, pod, nodes) == healthy  # from memory, unchanged
    finally:
        database_back(original)
    services.flush_decisions()  # they waited in the process while the database was away
    logged = list(Decision.objects.order_by("id")[before:])
    assert [d.verb for d in logged] == ["filter", "prioritize"]
    assert all(d.error == "" for d in logged)
    assert all(any("database unavailable" in note for note in d.result["stale"]) for d in logged), [
        d.result for d in logged]
    assert answers(client, pod, nodes) == healthy
    assert "stale" not in Decision.objects.order_by("-id").first().result  # healthy again


def test_database_down_from_the_start(client, settings, transactional_db):
    use_extender_test_settings(settings)
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-deg-0", labels={"app": "p1"}, annotations=OVERHEAD)
    original = database_away()
    try:
        passed, scores = answers(client, pod, nodes)
    finally:
        database_back(original)
    assert passed == nodes and set(scores.values()) == {5}  # blind: every node passes, neutral
    services.flush_decisions()
    logged = list(Decision.objects.order_by("id"))
    assert [d.verb for d in logged] == ["filter", "prioritize"]
    assert "every node passes" in logged[0].error and "neutral scores" in logged[1].error
    assert all("not loaded yet" in d.error and "database unavailable" in d.error for d in logged)


def test_redis_down(client, settings, db):
    use_extender_test_settings(settings, DECISION_QUEUE=True)
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-redis-0", labels={"app": "p1"}, annotations=OVERHEAD)
    healthy = answers(client, pod, nodes)
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/7"
    assert answers(client, pod, nodes) == healthy  # filter and prioritize never touch Redis
    # With the Redis queue away, the decisions went straight to Postgres.
    assert list(Decision.objects.filter(pod_name="p1-redis-0").order_by("id").values_list("verb", flat=True)) == [
        "filter", "prioritize"]
