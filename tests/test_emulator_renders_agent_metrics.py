"""The emulator serves, per node, exactly the metric families a real agent and node_exporter export."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from apps.probes import metrics
from apps.probes.emulator import Emulator
from apps.probes.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """
name: small
defaults: {jitter: 0.2}
regions:
  - name: r1
    zones:
      - name: a
        nodes: [{name: a1, cpu: "2", memory: 4Gi, cpu_utilization: 0.5}, {name: a2}]
      - name: b
        range: {prefix: b, from: 1, to: 2}
links:
  - {between: [a, a], latency_ms: 1.0, loss_pct: 0, bandwidth_mbps: 1000}
  - {between: [a, b], latency_ms: 10.0, loss_pct: 10, bandwidth_mbps: 100}
  - {between: [b, b], latency_ms: 0.5, loss_pct: 0, bandwidth_mbps: 500}
node_links:
  - {between: [a1, a2], latency_ms: 3.0, loss_pct: 1, bandwidth_mbps: 50}
unreachable:
  - [a1, b2]
"""


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def families(text: bytes) -> dict:
    return {family.name: family for family in text_string_to_metric_families(text.decode())}


def samples(fams: dict, family: str, suffix: str = "") -> dict:
    out = {}
    for sample in fams[family].samples:
        if sample.name == family + suffix:
            key = tuple(sorted((k, v) for k, v in sample.labels.items()))
            out[key] = sample.value
    return out


def test_rendered_node_metrics_parse_and_follow_the_scenario() -> None:
    clock = FakeClock()
    emulator = Emulator(load_scenario(SCENARIO), seed=3, ping_rate_hz=10.0, clock=clock,
                        bandwidth_interval_s=30.0, export="histogram")
    clock.now += 600.0  # 6000 probes per pair
    fams = families(emulator.render("a1"))

    assert {metrics.RTT_HISTOGRAM, "netaware_probe_packets_sent", "netaware_probe_packets_received",
            metrics.BANDWIDTH, metrics.BANDWIDTH_TIMESTAMP, metrics.NODE_INFO, "node_cpu_seconds",
            "node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes", "node_network_transmit_bytes"} <= set(fams)
    info = fams[metrics.NODE_INFO].samples
    assert [(s.labels, s.value) for s in info] == [({"node": "a1", "zone": "a", "region": "r1"}, 1.0)]

    sent = samples(fams, "netaware_probe_packets_sent", "_total")
    received = samples(fams, "netaware_probe_packets_received", "_total")
    pair = lambda t: (("source", "a1"), ("target", t))  # noqa: E731
    assert set(sent) == {pair("a2"), pair("b1"), pair("b2")}
    assert sent[pair("b1")] == 6000
    # loss 10 % between zones a and b, 1 % on the a1-a2 override; Bernoulli, so not exact
    assert 0.08 < 1 - received[pair("b1")] / sent[pair("b1")] < 0.12
    assert 0.0 < 1 - received[pair("a2")] / sent[pair("a2")] < 0.025
    # unreachable: probes go out, nothing comes back, no RTT and no bandwidth series
    assert sent[pair("b2")] == 6000 and received[pair("b2")] == 0
    buckets = [s for s in fams[metrics.RTT_HISTOGRAM].samples if s.name.endswith("_bucket")]
    assert {s.labels["target"] for s in buckets} == {"a2", "b1"}
    assert pair("b2") not in samples(fams, metrics.BANDWIDTH)

    # histogram: the scenario latency is the p90; p50 < p90 < p99 around it
    b1 = sorted((float(s.labels["le"]), s.value) for s in buckets if s.labels["target"] == "b1")
    bounds = np.array([le for le, _ in b1])
    cumulative = np.array([v for _, v in b1])
    assert cumulative[-1] == received[pair("b1")]
    assert list(bounds[:-1]) == list(metrics.RTT_BUCKETS)

    def quantile(q: float) -> float:
        rank = q * cumulative[-1]
        i = int(np.searchsorted(cumulative, rank))
        lo = bounds[i - 1] if i else 0.0
        below = cumulative[i - 1] if i else 0.0
        return lo + (bounds[i] - lo) * (rank - below) / (cumulative[i] - below)

    p50, p90, p99 = quantile(0.5), quantile(0.9), quantile(0.99)
    assert p50 < p90 < p99
    assert p90 == pytest.approx(0.010, rel=0.1)
    total = samples(fams, metrics.RTT_HISTOGRAM, "_sum")[pair("b1")]
    assert 0.006 < total / cumulative[-1] < 0.010  # mean below the p90

    bandwidth = samples(fams, metrics.BANDWIDTH)
    assert bandwidth[pair("b1")] == pytest.approx(100e6, rel=0.15)
    assert bandwidth[pair("a2")] == pytest.approx(50e6, rel=0.15)
    stamps = samples(fams, metrics.BANDWIDTH_TIMESTAMP)
    assert clock.now - 30.0 <= stamps[pair("b1")] <= clock.now

    # node_exporter: 2 CPUs at ~50 % busy over 600 s
    cpu = fams["node_cpu_seconds"].samples
    assert {s.labels["cpu"] for s in cpu} == {"0", "1"}
    idle = sum(s.value for s in cpu if s.labels["mode"] == "idle")
    busy = sum(s.value for s in cpu if s.labels["mode"] in {"user", "system"})
    assert idle + busy == pytest.approx(1200.0)
    assert 0.35 < busy / 1200.0 < 0.65
    assert fams["node_memory_MemTotal_bytes"].samples[0].value == 4 * 2**30
    assert 0 < fams["node_memory_MemAvailable_bytes"].samples[0].value < 4 * 2**30


def test_counters_advance_with_the_clock_and_never_go_back() -> None:
    clock = FakeClock()
    emulator = Emulator(load_scenario(SCENARIO), ping_rate_hz=5.0, clock=clock, export="histogram")
    first = samples(families(emulator.render("b1")), "netaware_probe_packets_sent", "_total")
    clock.now += 10.0
    second = samples(families(emulator.render("b1")), "netaware_probe_packets_sent", "_total")
    clock.now += 0.1  # less than one probe interval
    third = samples(families(emulator.render("b1")), "netaware_probe_packets_sent", "_total")
    for key in first:
        assert second[key] - first[key] == 50
        assert third[key] == second[key]
    with pytest.raises(KeyError):
        emulator.render("nope")


def test_http_server_paths_and_static_configs() -> None:
    emulator = Emulator(load_scenario(SCENARIO))
    server = emulator.serve()
    try:
        ok = requests.get(f"{server.url}/nodes/a2/metrics", timeout=5)
        assert ok.status_code == 200 and ok.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert 'netaware_node_info{node="a2"' in ok.text
        assert requests.get(f"{server.url}/nodes/zz/metrics", timeout=5).status_code == 404
        own = requests.get(f"{server.url}/metrics", timeout=5)
        assert "netaware_emulator_nodes" in own.text and "netaware_probe" not in own.text
    finally:
        server.stop()
    configs = emulator.static_configs("127.0.0.1:9200")
    assert configs[0] == {"targets": ["127.0.0.1:9200"],
                          "labels": {"node": "a1", "__metrics_path__": "/nodes/a1/metrics"}}
    assert [c["labels"]["node"] for c in configs] == ["a1", "a2", "b1", "b2"]


@pytest.mark.parametrize(
    ("document", "field"),
    [
        (SCENARIO.replace("latency_ms: 10.0", "latency_ms: -1"), "links[1].latency_ms"),
        (SCENARIO.replace("cpu: \"2\"", "cpu: lots"), "regions[0].zones[0].nodes[0].cpu"),
        (SCENARIO.replace("[a1, b2]", "[a1, zz]"), "unreachable[0][1]"),
        (SCENARIO.replace("  - {between: [b, b], latency_ms: 0.5, loss_pct: 0, bandwidth_mbps: 500}\n", ""),
         "links"),
        (SCENARIO.replace("loss_pct: 1,", "loss_pct: 101,"), "node_links[0].loss_pct"),
    ],
)
def test_run_emulator_rejects_a_bad_scenario_naming_the_field(tmp_path, document: str, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(document)
    result = subprocess.run(
        [sys.executable, "manage.py", "run_emulator", "--scenario", str(path), "--check"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert result.returncode != 0
    assert f"{field}:" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_emulator_accepts_the_paper_testbed() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "run_emulator", "--scenario", "scenarios/paper-testbed.yaml", "--check"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "19 nodes" in result.stdout


def test_run_emulator_writes_a_prometheus_config_for_every_node(tmp_path) -> None:
    out = tmp_path / "prometheus.yml"
    result = subprocess.run(
        [sys.executable, "manage.py", "run_emulator", "--scenario", "scenarios/paper-testbed.yaml",
         "--host", "emulator", "--port", "9200", "--scrape-interval", "5s",
         "--write-prometheus-config", str(out), "--config-only"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(out.read_text())
    job = config["scrape_configs"][0]
    assert job["scrape_interval"] == "5s"
    nodes = [c["labels"]["node"] for c in job["static_configs"]]
    assert nodes == [f"n{i}" for i in range(1402, 1421)]
    assert all(c["targets"] == ["emulator:9200"] for c in job["static_configs"])
    assert job["static_configs"][0]["labels"]["__metrics_path__"] == "/nodes/n1402/metrics"
    promtool = shutil.which("promtool") or "/usr/bin/promtool"  # ships with Debian's prometheus
    check = subprocess.run([promtool, "check", "config", str(out)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
