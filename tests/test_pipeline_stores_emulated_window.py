"""A window pulled from a real Prometheus scraping the emulator lands in Postgres with the scenario's values.

RTT quantiles are ordered and near the nominal p90, loss and bandwidth near the scenario, node
utilisation in range; unreachable pairs and a quiet pair (histogram_quantile -> NaN) store no RTT,
never zeros; node placement reaches the topology app (and a receiver of the pipeline's signals that
fails does not fail the pull); the periodic path follows its watermarks and the Celery task stores
data and enqueues the topology rebuild.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
import requests

from apps.probes import services, signals
from apps.probes.models import NodeSample, PairSample, PullWatermark
from apps.probes.queries import configured_queries
from apps.topology.models import Node
from tests.support.pipeline import FROZEN_SOURCE, FROZEN_TARGET, configure_pipeline, emulated_cluster
from tests.support.pipeline import at as _at

WIDTH = 5


@pytest.fixture(scope="session")  # session: pytest-django runs the Celery test last, after other modules
def cluster():
    with emulated_cluster() as running:
        yield running


@pytest.fixture
def pipeline_settings(settings, cluster):
    return configure_pipeline(settings, cluster.url, width=WIDTH)


def _values(ts: datetime) -> dict[tuple[str, str, str], float]:
    return {(s, a, b): v for s, a, b, v in PairSample.objects.filter(ts=ts).values_list(
        "series", "source", "target", "value")}


@pytest.mark.django_db
def test_window_matches_scenario(pipeline_settings, cluster):
    end = int(time.time()) - 2
    result = services.pull_window(start=_at(end - WIDTH), end=_at(end))
    assert result.windows == 1 and result.rows_written > 0
    got = _values(_at(end))
    scenario = cluster.emulator.scenario
    reachable = [(a, b) for a in scenario.node_names for b in scenario.node_names
                 if a != b and scenario.link(a, b) is not None]
    assert len(reachable) == 4
    for a, b in reachable:
        link = scenario.link(a, b)
        p50, p90, p99 = (got[(f"rtt_p{q}", a, b)] for q in (50, 90, 99))
        assert 0 < p50 < p90 < p99, (a, b, p50, p90, p99)
        assert p90 == pytest.approx(link.latency_ms / 1000, rel=0.15), (a, b)
        assert got[("loss_ratio", a, b)] == pytest.approx(link.loss_pct / 100, abs=0.04), (a, b)
        assert got[("bandwidth_bps", a, b)] == pytest.approx(link.bandwidth_mbps * 1e6, rel=0.25), (a, b)
    # Unreachable both ways: every probe lost, no RTT at all (not 0).
    for a, b in (("n1", "n3"), ("n3", "n1")):
        assert got[("loss_ratio", a, b)] == 1.0
        assert not any(key[1:] == (a, b) and key[0].startswith("rtt") for key in got)
        assert ("bandwidth_bps", a, b) not in got

    node_rows = {(s, n): v for s, n, v in NodeSample.objects.filter(ts=_at(end)).values_list("series", "node", "value")}
    for node in scenario.nodes:
        assert 0.0 <= node_rows[("cpu_utilization", node.name)] <= 1.0
        assert node_rows[("memory_utilization", node.name)] == pytest.approx(node.memory_utilization, abs=0.1)
        assert node_rows[("net_used_bps", node.name)] > 0

    # The nodes' zones/regions were handed to the topology app.
    placed = {n.name: (n.zone, n.region) for n in Node.objects.filter(name__in=scenario.node_names)}
    assert placed == {"n1": ("a", "r1"), "n2": ("a", "r1"), "n3": ("b", "r1")}


@pytest.mark.django_db
def test_a_failing_receiver_does_not_fail_the_pull(pipeline_settings, cluster, caplog):
    def broken(**_):
        raise RuntimeError("receiver bug")

    signals.nodes_reported.connect(broken, dispatch_uid="test-broken")
    try:
        end = int(time.time()) - 2
        result = services.pull_window(start=_at(end - WIDTH), end=_at(end))
        assert result.windows == 1 and result.rows_written > 0 and result.nodes_seen == 3
    finally:
        signals.nodes_reported.disconnect(dispatch_uid="test-broken")
    assert "receiver bug" in caplog.text
    # The topology's own receiver still ran.
    assert set(Node.objects.filter(name__in=cluster.emulator.scenario.node_names).values_list("name", flat=True)) == {
        "n1", "n2", "n3"}


@pytest.mark.django_db
def test_quiet_pair_is_nan_in_prometheus_and_absent_in_postgres(pipeline_settings, cluster):
    end = int(time.time()) - 2
    p90 = next(q for q in configured_queries().pairs if q.series == "rtt_p90")
    answer = requests.get(f"{cluster.url}/api/v1/query", params={"query": p90.for_sources(None), "time": end}, timeout=5).json()
    frozen = [r["value"][1] for r in answer["data"]["result"] if r["metric"].get("source") == FROZEN_SOURCE]
    assert frozen == ["NaN"]  # the case under test really happens

    result = services.pull_window(start=_at(end - WIDTH), end=_at(end))
    assert result.points_skipped >= 3  # p50, p90, p99 of the quiet pair
    assert not PairSample.objects.filter(source=FROZEN_SOURCE, target=FROZEN_TARGET).exists()
    assert not PairSample.objects.filter(value=0, series__startswith="rtt").exists()


@pytest.mark.django_db
def test_periodic_pull_follows_watermarks(pipeline_settings, cluster):
    now = datetime.now(tz=UTC)
    first = services.pull_metrics(now=now)
    newest_end = (int(now.timestamp()) - WIDTH) // WIDTH * WIDTH
    assert first.windows == 3 and first.last_end == _at(newest_end)
    marks = dict(PullWatermark.objects.values_list("query", "last_end"))
    assert len(marks) == 8 and set(marks.values()) == {_at(newest_end)}
    stamps = set(PairSample.objects.values_list("ts", flat=True))
    # Older windows may predate the emulator's first scrapes (then they are empty, yet pulled).
    assert _at(newest_end) in stamps
    assert stamps <= {_at(newest_end - k * WIDTH) for k in range(3)}

    again = services.pull_metrics(now=now)
    assert again.windows == 0 and again.rows_written == 0

    later = services.pull_metrics(now=now + timedelta(seconds=WIDTH))
    assert later.windows == 1 and later.last_end == _at(newest_end + WIDTH)


@pytest.mark.django_db
def test_catch_up_is_bounded_per_run(pipeline_settings, cluster):
    pipeline_settings.NETAWARE = {**pipeline_settings.NETAWARE, "PULL_MAX_WINDOWS_PER_RUN": 2}
    now = datetime.now(tz=UTC)
    newest_end = (int(now.timestamp()) - WIDTH) // WIDTH * WIDTH
    PullWatermark.objects.create(query="pair:rtt_p90", last_end=_at(newest_end - 5 * WIDTH))
    services.pull_metrics(now=now)
    assert PullWatermark.objects.get(query="pair:rtt_p90").last_end == _at(newest_end - 3 * WIDTH)
    assert PullWatermark.objects.get(query="pair:rtt_p50").last_end == _at(newest_end)


def test_task_stores_and_enqueues_topology_rebuild(pipeline_settings, cluster, celery_worker_thread):
    from apps.probes.tasks import pull_metrics
    from apps.topology.models import TopologySnapshot

    summary = pull_metrics.delay().get(timeout=60)
    assert summary["windows"] == 3 and summary["rows_written"] > 0 and summary["nodes_seen"] == 3
    newest_end = int(datetime.fromisoformat(summary["last_end"]).timestamp())
    stamps = set(PairSample.objects.filter(series="rtt_p90", source="n1", target="n2").values_list("ts", flat=True))
    # The newest window is stored; older ones only hold data if the emulator was scraped by then.
    assert _at(newest_end) in stamps
    assert stamps <= {_at(newest_end - k * WIDTH) for k in range(3)}
    deadline = time.monotonic() + 30
    while TopologySnapshot.objects.count() == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert TopologySnapshot.objects.count() >= 1  # rebuild_topology ran on the worker
