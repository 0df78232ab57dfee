"""Celery beat stopped while the rest runs (a real beat and a real prefork worker on the test
database, the emulated agents scraped by a real Prometheus): nothing rebuilds the topology any more,
and without any process writing a thing the same stored snapshot turns stale, at read time, in the
API, the dashboard's data, /metrics and the extender's decision log. Beat started again, the
pipeline catches up and all of them say fresh again.
"""

from __future__ import annotations

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from apps.scheduler.models import Decision
from apps.topology.models import TopologySnapshot
from tests.support.extender_server import database_url
from tests.support.extender_wire import extender_args, k8s_pod
from tests.support.pipeline import emulated_cluster
from tests.support.processes import celery, pipeline_every_second, stop, wait_for

pytestmark = pytest.mark.slow
WIDTH = 2
STALE_AFTER = 8
PIPELINE = ("apps.probes.tasks.pull_metrics", "apps.topology.tasks.rebuild_topology")


def status(client: Client) -> dict:
    response = client.get("/api/topology/")
    return response.json()["status"] if response.status_code == 200 else {}  # 404: no topology yet


def dashboard(client: Client) -> dict:
    response = client.get("/dashboard/data/heatmap")
    assert response.status_code == 200, response.content
    return response.json()


def topology_metrics(client: Client) -> dict[str, float]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    return {s.name: s.value for f in text_string_to_metric_families(response.content.decode()) for s in f.samples
            if s.name.startswith("netaware_topology_")}


def extender_stale_notes(ext) -> list[str]:
    """What the extender's decision log says is stale when it answers a filter now."""
    response = ext.post("/scheduler/filter", extender_args(k8s_pod("web-0", labels={"app": "web"}),
                                                            node_names=["n1", "n2", "n3"]))
    assert response.status_code == 200
    ext.drain_decisions()
    return Decision.objects.order_by("-id").first().result.get("stale", [])


def topology_notes(ext) -> list[str]:
    return [n for n in extender_stale_notes(ext) if n.startswith("topology:")]


def fresh_everywhere(client: Client) -> bool:
    s = status(client)
    return s.get("source") == "measured" and not s["stale"] and not dashboard(client)["stale"] and \
        topology_metrics(client)["netaware_topology_stale"] == 0.0


@pytest.mark.django_db(transaction=True)
def test_stopping_beat_turns_the_topology_stale_at_read_time(admin_client, settings, tmp_path, start_extender):
    settings.NETAWARE = {**settings.NETAWARE, "STALE_AFTER_SECONDS": STALE_AFTER}
    settings.METRICS_TOKEN, settings.METRICS_OPEN_WITHOUT_TOKEN = "", True
    ext = start_extender()
    pipeline_every_second(*PIPELINE)
    with emulated_cluster(warmup_s=2.0) as cluster:
        env = {"DATABASE_URL": database_url(), "PROMETHEUS_URL": cluster.url,
               "NETAWARE_PULL_WINDOW_SECONDS": str(WIDTH), "NETAWARE_RATE_WINDOW": "10s",
               "NETAWARE_PULL_INITIAL_WINDOWS": "3", "NETAWARE_STALE_AFTER_SECONDS": str(STALE_AFTER),
               "NETAWARE_HEARTBEAT_DIR": str(tmp_path)}
        beat_args = ("--scheduler", "netaware_site.beat:HeartbeatScheduler")
        with celery("worker", env=env, log=tmp_path / "worker.log"), \
                celery("beat", env=env, log=tmp_path / "beat.log", args=beat_args) as beat:
            wait_for(lambda: fresh_everywhere(admin_client), 40, "a fresh measured topology while beat runs")
            # The extender's loader reassesses staleness every round (STATE_DB_CHECK_SECONDS).
            wait_for(lambda: not topology_notes(ext), 30, "the extender to say fresh")

            stop(beat)
            stopped = TopologySnapshot.objects.order_by("-version").first()
            wait_for(lambda: status(admin_client)["stale"], STALE_AFTER + 10, "the API to say stale")
            # Nothing was written: the very snapshot that was current when beat stopped (at most one
            # rebuild already in flight) is the one now reported stale.
            current = TopologySnapshot.objects.order_by("-version").first()
            assert current.version - stopped.version <= 1 and current.stale is False
            api = status(admin_client)
            assert api["version"] == current.version and api["ageSeconds"] > STALE_AFTER
            reason = f"no measurement in the last {STALE_AFTER} s: the metrics pipeline"
            assert api["staleReason"].startswith(reason)
            board = dashboard(admin_client)
            assert board["stale"] is True and board["staleReason"] == api["staleReason"]
            assert admin_client.get("/").status_code == 200  # the page that polls it
            metrics = topology_metrics(admin_client)
            assert metrics["netaware_topology_stale"] == 1.0
            assert metrics["netaware_topology_age_seconds"] > STALE_AFTER
            assert metrics["netaware_topology_version"] == current.version
            expected = [f"topology: {api['staleReason']}"]
            wait_for(lambda: topology_notes(ext) == expected, 30, "the extender's decisions to say stale")

            with celery("beat", env=env, log=tmp_path / "beat.log", args=beat_args):
                wait_for(lambda: fresh_everywhere(admin_client), 30, "fresh again once beat is back")
                assert TopologySnapshot.objects.order_by("-version").first().version > current.version
                wait_for(lambda: not topology_notes(ext), 30, "the extender to say fresh again")
