"""A real prefork Celery worker SIGKILLed in the worst instant of moving the extender's decisions from
Redis to PostgreSQL — the batch committed, not yet trimmed from the queue — loses none and stores
none twice: the task is given back (acks late, rejected on worker loss), the drain lock the dead
process held expires, the redone drain finds the batch already stored (event ids) and trims it.

The instant is made exact with the real servers, not mocks: a table lock holds the INSERT, Redis'
``CLIENT PAUSE WRITE`` holds the trim, and the pool process is killed between the two.
"""

from __future__ import annotations

import os
import signal
import time

import psycopg
import pytest
from django.db import connection

from apps.scheduler import decisionlog, selectors
from apps.scheduler.models import Decision
from tests.support.extender_server import database_url
from tests.support.processes import celery, pool_children, wait_for

pytestmark = pytest.mark.slow
RECORDS = 40


def queue_decisions() -> set[str]:
    """Decisions queued the way the extender's shipper queues them; returns their event ids."""
    log = decisionlog.DecisionLog(redis_client=selectors.redis_client)
    for i in range(RECORDS):
        log.add({"verb": "filter", "pod_namespace": "default", "pod_name": f"fault-{i}", "candidates": 3,
                 "result": {"NodeNames": ["n1"]}, "breakdown": {"nodes": ["n1"], "total": [i]}})
    ids = {r["id"] for r in log.pending}
    assert log.ship() == RECORDS
    return ids


def blocked_insert() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                       "AND query LIKE '%%INSERT INTO \"scheduler_decision\"%%'")
        row = cursor.fetchone()
    return row[0] if row else None


@pytest.mark.django_db(transaction=True)
def test_worker_killed_between_commit_and_trim(tmp_path):
    from apps.scheduler.tasks import drain_decisions
    from netaware_site.celery import app

    app.control.purge()
    redis = selectors.redis_client()
    ids = queue_decisions()
    log = tmp_path / "worker.log"
    holder = psycopg.connect(database_url().replace("postgres://", "postgresql://"), autocommit=False)
    paused = False
    env = {"DATABASE_URL": database_url(), "NETAWARE_DECISION_DRAIN_LOCK_SECONDS": "2"}
    try:
        with celery("worker", env=env, log=log) as worker:
            holder.execute("LOCK TABLE scheduler_decision IN SHARE MODE")  # reads pass, inserts wait
            drain_decisions.delay()
            backend = wait_for(blocked_insert, 60, "the drain to block on its INSERT")
            child = pool_children(worker.pid)
            assert len(child) == 1

            redis.execute_command("CLIENT", "PAUSE", "30000", "WRITE")  # the trim (a write script) waits
            paused = True
            holder.rollback()  # the INSERT goes through and commits...
            wait_for(lambda: Decision.objects.count() == RECORDS, 20, "the batch to commit")
            time.sleep(0.3)  # ...and the drain now waits on its trim
            assert redis.llen(decisionlog.DECISION_QUEUE_KEY) == RECORDS  # (reads are not paused)
            os.kill(child[0], signal.SIGKILL)
            time.sleep(0.5)
            redis.execute_command("CLIENT", "UNPAUSE")  # (the worker reaps and replaces its child)
            paused = False
            wait_for(lambda: child[0] not in pool_children(worker.pid), 20, "the pool process to be replaced")
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [backend])
                assert cursor.fetchone()[0] in (0, 1)

            # Beat sends a drain every 5 s; here every second until the queue is empty. The first ones
            # find the dead process's lock (2 s here) and leave the queue alone.
            def drained() -> bool:
                if redis.llen(decisionlog.DECISION_QUEUE_KEY) == 0:
                    return True
                drain_decisions.delay()
                return False

            wait_for(drained, 30, "a drain after the kill to empty the queue", interval=1.0)
    finally:
        if paused:
            redis.execute_command("CLIENT", "UNPAUSE")
        holder.close()
    text = log.read_text(errors="replace")
    assert "signal 9" in text or "WorkerLostError" in text, text[-3000:]

    stored = list(Decision.objects.values_list("event_id", flat=True))
    assert len(stored) == RECORDS  # none twice...
    assert {str(e) for e in stored} == ids  # ...and exactly the ones the extender queued
    assert sorted(Decision.objects.values_list("pod_name", flat=True)) == sorted(f"fault-{i}" for i in range(RECORDS))


@pytest.mark.django_db(transaction=True)
def test_a_drain_whose_batch_is_no_longer_the_head_trims_nothing():
    """Two drainers (a lock expired under a slow one): the second trims only what is still its batch."""
    redis = selectors.redis_client()
    ids = queue_decisions()
    stale_head = redis.lrange(decisionlog.DECISION_QUEUE_KEY, 0, 9)
    decisionlog.write(stale_head)  # another drainer stored and trimmed the first 10 meanwhile
    redis.ltrim(decisionlog.DECISION_QUEUE_KEY, 10, -1)
    trim = redis.register_script(decisionlog._TRIM_IF_HEAD)
    assert trim(keys=[decisionlog.DECISION_QUEUE_KEY], args=[10, stale_head[0], stale_head[-1]]) == 0
    assert redis.llen(decisionlog.DECISION_QUEUE_KEY) == RECORDS - 10  # nobody's records dropped
    while decisionlog.drain(redis_client=redis, limit=10):
        pass
    assert {str(e) for e in Decision.objects.values_list("event_id", flat=True)} == ids
