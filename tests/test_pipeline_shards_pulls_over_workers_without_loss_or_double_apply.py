"""Pulls split by source shard over Celery workers: every window stored exactly once.

* Two workers racing on one shard: the advisory lock turns one away, and even two that both fetched
  a window before either stored it apply it once (the watermark guard).
* A real prefork worker killed with SIGKILL in the middle of storing a window (rows written, not
  committed) loses nothing and double-applies nothing: the transaction dies with the process, the
  task is redelivered (acks late, rejected on worker loss) and the window is redone.
* Sharded storage equals unsharded storage: re-pulling the same windows unsharded writes 0 rows.
* The shards' sources come from the node_info query: without it a sharded pull refuses, naming it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from apps.probes import services
from apps.probes.models import NodeSample, PairSample, PullWatermark, WindowDigest
from apps.probes.queries import QueriesFileError
from tests.support.isolation import database_url
from tests.support.pipeline import configure_pipeline, emulated_cluster
from tests.support.processes import pool_children, stop, wait_for

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
WIDTH = 5
SHARDS = 2


@pytest.fixture(scope="module")
def cluster():
    with emulated_cluster() as running:
        yield running


@pytest.fixture
def sharded(settings, cluster):
    configure_pipeline(settings, cluster.url, width=WIDTH)
    settings.NETAWARE = {**settings.NETAWARE, "PULL_SHARDS": SHARDS}
    return settings


def _unsharded_repull_writes(stamps) -> int:
    """Rows an unsharded pull of the same windows would still write (0: identical data, nothing missing)."""
    written = 0
    for ts in stamps:
        written += services.pull_window(start=ts - timedelta(seconds=WIDTH), end=ts).rows_written
    return written


@pytest.mark.django_db(transaction=True)
def test_racing_workers_apply_each_window_once(sharded) -> None:
    now = datetime.now(tz=UTC)
    nodes = services.refresh_shard_nodes(now=now)
    sources = {i: services.shard_sources(nodes=nodes, shard=i, shards=SHARDS) for i in range(SHARDS)}
    assert sorted(sources[0] + sources[1]) == ["n1", "n2", "n3", "q1"] or sorted(sources[0] + sources[1]) == [
        "n1", "n2", "n3"]
    results: list[tuple[int, services.PullResult]] = []
    barrier = threading.Barrier(4)

    def run(shard: int) -> None:
        from django.db import connection as own

        try:
            barrier.wait()
            results.append((shard, services.pull_metrics(now=now, shard=shard, shards=SHARDS)))
        finally:
            own.close()

    threads = [threading.Thread(target=run, args=(shard,)) for shard in (0, 0, 1, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 4
    for shard in range(SHARDS):
        pair = [r for s, r in results if s == shard]
        applied = [r for r in pair if r.windows and not r.skipped_locked and not r.series_already_stored]
        # one of the two applied the windows; the other was turned away by the lock, found nothing
        # pending, or found every series already stored by the first
        assert len(applied) == 1, pair
        other = next(r for r in pair if r is not applied[0])
        assert other.skipped_locked or other.windows == 0 or other.rows_written == 0, pair
    stamps = sorted(set(PairSample.objects.values_list("ts", flat=True)))
    assert stamps
    # one digest per (series, window, shard): nothing stored twice under two names
    assert set(WindowDigest.objects.values_list("shard", flat=True)) <= {f"{i}/{SHARDS}" for i in range(SHARDS)}
    assert WindowDigest.objects.count() == len(set(WindowDigest.objects.values_list("series", "ts", "shard")))

    # Two workers that both fetched the same windows before either stored them (lock bypassed):
    # the second applies nothing.
    later = now + timedelta(seconds=WIDTH)
    busy = max(range(SHARDS), key=lambda i: len(sources[i]))  # a shard with sources (3 names may all hash to one)
    jobs = services.pull_jobs(queries=services.configured_queries(), shard=busy, shards=SHARDS,
                              sources=sources[busy])
    pending = {key: [w.end for w in windows]
               for key, windows in services.pending_windows(queries=services.configured_queries(), now=later,
                                                            jobs=jobs).items()}
    assert any(pending.values())
    from apps.probes.prometheus import PrometheusClient

    first, second = services.PullResult(), services.PullResult()
    with PrometheusClient(sharded.PROMETHEUS_URL, timeout=5) as client:
        services._pull_ends(client=client, jobs=jobs, pending=pending, step=WIDTH, advance_watermarks=True,
                            result=first, shard=f"{busy}/{SHARDS}")
        services._pull_ends(client=client, jobs=jobs, pending=pending, step=WIDTH, advance_watermarks=True,
                            result=second, shard=f"{busy}/{SHARDS}")
    assert first.rows_written > 0 and first.series_already_stored == 0
    assert second.rows_written == 0 and second.series_already_stored == len(jobs) * second.windows

    # What the shards stored is what one unsharded pull stores.
    stamps = sorted(set(PairSample.objects.values_list("ts", flat=True)))
    assert _unsharded_repull_writes(stamps[-2:]) == 0


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_window_loses_nothing_and_applies_nothing_twice(sharded, cluster, tmp_path) -> None:
    from netaware_site.celery import app

    app.control.purge()
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "PROMETHEUS_URL": cluster.url,
           "NETAWARE_PULL_WINDOW_SECONDS": str(WIDTH), "NETAWARE_RATE_WINDOW": "10s",
           "NETAWARE_PULL_INITIAL_WINDOWS": "3", "NETAWARE_PULL_SHARDS": str(SHARDS),
           "PYTHONPATH": str(ROOT)}
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "netaware_site", "worker", "--pool", "prefork", "--concurrency", "1",
         "--loglevel", "INFO", "-n", f"killtest-{os.getpid()}@%h", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    holder = None
    try:
        from apps.probes.tasks import pull_metrics

        # A first round stores the initial windows of both shards.
        pull_metrics.delay()
        wait_for(lambda: PullWatermark.objects.filter(query__endswith=f"/{SHARDS}").count() == 5 * SHARDS, 60,
              "both shards' first windows")
        time.sleep(WIDTH + 1)  # a new window becomes due

        # Hold node samples so shard 0 (which also stores node series) blocks inside its window
        # transaction after writing its pair rows, then kill the process doing it.
        holder = psycopg.connect(database_url(connection.settings_dict), autocommit=False)
        holder.execute("LOCK TABLE probes_nodesample IN EXCLUSIVE MODE")
        before = dict(PullWatermark.objects.values_list("query", "last_end"))
        pull_metrics.delay()

        def blocked_backend():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                               "AND query LIKE '%%INSERT INTO probes_nodesample%%'")
                row = cursor.fetchone()
            return row[0] if row else None

        backend = wait_for(blocked_backend, 60, "shard 0 to block mid-window")
        with connection.cursor() as cursor:  # its pair rows are written in an open transaction
            cursor.execute("SELECT backend_xid::text FROM pg_stat_activity WHERE pid = %s", [backend])
            xid = cursor.fetchone()[0]
        assert xid is not None
        children = pool_children(worker.pid)
        assert len(children) == 1
        os.kill(children[0], signal.SIGKILL)
        # A backend waiting on a lock notices its client is gone only when it next talks to it:
        # let it go on; it can never commit, since nobody is left to send COMMIT.
        holder.rollback()
        holder.close()
        holder = None

        def gone():
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [backend])
                return cursor.fetchone()[0] == 0

        wait_for(gone, 30, "the killed worker's backend to end")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_xact_status(%s::xid8)", [xid])
            assert cursor.fetchone()[0] == "aborted"  # nothing of the killed window was committed

        # The task is redelivered to the new pool process and the window is redone.
        newest = max(before.values())
        wait_for(lambda: all(mark > newest for query, mark in PullWatermark.objects.values_list("query", "last_end")
                          if query.endswith(f"@0/{SHARDS}") or query.startswith("node:")), 90,
              "the redone window")
    finally:
        if holder is not None:
            holder.close()
        stop(worker)
    text = log.read_text(errors="replace")
    assert "signal 9" in text or "WorkerLostError" in text, text[-3000:]

    # Exactly once: every window has one row per node and node series, one digest per shard, and an
    # unsharded pull of the same windows finds nothing missing or different.
    # (the first round's oldest windows may predate the emulator's second scrape: rates are absent there)
    stamps = sorted(set(NodeSample.objects.filter(ts__gt=newest).values_list("ts", flat=True)))
    assert stamps
    for ts in stamps:
        assert NodeSample.objects.filter(ts=ts).count() == 3 * 3  # 3 nodes x 3 node series
    per_key = {}
    for series, ts, shard in WindowDigest.objects.values_list("series", "ts", "shard"):
        per_key[(series, ts, shard)] = per_key.get((series, ts, shard), 0) + 1
    assert set(per_key.values()) == {1}
    assert _unsharded_repull_writes(sorted(set(PairSample.objects.values_list("ts", flat=True)))[-3:]) == 0


@pytest.mark.django_db
def test_a_sharded_pull_without_the_node_info_query_names_it(sharded) -> None:
    queries = replace(services.configured_queries(), node_info=None)
    with pytest.raises(QueriesFileError, match="node_info"):
        services.pull_metrics(shard=1, shards=SHARDS, queries=queries)
    assert not PullWatermark.objects.exists()
