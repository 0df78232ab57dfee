"""With the database or Redis unreachable (a real refused connection, not a mock) the filter lets
every node pass, prioritize answers neutral scores, and the decision log says why."""

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


def check_degraded(client, nodes: list[str]) -> None:
    pod = k8s_pod("p1-deg-1", labels={"app": "p1"}, annotations=OVERHEAD)
    result = post(client, "filter", extender_args(pod, node_names=nodes))
    assert result["NodeNames"] == nodes
    assert result["FailedNodes"] == {} and result["FailedAndUnresolvableNodes"] == {} and result["Error"] == ""
    scores = post(client, "prioritize", extender_args(pod, node_names=nodes))
    assert [(s["Host"], s["Score"]) for s in scores] == [(n, 5) for n in nodes]


def test_database_down(client, settings, transactional_db):
    use_extender_test_settings(settings)
    nodes = load_kep_fixture()
    pod = k8s_pod("p1-deg-0", labels={"app": "p1"}, annotations=OVERHEAD)
    healthy = post(client, "filter", extender_args(pod, node_names=nodes))
    assert healthy["NodeNames"] == ["n-5", "n-6"]  # the state is cached now
    before = Decision.objects.count()

    original = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict["HOST"] = "127.0.0.1"
    connection.settings_dict["PORT"] = str(closed_port())
    try:
        check_degraded(client, nodes)
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(original)
    # The decisions waited in the buffer while the database was away, and say why.
    services.flush_decisions()
    logged = list(Decision.objects.order_by("id")[before:])
    assert [d.verb for d in logged] == ["filter", "prioritize"]
    assert all("database unavailable" in d.error for d in logged), [d.error for d in logged]
    assert "every node passes" in logged[0].error and "neutral scores" in logged[1].error
    # Once the database is back, the extender filters again.
    assert post(client, "filter", extender_args(pod, node_names=nodes))["NodeNames"] == ["n-5", "n-6"]


def test_redis_down(client, settings, db):
    use_extender_test_settings(settings)
    nodes = load_kep_fixture()
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/7"
    check_degraded(client, nodes)
    logged = list(Decision.objects.order_by("id"))
    assert [d.verb for d in logged] == ["filter", "prioritize"]
    assert all("redis unavailable" in d.error for d in logged)
