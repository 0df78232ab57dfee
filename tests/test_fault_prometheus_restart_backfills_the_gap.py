"""A real Prometheus (scraping the emulated agents) stopped and restarted on the same port and data
directory while a real Celery worker runs the pipeline: the pull sent during the outage stores
nothing, flags the topology stale and retries with backoff; once Prometheus is back (its WAL
replayed) the retry backfills every window the pipeline missed from the watermarks — the ones
scraped before the stop with all their series — stores none twice, and the rebuilt topology is fresh.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from celery.signals import task_retry

from apps.probes import services
from apps.probes.models import PairSample, PullWatermark
from apps.topology import selectors as topology_selectors
from apps.topology.models import TopologySnapshot
from apps.topology.services import rebuild_topology
from tests.support.pipeline import configure_pipeline, emulated_cluster
from tests.support.processes import wait_for

pytestmark = pytest.mark.slow
WIDTH = 5


@pytest.fixture(scope="module")
def cluster():
    with emulated_cluster() as running:
        yield running


def expected_keys(cluster) -> set[tuple[str, str, str]]:
    """Every series of every pair the scenario has: RTT quantiles, loss and bandwidth where reachable,
    loss alone (all lost) where not."""
    scenario = cluster.emulator.scenario
    keys = set()
    for a in scenario.node_names:
        for b in scenario.node_names:
            if a != b and scenario.link(a, b) is not None:
                keys |= {(s, a, b) for s in ("rtt_p50", "rtt_p90", "rtt_p99", "loss_ratio", "bandwidth_bps")}
            elif a != b:
                keys.add(("loss_ratio", a, b))
    return keys


def keys_at(ts: datetime) -> set[tuple[str, str, str]]:
    return set(PairSample.objects.filter(ts=ts).values_list("series", "source", "target"))


def test_restarted_prometheus_backfills_the_missed_windows(settings, cluster, celery_worker_thread):
    from apps.probes.tasks import pull_metrics

    configure_pipeline(settings, cluster.url, width=WIDTH)
    settings.NETAWARE = {**settings.NETAWARE, "PULL_MAX_RETRIES": 40, "PULL_RETRY_BACKOFF_SECONDS": 0.5,
                         "PULL_RETRY_BACKOFF_MAX_SECONDS": 1.0, "STALE_AFTER_SECONDS": 600}
    first = services.pull_metrics()
    assert first.windows == 3 and first.rows_written > 0
    before = first.last_end
    assert not rebuild_topology().stale

    # The pipeline falls behind by two windows, which Prometheus scrapes, then Prometheus stops.
    wait_for(lambda: time.time() > before.timestamp() + 3 * WIDTH + 1, 3 * WIDTH + 5, "two more windows")
    cluster.prometheus.halt()
    stopped_at = datetime.now(UTC)
    retries: list[str] = []
    task_retry.connect(lambda request=None, reason=None, **_: retries.append(str(reason)), weak=False)
    result = pull_metrics.delay()
    wait_for(lambda: len(retries) >= 2, 20, "the pull to retry against the stopped Prometheus")
    assert all("unreachable" in r or "Connection" in r for r in retries), retries
    assert set(PullWatermark.objects.values_list("last_end", flat=True)) == {before}  # nothing moved...
    assert not PairSample.objects.filter(ts__gt=before).exists()  # ...nothing stored
    current = TopologySnapshot.objects.current()
    assert current.stale and "metrics pull failed" in current.stale_reason
    assert topology_selectors.current_topology().stale_reason.startswith("metrics pull failed")

    time.sleep(WIDTH)  # a window passes with nobody scraping
    cluster.prometheus.restart()
    summary = result.get(timeout=60)
    assert len(retries) >= 3  # it kept retrying through the outage, with backoff, then succeeded

    # Every window from the old watermark to the newest due one was pulled; all marks agree.
    marks = set(PullWatermark.objects.values_list("last_end", flat=True))
    assert len(marks) == 1
    (newest,) = marks
    assert newest.isoformat() == summary["last_end"]
    assert summary["windows"] == (newest - before) // timedelta(seconds=WIDTH) >= 3  # 2 before the stop, 1+ after
    # The windows scraped before the stop came back from the replayed WAL with every series.
    missed = [before + timedelta(seconds=WIDTH * k) for k in (1, 2)]
    assert all(ts + timedelta(seconds=1) < stopped_at for ts in missed)
    full = expected_keys(cluster)
    assert len(full) == 4 * 5 + 2
    for ts in missed:
        assert keys_at(ts) == full, ts
    # Each point stored once (the unique constraint would have failed the task otherwise), and a
    # second pull of the same period finds nothing left to store.
    assert PairSample.objects.filter(ts__gt=before).count() == sum(
        len(keys_at(ts)) for ts in set(PairSample.objects.filter(ts__gt=before).values_list("ts", flat=True)))
    assert services.pull_metrics(now=newest + timedelta(seconds=WIDTH - 1)).rows_written == 0

    # The pull asked for a rebuild: the topology is fresh again.
    wait_for(lambda: not TopologySnapshot.objects.current().stale, 20, "a fresh topology after the backfill")
