"""Poison input never blocks a queue (issue 21). A NUL character (JSON ``\\u0000``), which neither
PostgreSQL text nor jsonb can hold, is refused at the extender's edge with the field that holds it,
and the decisions after it are stored. A record that still reaches a queue and that the database
refuses is set aside (dead letter: logged, counted in ``netaware_dead_letters_total{queue}``, kept in
Redis) while the rest of its batch is stored: decisions (the drain task and the extender's own
Postgres fallback), placements (the extender's writer) and samples (the pipeline's Prometheus answers).
"""

from __future__ import annotations

import http.client
import time

import orjson
import pytest

from apps.appgroups.models import Placement
from apps.probes import services as probe_services
from apps.probes.queries import configured_queries
from apps.scheduler import decisionlog, selectors, services
from apps.scheduler.models import Decision
from apps.scheduler.runtime import _Placed
from netaware_core import deadletter, metrics
from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, kube_scheduler_http_timeout, load_kep_fixture, load_testbed

NUL = "\x00"


def dead_letters(queue: str) -> list[dict]:
    return [orjson.loads(e) for e in selectors.redis_client().lrange(deadletter.key(queue), 0, -1)]


def dead_letter_count(queue: str) -> float:
    for family in metrics.counter_metrics():
        if family.name == "netaware_dead_letters":
            return sum(s.value for s in family.samples if s.labels.get("queue") == queue)
    return 0.0


@pytest.fixture
def clean_dead_letters():
    client = selectors.redis_client()
    for queue in ("decisions", "placements", "samples"):
        client.delete(deadletter.key(queue))
    client.delete(metrics.COUNTERS_KEY)
    yield


def _post(url: str, path: str, body: bytes) -> dict:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=kube_scheduler_http_timeout())
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        return orjson.loads(resp.read())
    finally:
        conn.close()


