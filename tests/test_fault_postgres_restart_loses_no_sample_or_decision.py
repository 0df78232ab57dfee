"""PostgreSQL stopped and started again (a cluster of this test's own) while everything else runs:
the emulated agents scraped by a real Prometheus, a real Celery worker and beat pulling every
second and draining the extender's decisions, and the extender server answering kube-scheduler.

The extender answers every request within its deadline throughout (one started during the outage,
blind, lets every node pass with neutral scores); beat and the worker outlive the outage; once PostgreSQL is back, the pulls resume from their watermarks and backfill the windows
missed meanwhile — every window after the first complete one has all its node samples, once — and
every decision answered before, during and after the outage is stored exactly once, none lost (also
those of the extender started during the outage, stopped once its decisions left the process).
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from apps.scheduler.services import NEUTRAL_EXTENDER_SCORE
from tests.support.extender_server import ROOT, extender_server
from tests.support.outages import Driver, decisions, driven_extender, paper_cluster, seeded_stores, store_env
from tests.support.pipeline import emulated_cluster
from tests.support.processes import celery, together, wait_for

pytestmark = pytest.mark.slow
WIDTH = 2
NODE_SERIES = 3 * 3  # 3 nodes x (cpu, memory, network) per window
TASKS = ("apps.probes.tasks.pull_metrics", "scheduler.drain_decisions")
METRICS_TOKEN = "restart-test-metrics-token-0123456789"


def query(database: str, sql: str, *params: object) -> list[tuple]:
    with psycopg.connect(database, connect_timeout=2) as conn:
        return conn.execute(sql, params).fetchall()


def node_windows(database: str) -> dict[datetime, int]:
    return dict(query(database, "SELECT ts, count(*) FROM probes_nodesample GROUP BY ts"))


def watermark(database: str) -> datetime | None:
    rows = query(database, "SELECT min(last_end) FROM probes_pullwatermark")
    return rows[0][0] if rows else None


def decisions_in_process(server) -> float:
    """Decisions the extender recorded that have not left its process yet (its /metrics)."""
    host, port = server.health.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    values = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    return values["netaware_decisions_recorded_total"] - values["netaware_decisions_logged_total"] - values[
        "netaware_decisions_dropped_total"]


def blind_answer(driver: Driver, pod: dict) -> tuple[list[str], dict[str, int]] | None:
    """filter + prioritize once the server listens (None before); both within the deadline."""
    try:
        return driver.ask(pod)
    except OSError:
        return None


def test_postgres_restart_under_pipeline_and_extender(fake_kube, tmp_path):
    names = [f"{phase}-{i}" for phase in ("before", "during", "after") for i in range(3)]
    nodes, pods = paper_cluster(fake_kube, dict.fromkeys(names, "cartservice"))
    with together(seeded_stores(), emulated_cluster(warmup_s=2.0)) as ((pg, rs, database), cluster):
        env = {**store_env(database, rs.url), "PROMETHEUS_URL": cluster.url,
               "NETAWARE_PULL_WINDOW_SECONDS": str(WIDTH), "NETAWARE_RATE_WINDOW": "10s",
               "NETAWARE_PULL_INITIAL_WINDOWS": "3", "NETAWARE_HEARTBEAT_DIR": str(tmp_path)}
        subprocess.run([sys.executable, "manage.py", "shell", "-c",
                        f"from tests.support.processes import pipeline_every_second; pipeline_every_second(*{TASKS!r})"],
                       cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True)
        with celery("worker", env=env, log=tmp_path / "worker.log") as worker, \
                celery("beat", env=env, log=tmp_path / "beat.log") as beat, \
                driven_extender(kube_url=fake_kube.url, database=database, redis_url=rs.url, nodes=nodes,
                                PROMETHEUS_URL=cluster.url) as (_, driver):
            wait_for(lambda: any(n == NODE_SERIES for n in node_windows(database).values()), 30,
                     "complete windows pulled")
            for name in names[:3]:
                driver.ask(pods[name])

            pg.stop()
            stopped = datetime.now(UTC)
            # An extender (re)started during the outage never loaded its state: blind, it lets every
            # node pass with neutral scores, in time, and says why.
            late_env = {**store_env(database, rs.url), "NETAWARE_METRICS_TOKEN": METRICS_TOKEN}
            with extender_server(kube_url=fake_kube.url, env=late_env, wait=False) as late:
                for name in names[3:6]:
                    driver.ask(pods[name])  # within the deadline (Driver asserts it), from memory
                    time.sleep(1.0)
                blind = Driver(late.url, nodes)
                passed, scores = wait_for(lambda: blind_answer(blind, pods["during-0"]), 20,
                                          "the extender started during the outage to answer")
                assert passed == nodes and set(scores.values()) == {NEUTRAL_EXTENDER_SCORE}
                # Stopped only once its decisions left the process (to Redis, which is up): as a
                # rolling update drains a pod before it ends it.
                wait_for(lambda: decisions_in_process(late) == 0, 30, "the late extender to ship its decisions")
            assert worker.poll() is None and beat.poll() is None
            pg.start()
            restarted = datetime.now(UTC)

            for name in names[6:]:
                driver.ask(pods[name])
            wait_for(lambda: (watermark(database) or stopped) > restarted + timedelta(seconds=WIDTH), 30,
                     "pulls to resume past the outage")
            wait_for(lambda: all(len(decisions(database, name)) >= (4 if name == "during-0" else 2) for name in names), 30,
                     "every decision to be drained into PostgreSQL")
            assert worker.poll() is None and beat.poll() is None  # both rode out the outage

        for name in names:
            verbs = [verb for verb, _, _ in decisions(database, name)]
            # Each answer is stored exactly once: during-0 was also answered by the extender started
            # during the outage, whose filter and prioritize are stored too. No decision is lost.
            extra = ["filter", "prioritize"] if name == "during-0" else []
            assert verbs == ["filter", "prioritize", *extra], (name, verbs)
        windows = node_windows(database)
    complete = sorted(ts for ts, n in windows.items() if n == NODE_SERIES)
    assert all(n <= NODE_SERIES for n in windows.values())  # none applied twice
    first, last = complete[0], complete[-1]
    assert first < stopped - timedelta(seconds=WIDTH) and last > restarted
    expected = [first + timedelta(seconds=WIDTH * k) for k in range((last - first) // timedelta(seconds=WIDTH) + 1)]
    assert complete == expected  # no window missing, the outage's included (backfilled from Prometheus)
