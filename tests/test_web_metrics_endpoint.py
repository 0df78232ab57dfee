"""The web process's /metrics: Prometheus text format behind a bearer token (404 in production
without one, open in development), answered by pod IP over plain HTTP like a kubelet or Prometheus
calls it, with the web-side series computed at scrape time: topology, pipeline lag per step, Celery
task outcomes counted across worker processes (a real Celery worker), sync conflicts from a real
sync pass, and a scrape that survives a Redis that went away (a real redis-server we stop)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.support.dashboard_seed import TOPOLOGY
from tests.support.prometheus import free_port

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "m" * 8 + "7Kq2ZrW9xPv4LnB8sYc3TfG6hJd1QaE5"


def samples(body: bytes) -> dict[str, dict[tuple, float]]:
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def scrape(client, token: str = TOKEN, **extra) -> dict[str, dict[tuple, float]]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(response.content)


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


@pytest.mark.django_db
def test_bearer_token_is_required_when_configured(client, token):
    missing = client.get("/metrics")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
    assert client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405
    assert "netaware_metrics_source_up" in scrape(client)


@pytest.mark.django_db
def test_without_a_token_404_in_production_open_in_development(client, settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_OPEN_WITHOUT_TOKEN = False
    assert client.get("/metrics").status_code == 404
    settings.METRICS_OPEN_WITHOUT_TOKEN = True
    assert client.get("/metrics").status_code == 200


def test_production_defaults_hide_metrics_without_a_token():
    code = ("from django.test import Client; c = Client(HTTP_HOST='10.0.0.7:8000');"
            "print(c.get('/metrics').status_code, c.get('/healthz').status_code)")
    env = {**os.environ, "NETAWARE_ENV": "production", "SECRET_KEY": "x9" * 30, "ALLOWED_HOSTS": "netaware.example.com",
           "PROMETHEUS_URL": "http://127.0.0.1:9", "NETAWARE_METRICS_TOKEN": ""}
    result = subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # No token configured: /metrics does not exist; health still answers a pod-IP Host over HTTP.
    assert result.stdout.split() == ["404", "200"]


@pytest.mark.django_db
def test_kubelet_and_prometheus_reach_internal_endpoints_by_pod_ip(client, settings, token):
    settings.ALLOWED_HOSTS = ["netaware.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    pod_ip = {"HTTP_HOST": "10.244.1.17:8000"}
    assert client.get("/healthz", **pod_ip).status_code == 200
    assert "netaware_metrics_source_up" in scrape(client, **pod_ip)
    # Everything else keeps the Host check and the HTTPS redirect.
    assert client.get("/api/topology/", **pod_ip).status_code == 400
    redirected = client.get("/api/topology/", HTTP_HOST="netaware.example.com")
    assert redirected.status_code == 301 and redirected["Location"].startswith("https://")


@pytest.mark.django_db
def test_topology_and_pipeline_lag_series(client, token):
    from apps.probes.models import PullWatermark
    from apps.topology import selectors, services

    now = datetime.now(UTC)
    services.import_topology(document=TOPOLOGY)
    snapshot = services.store_topology(topology=selectors.current_topology(), source="measured",
                                       data_until=now - timedelta(seconds=120))
    PullWatermark.objects.create(query="rtt", last_end=now - timedelta(seconds=60))
    PullWatermark.objects.create(query="bandwidth", last_end=now - timedelta(seconds=90))
    from netaware_core import metrics

    metrics.record_publish(version=snapshot.version - 1, data_until=(now - timedelta(seconds=300)).timestamp())

    got = scrape(client)
    took = (datetime.now(UTC) - now).total_seconds() + 0.001  # the ages grew by at most this meanwhile
    assert got["netaware_topology_version"][()] == snapshot.version
    assert got["netaware_topology_stale"][()] == 0.0
    assert 120 <= got["netaware_topology_age_seconds"][()] <= 120 + took
    pairs = {dict(k)["kind"]: v for k, v in got["netaware_topology_pairs"].items()}
    assert pairs == {"measured": snapshot.measured_pairs, "inferred": snapshot.inferred_pairs,
                     "stale": snapshot.stale_pairs} and pairs["measured"] > 0
    lag = {dict(k)["step"]: v for k, v in got["netaware_pipeline_lag_seconds"].items()}
    assert 90 <= lag["pull"] <= 90 + took  # the slowest query's watermark
    assert lag["rebuild"] == pytest.approx(60, abs=1)  # pulled up to now-60, topology has data to now-120
    assert lag["publish"] == pytest.approx(180, abs=1)  # the cluster has data to now-300
    up = {dict(k)["source"]: v for k, v in got["netaware_metrics_source_up"].items()}
    assert up == {"database": 1.0, "redis": 1.0}


def _counter(got, task: str, outcome: str) -> float:
    return got.get("netaware_celery_tasks_total", {}).get((("outcome", outcome), ("task", task)), 0.0)


@pytest.mark.django_db(transaction=True)
def test_celery_task_outcomes_are_counted_by_the_workers(client, token, settings, celery_worker_thread):
    from apps.probes import tasks as probe_tasks
    from apps.topology import tasks as topology_tasks

    settings.PROMETHEUS_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens: pulls fail
    settings.NETAWARE = {**settings.NETAWARE, "PULL_MAX_RETRIES": 1, "PULL_RETRY_BACKOFF_SECONDS": 0.01,
                         "PULL_RETRY_BACKOFF_MAX_SECONDS": 0.02, "PROMETHEUS_TIMEOUT_SECONDS": 0.5}
    pull, rebuild = "apps.probes.tasks.pull_metrics", "apps.topology.tasks.rebuild_topology"
    before = scrape(client)

    topology_tasks.rebuild_topology.delay().get(timeout=60)
    with pytest.raises(Exception):  # noqa: B017 - the worker's exception, re-raised by the result
        probe_tasks.pull_metrics.delay().get(timeout=60)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        after = scrape(client)
        if _counter(after, pull, "failure") > _counter(before, pull, "failure"):
            break
        time.sleep(0.2)
    assert _counter(after, rebuild, "success") - _counter(before, rebuild, "success") == 1
    assert _counter(after, pull, "retry") - _counter(before, pull, "retry") == 1  # first attempt retried
    assert _counter(after, pull, "failure") - _counter(before, pull, "failure") == 1  # then gave up


@pytest.mark.django_db
def test_a_real_sync_conflict_is_counted(client, token, fake_kube):
    from apps.appgroups import services as appgroup_services
    from apps.appgroups import sync
    from apps.appgroups.choices import Origin
    from tests.test_appgroup_sync_two_way import (
        _boutique_doc,
        _edit_boutique_in_netaware,
        _edit_boutique_with_kubectl,
    )

    before = scrape(client)["netaware_sync_conflicts_total"][()]
    appgroup_services.import_document(document=_boutique_doc(), origin=Origin.NETAWARE)
    sync.sync_once()
    _edit_boutique_in_netaware("ad", 0.75)
    _edit_boutique_with_kubectl("ad", 0.5)
    assert sync.sync_once().conflicts == ["default/online-boutique"]
    assert scrape(client)["netaware_sync_conflicts_total"][()] == before + 1


@pytest.fixture
def own_redis():
    server = shutil.which("redis-server")
    assert server, "redis-server is installed by scripts/test.sh"
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield proc, url
    if proc.poll() is None:
        proc.terminate()
        proc.wait(10)


@pytest.mark.django_db
def test_scrape_survives_redis_going_away(client, token, settings, own_redis):
    from netaware_core import metrics

    proc, url = own_redis
    settings.REDIS_URL = url
    metrics.increment("netaware_celery_tasks_total", {"task": "t", "outcome": "success"}, 3)
    got = scrape(client)
    assert _counter(got, "t", "success") == 3.0
    proc.terminate()
    proc.wait(10)
    metrics.increment("netaware_celery_tasks_total", {"task": "t", "outcome": "success"})  # must not raise
    got = scrape(client)
    up = {dict(k)["source"]: v for k, v in got["netaware_metrics_source_up"].items()}
    assert up == {"database": 1.0, "redis": 0.0}
    assert "netaware_celery_tasks_total" not in got  # unknown, not zero
