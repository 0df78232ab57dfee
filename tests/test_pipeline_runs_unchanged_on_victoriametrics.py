"""The pipeline works unchanged against another Prometheus-compatible engine: Debian's single-node
VictoriaMetrics scrapes the emulated agents itself (its Prometheus scrape support) and answers the
pipeline's default PromQL -- both the compact quantile export and the histogram export, pulled in two
shards -- and the stored samples and topology match the scenarios (like the Prometheus tests beside it)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from apps.probes import metrics, services
from apps.probes.emulator import Emulator
from apps.probes.models import PairSample, PullWatermark
from apps.probes.scenario import load_scenario
from tests.support.pipeline import TINY_SCENARIO, configure_pipeline, renamed_scenario
from tests.support.victoriametrics import start_victoriametrics

pytestmark = pytest.mark.slow
WIDTH = 5

# The same network under other names, exported as histograms by its (emulated) agents.
HISTOGRAM_SCENARIO = renamed_scenario(TINY_SCENARIO, {
    "pipeline-tiny": "pipeline-histograms", "r1": "r2", "a": "c", "b": "d", "n1": "m1", "n2": "m2", "n3": "m3"})


@pytest.fixture
def victoria():
    quantiles = Emulator(load_scenario(TINY_SCENARIO), seed=0, ping_rate_hz=100.0, bandwidth_interval_s=2.0)
    histograms = Emulator(load_scenario(HISTOGRAM_SCENARIO), seed=1, ping_rate_hz=100.0, bandwidth_interval_s=2.0,
                          export=metrics.EXPORT_HISTOGRAM)
    servers = [quantiles.serve(), histograms.serve()]
    config = quantiles.prometheus_config(f"127.0.0.1:{servers[0].port}", scrape_interval="1s")
    config["scrape_configs"].append(
        histograms.prometheus_config(f"127.0.0.1:{servers[1].port}", scrape_interval="1s",
                                     job="histograms")["scrape_configs"][0])
    vm = start_victoriametrics(config)
    try:
        vm.wait_for_series(metrics.LOSS_RATIO, minimum=6)
        vm.wait_for_series(f"{metrics.RTT_HISTOGRAM}_count", minimum=4)
        time.sleep(14)  # more than the 10 s rate window of data
        yield vm, (quantiles, histograms)
    finally:
        vm.stop()
        for server in servers:
            server.stop()


@pytest.mark.django_db
def test_sharded_pull_from_victoriametrics_matches_both_scenarios(settings, victoria) -> None:
    vm, emulators = victoria
    configure_pipeline(settings, vm.url, width=WIDTH)
    now = datetime.now(tz=UTC)
    # the node list comes from netaware_node_info, as the coordinator task reads it before fanning out
    assert len(services.refresh_shard_nodes(now=now)) == 6
    results = [services.pull_metrics(now=now, shard=i, shards=2) for i in range(2)]
    assert all(r.windows >= 1 and not r.skipped_locked for r in results), results
    assert results[-1].window_complete
    end = results[0].last_end
    assert end is not None and end > now - timedelta(seconds=3 * WIDTH)
    marks = dict(PullWatermark.objects.values_list("query", "last_end"))
    assert {f"pair:rtt_p90@{i}/2" for i in range(2)} <= set(marks)

    got = {(s, a, b): v for s, a, b, v in PairSample.objects.filter(ts=end).values_list(
        "series", "source", "target", "value")}
    for emulator in emulators:
        scenario = emulator.scenario
        for a in scenario.node_names:
            for b in scenario.node_names:
                if a == b:
                    continue
                link = scenario.link(a, b)
                if link is None:  # unreachable: every probe lost, no RTT (not 0), no bandwidth
                    assert got[("loss_ratio", a, b)] == 1.0
                    assert not any(key[1:] == (a, b) and key[0] != "loss_ratio" for key in got)
                    continue
                p50, p90, p99 = (got[(f"rtt_p{q}", a, b)] for q in (50, 90, 99))
                assert 0 < p50 < p90 < p99, (a, b, p50, p90, p99)
                assert p90 == pytest.approx(link.latency_ms / 1000, rel=0.15), (scenario.name, a, b)
                assert got[("loss_ratio", a, b)] == pytest.approx(link.loss_pct / 100, abs=0.05), (a, b)
                assert got[("bandwidth_bps", a, b)] == pytest.approx(link.bandwidth_mbps * 1e6, rel=0.25), (a, b)

    from apps.topology.services import rebuild_topology

    snapshot = rebuild_topology(now=end + timedelta(seconds=1))
    assert snapshot is not None and not snapshot.stale
    assert snapshot.node_count == 6 and snapshot.measured_pairs == 8 + 0  # 2 x (6 ordered pairs - 2 unreachable)
