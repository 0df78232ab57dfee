"""A Prometheus answering with partial data or refusing a query as too large is reported, never stored.

Both cases come from a real Prometheus: one whose remote-read endpoint is down answers every query
with ``warnings`` (what Thanos, Mimir and VictoriaMetrics clusters do when a store or replica fails), and
one started with a tiny ``--query.max-samples`` refuses the pipeline's range queries (HTTP 422).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
import requests

from apps.probes import metrics, services
from apps.probes.emulator import Emulator
from apps.probes.models import NodeSample, PairSample, PullWatermark
from apps.probes.prometheus import PrometheusLimitError, PrometheusPartialData, PrometheusUnavailable
from apps.probes.scenario import load_scenario
from tests.support.pipeline import TINY_SCENARIO, configure_pipeline
from tests.support.prometheus import free_port, start_prometheus

pytestmark = pytest.mark.slow
WIDTH = 5


@pytest.fixture(scope="module")
def emulator_url():
    emulator = Emulator(load_scenario(TINY_SCENARIO), seed=0, ping_rate_hz=50.0, bandwidth_interval_s=2.0)
    server = emulator.serve()
    yield emulator, f"127.0.0.1:{server.port}"
    server.stop()


def _prometheus(emulator_url, extra: dict | None = None, args: tuple[str, ...] = ()):
    emulator, address = emulator_url
    config = emulator.prometheus_config(address, scrape_interval="1s")
    config.update(extra or {})
    prom = start_prometheus(config, extra_args=args)
    try:
        # The series API is neither subject to --query.max-samples nor answered partially, so it says
        # when the scrapes are in whatever limit the test sets.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            answer = requests.get(f"{prom.url}/api/v1/series", params={"match[]": metrics.LOSS_RATIO}, timeout=5)
            if answer.ok and len(answer.json()["data"]) >= 6:
                break
            time.sleep(0.5)
        else:
            raise TimeoutError(f"Prometheus has no {metrics.LOSS_RATIO} series after 30 s")
        time.sleep(3)  # a few scrapes: enough for a range query to touch more than the limit
    except Exception:
        prom.stop()
        raise
    return prom


def _nothing_stored() -> bool:
    return not (PairSample.objects.exists() or NodeSample.objects.exists() or PullWatermark.objects.exists())


@pytest.mark.django_db
def test_partial_answer_is_reported_and_nothing_stored(settings, emulator_url) -> None:
    dead = f"http://127.0.0.1:{free_port()}/api/v1/read"
    prom = _prometheus(emulator_url, {"remote_read": [{"url": dead, "read_recent": True}]})
    try:
        configure_pipeline(settings, prom.url, width=WIDTH)
        with pytest.raises(PrometheusPartialData, match="partial data") as info:
            services.pull_metrics(now=datetime.now(tz=UTC))
        assert "remote_read" in str(info.value)
        assert isinstance(info.value, PrometheusUnavailable)  # so the task retries it with backoff
        assert _nothing_stored()
    finally:
        prom.stop()


@pytest.mark.django_db
def test_limit_error_is_reported_and_nothing_stored(settings, emulator_url) -> None:
    prom = _prometheus(emulator_url, args=("--query.max-samples=3",))
    try:
        configure_pipeline(settings, prom.url, width=WIDTH)
        with pytest.raises(PrometheusLimitError, match="NETAWARE_PULL_SHARDS") as info:
            services.pull_metrics(now=datetime.now(tz=UTC))
        assert "too many samples" in str(info.value)
        assert _nothing_stored()
    finally:
        prom.stop()
