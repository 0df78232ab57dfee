"""A real Prometheus scraping the emulator reads back the scenario's quantiles and loss."""

from __future__ import annotations

import time

import pytest
import requests

from apps.probes.emulator import Emulator
from apps.probes.scenario import load_scenario

SCENARIO = """
name: scraped
defaults: {jitter: 0.15}
regions:
  - name: r1
    zones:
      - name: a
        nodes: [{name: a1}, {name: a2}]
      - name: b
        nodes: [{name: b1}]
links:
  - {between: [a, a], latency_ms: 2.0, loss_pct: 0, bandwidth_mbps: 1000}
  - {between: [a, b], latency_ms: 20.0, loss_pct: 5, bandwidth_mbps: 100}
  - {between: [b, b], latency_ms: 0.5, loss_pct: 0, bandwidth_mbps: 500}
unreachable:
  - [a2, b1]
"""

P = "sum by (source, target, le) (rate(netaware_probe_rtt_seconds_bucket[20s]))"


def query(url: str, promql: str) -> dict[tuple[str, str], float]:
    resp = requests.get(f"{url}/api/v1/query", params={"query": promql}, timeout=10)
    resp.raise_for_status()
    return {(r["metric"]["source"], r["metric"]["target"]): float(r["value"][1])
            for r in resp.json()["data"]["result"]}


@pytest.mark.slow
def test_prometheus_reads_scenario_quantiles_loss_and_bandwidth(prometheus_factory) -> None:
    emulator = Emulator(load_scenario(SCENARIO), seed=1, ping_rate_hz=200.0, export="histogram")
    server = emulator.serve()
    try:
        config = emulator.prometheus_config(f"127.0.0.1:{server.port}", scrape_interval="1s")
        prom = prometheus_factory(config)
        prom.wait_for_series("netaware_probe_packets_sent_total", minimum=6, timeout=30)
        time.sleep(12)  # ~12 scrapes, ~2400 probes per pair
        p50 = query(prom.url, f"histogram_quantile(0.5, {P})")
        p90 = query(prom.url, f"histogram_quantile(0.9, {P})")
        p99 = query(prom.url, f"histogram_quantile(0.99, {P})")
        loss = query(prom.url, "1 - increase(netaware_probe_packets_received_total[20s])"
                               " / increase(netaware_probe_packets_sent_total[20s])")
        bandwidth = query(prom.url, "netaware_probe_bandwidth_bits_per_second")
        node_cpu = requests.get(f"{prom.url}/api/v1/query", timeout=10, params={
            "query": 'count by (node) (node_cpu_seconds_total{mode="idle"})'}).json()["data"]["result"]
    finally:
        server.stop()

    nominal = {("a1", "a2"): 0.002, ("a2", "a1"): 0.002, ("a1", "b1"): 0.020, ("b1", "a1"): 0.020}
    for pair, latency in nominal.items():
        assert p90[pair] == pytest.approx(latency, rel=0.15), pair
        assert p50[pair] < p90[pair] < p99[pair], pair
    # unreachable pair: probes sent, none answered, no RTT at all
    assert ("a2", "b1") not in p90 and ("b1", "a2") not in p90
    assert loss[("a2", "b1")] == 1.0
    assert ("a2", "b1") not in bandwidth
    assert loss[("a1", "b1")] == pytest.approx(0.05, abs=0.02)
    assert loss[("a1", "a2")] == 0.0
    assert bandwidth[("a1", "b1")] == pytest.approx(100e6, rel=0.15)
    assert bandwidth[("a1", "a2")] == pytest.approx(1000e6, rel=0.15)
    assert sorted(r["metric"]["node"] for r in node_cpu) == ["a1", "a2", "b1"]
