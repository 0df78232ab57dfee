"""The emulator follows the agents' fan-out and export, so its series count is a real cluster's: one
emulated node page carries exactly the series a real agent exports, and the 1,000-node scenario stays
within the series budget (200,000) with the default fan-out."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from apps.probes import fanout
from apps.probes.emulator import Emulator
from apps.probes.scenario import load_scenario
from tests.support.agents import start_agent, viewer_token
from tests.support.prometheus import free_port

ROOT = Path(__file__).resolve().parent.parent
AGENT_PREFIXES = ("netaware_", "process_")


def signatures(text: str) -> Counter:
    """Per agent-owned series: (name, label names, the quantile/result label) -- values and peers aside."""
    out: Counter = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(AGENT_PREFIXES):
                labels = sample.labels
                out[(sample.name, tuple(sorted(labels)), labels.get("quantile"), labels.get("result"))] += 1
    return out


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_emulated_node_page_has_the_series_of_a_real_agent(live_server) -> None:
    from apps.topology import services

    names = ["se-1", "se-2", "se-3"]
    port = free_port()
    for i, name in enumerate(names):
        services.upsert_node(name=name, zone="z", region="r", address=f"127.0.0.{11 + i}", source="cluster")
    agents = []
    token = viewer_token()  # the API needs authentication: agents send an API token
    try:
        for i, name in enumerate(names):
            agents.append(start_agent(name, f"http://127.0.0.{11 + i}:{port}", [
                "--bind", f"127.0.0.{11 + i}", "--metrics-port", str(port), "--iperf-port", str(free_port()),
                "--netaware-url", live_server.url, "--discovery-interval", "1", "--probe-rate", "10",
                "--iperf-interval", "0.5", "--iperf-duration", "1"], env={"NETAWARE_API_TOKEN": token}))
        first = agents[0]
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            tested = [first.value("netaware_probe_bandwidth_bits_per_second", source=first.node, target=peer)
                      for peer in names[1:]]
            if all(tested):
                break
            time.sleep(0.5)
        real = signatures(requests.get(f"{first.url}/metrics", timeout=5).text)
    finally:
        for agent in agents:
            agent.stop()

    scenario = load_scenario({
        "name": "series", "regions": [{"name": "r", "zones": [{"name": "z", "nodes": [{"name": n} for n in names]}]}],
        "links": [{"between": ["z", "z"], "latency_ms": 0.2, "loss_pct": 0, "bandwidth_mbps": 1000}]})
    clock = FakeClock()
    emulator = Emulator(scenario, clock=clock, bandwidth_interval_s=30.0)
    clock.now += 120
    emulated = signatures(emulator.render("se-1").decode())
    assert emulated == real
    assert sum(real.values()) == fanout.series_per_node(EMULATED_COST, peers=2, bandwidth_peers=2)


# Per probed peer: 3 RTT quantiles + loss; per bandwidth peer: value + timestamp; per agent: 12 self-metric
# series, 6 process_* and netaware_node_info.
EMULATED_COST = fanout.SeriesCost(per_peer=4, per_bandwidth_peer=2, per_agent=19)


def test_the_1000_node_scenario_meets_the_series_budget() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "large-1000.yaml")
    clock = FakeClock()
    emulator = Emulator(scenario, clock=clock)
    clock.now += 600
    counts = [sum(signatures(emulator.render(name).decode()).values()) for name in scenario.node_names]
    expected = fanout.series_per_node(EMULATED_COST, peers=24, bandwidth_peers=8)
    # every node probes K = 24 peers and tests 8; one that rotated moments ago (rotations are staggered:
    # one every ~22 s somewhere) has not tested its new bandwidth peers yet
    assert max(counts) == expected
    assert sum(c == expected for c in counts) >= 950
    assert sum(counts) <= 1000 * expected <= 200_000
