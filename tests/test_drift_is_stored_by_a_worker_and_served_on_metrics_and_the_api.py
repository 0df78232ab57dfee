"""Drift end to end on the real stack: the periodic task, run by a real Celery worker, stores each placed
AppGroup's drift (Online Boutique with its frontend in the far zone); the web /metrics exports it per
AppGroup, the API serves the stored assessment and a fresh one, refuses a bad query value naming the
field, and a placement that follows the moves assesses to less drift. Beat runs the task every 60 s."""

from __future__ import annotations

import time

import pytest
from django_celery_beat.models import PeriodicTask

from apps.scheduler import tasks
from apps.scheduler.models import DriftAssessment
from apps.topology import services as topology
from netaware_site.celery import app
from tests.support.dashboard_seed import place, seed_boutique, seed_topology
from tests.test_web_metrics_endpoint import TOKEN, scrape

WORKLOADS = ("frontend", "recommendation", "productcatalog", "checkout", "currency", "cart", "shipping", "ad",
             "payment", "email", "redis-cart")


def _seed(frontend_node: str):
    seed_topology()
    for name in ("a1", "a2", "b1", "f1"):
        topology.upsert_node(name=name, source="import", allocatable_cpu_millicores=8000,
                             allocatable_memory_bytes=16 * 2**30)
    group = seed_boutique()
    for i, workload in enumerate(WORKLOADS):
        place(workload, frontend_node if workload == "frontend" else ("a1", "a2")[i % 2])
    return group


def _wait_for_assessment(group, *, after=None):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        row = DriftAssessment.objects.filter(appgroup=group).first()
        if row is not None and (after is None or row.computed_at > after):
            return row
        time.sleep(0.1)
    raise AssertionError("the worker stored no drift assessment within 60 s")


@pytest.mark.django_db(transaction=True)
def test_the_worker_stores_drift_that_metrics_and_the_api_serve(client, settings, celery_worker_thread):
    settings.METRICS_TOKEN = TOKEN
    group = _seed("f1")
    url = f"/api/appgroups/{group.pk}/drift"
    missing = client.get(url)
    assert missing.status_code == 404 and "no drift assessment yet" in missing.json()["detail"]

    tasks.assess_drift.delay()
    row = _wait_for_assessment(group)
    assert 0.05 < row.drift <= 1.0
    assert row.best_score > row.current_score
    assert row.current_latency_ms > row.best_latency_ms
    assert row.moves and row.moves[0]["pod"] == "default/frontend-0" and row.moves[0]["from_node"] == "f1"
    assert row.moves[0]["to_node"] in ("a1", "a2") and row.moves[0]["expected_gain"] > 0

    series = scrape(client)
    key = (("appgroup", "online-boutique"), ("namespace", "default"))
    assert series["netaware_appgroup_drift_ratio"][key] == pytest.approx(row.drift)
    assert series["netaware_appgroup_score"][key] == pytest.approx(row.current_score)
    assert series["netaware_appgroup_best_score"][key] == pytest.approx(row.best_score)
    assert series["netaware_appgroup_drift_moves"][key] == len(row.moves)

    stored = client.get(url).json()
    assert stored["stored"] is True and stored["appgroup"] == "default/online-boutique"
    assert stored["drift"] == pytest.approx(row.drift) and stored["moves"] == row.moves
    assert client.get(url + "/").json()["moves"] == row.moves  # both spellings answer
    fresh = client.get(url, {"fresh": "true"}).json()
    assert fresh["stored"] is False and fresh["drift"] == pytest.approx(row.drift, abs=1e-6)
    assert [m["pod"] for m in fresh["moves"]] == [m["pod"] for m in row.moves]
    bad = client.get(url, {"fresh": "maybe"})
    assert bad.status_code == 400 and "fresh" in bad.json()["errors"]
    assert client.get(f"/api/appgroups/{group.pk + 1000}/drift").status_code == 404

    # The rebalancer's part, done by hand: the first move carried out, then the next round.
    first = row.moves[0]
    place("frontend", first["to_node"])
    before = row.computed_at
    tasks.assess_drift.delay()
    after = _wait_for_assessment(group, after=before)
    assert after.current_score == pytest.approx(row.current_score + first["expected_gain"], abs=1e-3)
    assert after.drift < row.drift and len(after.moves) < len(row.moves)


@pytest.mark.django_db
def test_beat_runs_the_drift_task_every_minute():
    task = PeriodicTask.objects.select_related("interval").get(name="Assess AppGroup drift")
    assert task.task == "scheduler.assess_drift" and task.task in app.tasks and task.enabled
    assert (task.interval.every, task.interval.period) == (60, "seconds")
