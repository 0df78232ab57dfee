"""Prometheus down, slow or failing: the task retries with backoff, the topology goes stale, nothing is stored.

"Down" is a closed port; "slow" is an HTTP server that answers after longer than the timeout.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from celery.signals import task_retry

from apps.probes import services
from apps.probes.models import NodeSample, PairSample, PullWatermark
from apps.probes.prometheus import PrometheusQueryError, PrometheusUnavailable
from apps.probes.tasks import retry_countdown
from tests.support.pipeline import scripted_prometheus, slow_http_server
from tests.support.prometheus import free_port


@pytest.fixture
def fast_retries(settings):
    settings.NETAWARE = {**settings.NETAWARE, "PULL_WINDOW_SECONDS": 5, "PULL_MAX_RETRIES": 2,
                         "PULL_RETRY_BACKOFF_SECONDS": 0.2, "PULL_RETRY_BACKOFF_MAX_SECONDS": 0.8}
    return settings


def _nothing_stored() -> bool:
    return not (PairSample.objects.exists() or NodeSample.objects.exists() or PullWatermark.objects.exists())


def _measured_topology() -> None:
    """A current topology snapshot (two measured nodes) that an outage must flag stale."""
    from apps.topology.services import rebuild_topology, upsert_nodes_from_metrics

    upsert_nodes_from_metrics(nodes=[("w1", "z", "r"), ("w2", "z", "r")])
    now = datetime.now(tz=UTC) - timedelta(seconds=5)
    for a, b in (("w1", "w2"), ("w2", "w1")):
        for series, value in (("rtt_p90", 0.001), ("bandwidth_bps", 1e9), ("loss_ratio", 0.0)):
            PairSample.objects.create(ts=now, series=series, source=a, target=b, value=value)
    snapshot = rebuild_topology()
    assert snapshot is not None and not snapshot.stale


def test_backoff_grows_exponentially_with_jitter(fast_retries):
    for attempt in range(4):
        ceiling = min(0.8, 0.2 * 2**attempt)
        draws = [retry_countdown(attempt) for _ in range(200)]
        assert all(0.1 <= d <= ceiling for d in draws)
        assert max(draws) - min(draws) > 0  # jittered, not a fixed delay
    assert max(retry_countdown(10) for _ in range(50)) <= 0.8


def test_prometheus_down_task_retries_then_fails_storing_nothing(fast_retries, celery_worker_thread):
    from apps.probes.tasks import pull_metrics
    from apps.topology.models import TopologySnapshot

    fast_retries.PROMETHEUS_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    _measured_topology()
    PairSample.objects.all().delete()

    retries: list[float] = []

    def on_retry(request=None, reason=None, **kwargs):
        retries.append(time.monotonic())

    task_retry.connect(on_retry, weak=False)
    try:
        started = time.monotonic()
        async_result = pull_metrics.delay()
        with pytest.raises(PrometheusUnavailable, match="unreachable"):
            async_result.get(timeout=60, propagate=True)
    finally:
        task_retry.disconnect(on_retry)
    assert len(retries) == 2  # max_retries, then the final failure
    assert time.monotonic() - started >= 0.2  # the retries waited (backoff), they did not spin
    assert _nothing_stored()
    current = TopologySnapshot.objects.current()
    assert current.stale and "metrics pull failed" in current.stale_reason


@pytest.mark.django_db
def test_slow_prometheus_times_out(fast_retries):
    delay = 3.0
    with slow_http_server(delay_s=delay) as url:
        started = time.monotonic()
        with pytest.raises(PrometheusUnavailable, match=r"timed out after 0\.5s"):
            services.pull_metrics(prometheus_url=url, timeout=0.5)
        elapsed = time.monotonic() - started
    # Waiting for the answer would take the server's whole delay: giving up before it is the timeout.
    assert elapsed < delay, f"timeout not honoured: {elapsed:.2f}s"
    assert _nothing_stored()


@pytest.mark.django_db
def test_server_error_is_retryable_and_bad_query_is_not(fast_retries):
    with slow_http_server(delay_s=0, status=503, body=b"overloaded") as url, \
            pytest.raises(PrometheusUnavailable, match="503"):
        services.pull_metrics(prometheus_url=url, timeout=2)
    with slow_http_server(delay_s=0, status=400, body=b'{"status":"error","error":"parse error"}') as url, \
            pytest.raises(PrometheusQueryError, match="parse error"):
        services.pull_metrics(prometheus_url=url, timeout=2)
    assert _nothing_stored()


@pytest.mark.django_db
def test_outage_mid_run_keeps_only_complete_windows(fast_retries):
    """The first chunk's windows are stored whole; the chunk during which Prometheus fails leaves nothing."""
    fast_retries.NETAWARE = {**fast_retries.NETAWARE, "PULL_INITIAL_WINDOWS": 20, "PULL_MAX_WINDOWS_PER_RUN": 20}

    def respond(n, path, params):
        if n > 8:  # 8 range queries (5 pair + 3 node series) answer the first chunk, then it breaks
            return 503, b"service unavailable"
        first, last, step = int(params["start"]), int(params["end"]), int(params["step"])
        values = [[end, "0.5"] for end in range(first, last + 1, step)]
        result = [{"metric": {"source": "a", "target": "b", "node": "a"}, "values": values}]
        return 200, json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()

    with scripted_prometheus(respond) as url, pytest.raises(PrometheusUnavailable, match="503"):
        services.pull_metrics(prometheus_url=url)
    stamps = sorted(set(PairSample.objects.values_list("ts", flat=True)))
    assert len(stamps) == services.FETCH_CHUNK_WINDOWS  # first chunk complete, second absent
    for ts in stamps:
        assert PairSample.objects.filter(ts=ts).count() == 5 and NodeSample.objects.filter(ts=ts).count() == 3
    assert set(PullWatermark.objects.values_list("last_end", flat=True)) == {stamps[-1]}