def _drain_until(pod_name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not Decision.objects.filter(pod_name=pod_name).exists():
        assert time.monotonic() < deadline, f"the decision of {pod_name} was never stored"
        services.drain_decisions()
        time.sleep(0.2)


@pytest.mark.parametrize("verb,where", [("prioritize", "NodeNames[1]"), ("filter", "Pod.metadata.name"),
                                        ("bind", "PodName"), ("preempt", "Pod.metadata.namespace")])
def test_the_extender_refuses_nul_in_names_and_later_decisions_are_stored(
        verb, where, transactional_db, fake_kube, clean_dead_letters):
    load_testbed()
    pod = k8s_pod("web-1", labels={"app": "frontend"})
    if verb == "filter":
        pod["metadata"]["name"] = f"web{NUL}1"
    if verb == "preempt":
        pod["metadata"]["namespace"] = f"default{NUL}"
    bodies = {
        "prioritize": {"Pod": pod, "Nodes": None, "NodeNames": ["n1402", f"n1403{NUL}"]},
        "filter": {"Pod": pod, "Nodes": None, "NodeNames": ["n1402"]},
        "bind": {"PodName": f"web{NUL}", "PodNamespace": "default", "PodUID": "u", "Node": "n1402"},
        "preempt": {"Pod": pod, "NodeNameToVictims": {}, "NodeNameToMetaVictims": {"n1402": {"Pods": []}}},
    }
    with extender_server(kube_url=fake_kube.url) as ext:
        refused = _post(ext.url, f"/scheduler/{verb}", orjson.dumps(bodies[verb]))
        assert refused["Error"].startswith(f"{where}: contains a NUL character")
        good = k8s_pod("after-the-nul", labels={"app": "frontend"})
        answer = _post(ext.url, "/scheduler/prioritize",
                       orjson.dumps({"Pod": good, "Nodes": None, "NodeNames": ["n1402", "n1403"]}))
        assert isinstance(answer, list) and {e["Host"] for e in answer} == {"n1402", "n1403"}
        _drain_until("after-the-nul")
    logged = Decision.objects.get(verb=verb, pod_name="", error__startswith=where)
    assert NUL not in logged.error
    assert dead_letters("decisions") == []


def _queued(records: list[dict]) -> list[bytes]:
    log = decisionlog.DecisionLog(redis_client=selectors.redis_client)
    for record in records:
        log.add(record)
    blobs = [decisionlog.encode(r) for r in log.pending]
    return blobs


def _record(name: str, **extra: object) -> dict:
    return {"verb": "filter", "pod_namespace": "default", "pod_name": name, "candidates": 1, "result": {}, **extra}


@pytest.mark.django_db(transaction=True)
def test_the_drain_sets_a_poison_decision_aside_and_stores_the_rest(clean_dead_letters):
    client = selectors.redis_client()
    client.delete(decisionlog.DECISION_QUEUE_KEY)
    blobs = _queued([_record("before"), _record(f"bad{NUL}name"), _record("jsonb", result={"x": f"a{NUL}"}),
                     _record("after")])
    client.rpush(decisionlog.DECISION_QUEUE_KEY, *blobs, b"not a decision")
    services.drain_decisions()
    assert sorted(Decision.objects.values_list("pod_name", flat=True)) == ["after", "before"]
    assert client.llen(decisionlog.DECISION_QUEUE_KEY) == 0
    aside = dead_letters("decisions")
    assert len(aside) == 3 and all(entry["reason"] for entry in aside)
    assert dead_letter_count("decisions") == 3
    # The next drain is not blocked: a new decision flows.
    client.rpush(decisionlog.DECISION_QUEUE_KEY, *_queued([_record("later")]))
    services.drain_decisions()
    assert Decision.objects.filter(pod_name="later").exists()


@pytest.mark.django_db(transaction=True)
def test_the_extenders_postgres_fallback_sets_a_poison_decision_aside(clean_dead_letters, settings):
    import redis

    log = decisionlog.DecisionLog(redis_client=lambda: redis.Redis(port=1, socket_connect_timeout=0.2))
    for record in (_record("fallback-before"), _record(f"fallback{NUL}"), _record("fallback-after")):
        log.add(record)
    assert log.ship() == 3  # all left the process: two stored, one set aside
    assert log.outbox == [] and log.failing == ""
    assert sorted(Decision.objects.values_list("pod_name", flat=True)) == ["fallback-after", "fallback-before"]
    assert len(dead_letters("decisions")) == 1


def test_the_placement_writer_sets_a_poison_row_aside_and_stores_the_rest(start_extender, clean_dead_letters):
    load_kep_fixture()
    ext = start_extender()
    ext.settle()
    rt = ext.runtime
    workload = next(iter(rt.loader.workload_ids))
    before = Placement.objects.count()
    for name in ("placed-1", f"placed{NUL}2", "placed-3"):
        rt.placements.add(_Placed("default", name, "uid-" + name.replace(NUL, ""), "n-1", workload))
    deadline = time.monotonic() + 30
    while not Placement.objects.filter(pod_name="placed-3").exists():
        assert time.monotonic() < deadline, f"placements never stored: {rt.placements.failing}"
        time.sleep(0.1)
    assert Placement.objects.count() == before + 2 and rt.placements.failing == ""
    assert rt.placements.queue.empty()
    assert len(dead_letters("placements")) == 1 and dead_letter_count("placements") == 1


def test_pipeline_sets_series_with_nul_node_names_aside(clean_dead_letters):
    queries = configured_queries()
    pair = queries.pairs[0]
    matrix = [
        {"metric": {pair.source_label: "a", pair.target_label: "b"}, "values": [[100, "0.001"]]},
        {"metric": {pair.source_label: f"a{NUL}", pair.target_label: "b"}, "values": [[100, "0.002"]]},
    ]
    grouped = probe_services._group_pair_matrix(matrix, pair)
    assert grouped[100][0] == ["a"] and grouped[100][1] == ["b"]
    node = queries.nodes[0]
    nodes = probe_services._group_node_matrix(
        [{"metric": {node.node_label: f"n{NUL}"}, "values": [[100, "1"]]},
         {"metric": {node.node_label: "n"}, "values": [[100, "2"]]}], node)
    assert nodes[100][0] == ["n"]
    assert len(dead_letters("samples")) == 2 and dead_letter_count("samples") == 2
