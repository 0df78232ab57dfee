"""The emulator degrades a zone pair's link on request (``POST /links/degrade``, ``up.sh degrade``): the
pair's exported RTT quantile and loss follow the new values, both directions, other pairs stay; bad
requests are refused with the field named."""

from __future__ import annotations

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from apps.probes import metrics
from apps.probes.emulator import Emulator
from apps.probes.scenario import load_scenario

SCENARIO = {
    "name": "pair", "defaults": {"jitter": 0.05},
    "regions": [{"name": "r1", "zones": [{"name": "a", "nodes": [{"name": "a1"}]},
                                         {"name": "b", "nodes": [{"name": "b1"}]},
                                         {"name": "c", "nodes": [{"name": "c1"}]}]}],
    "links": [*({"between": [z, z], "latency_ms": 0.2, "loss_pct": 0, "bandwidth_mbps": 1000} for z in "abc"),
              {"between": ["a", "b"], "latency_ms": 1.0, "loss_pct": 0, "bandwidth_mbps": 1000},
              {"between": ["a", "c"], "latency_ms": 2.0, "loss_pct": 0, "bandwidth_mbps": 1000},
              {"between": ["b", "c"], "latency_ms": 2.0, "loss_pct": 0, "bandwidth_mbps": 1000}],
}


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def p90_and_loss(emulator: Emulator, source: str, target: str) -> tuple[float, float]:
    fams = {f.name: f for f in text_string_to_metric_families(emulator.render(source).decode())}
    p90 = next(s.value for s in fams[metrics.RTT_QUANTILE].samples
               if s.labels.get("target") == target and s.labels.get("quantile") == metrics.quantile_label(0.9))
    loss = next(s.value for s in fams[metrics.LOSS_RATIO].samples if s.labels.get("target") == target)
    return p90, loss


def test_a_degraded_zone_pair_exports_the_new_rtt_and_loss_both_ways():
    clock = Clock()
    emulator = Emulator(load_scenario(SCENARIO), clock=clock, seed=1)
    clock.now += 120
    assert p90_and_loss(emulator, "a1", "b1")[0] == pytest.approx(0.001, rel=0.2)
    emulator.degrade("a", "b", rtt_ms=40.0, loss=0.02)
    clock.now += 400  # past the quantile window: only degraded samples
    for source, target in (("a1", "b1"), ("b1", "a1")):
        p90, loss = p90_and_loss(emulator, source, target)
        assert p90 == pytest.approx(0.040, rel=0.2) and loss == pytest.approx(0.02, abs=0.01)
    assert p90_and_loss(emulator, "a1", "c1")[0] == pytest.approx(0.002, rel=0.2)  # other pairs stay


def test_degrade_requests_over_http_are_checked():
    emulator = Emulator(load_scenario(SCENARIO), seed=1)
    server = emulator.serve()
    try:
        url = f"{server.url}/links/degrade"
        ok = requests.post(url, json={"zones": ["a", "b"], "rtt_ms": 40, "loss": 0.02}, timeout=5)
        assert ok.status_code == 200 and "rtt 40 ms, loss 2 %" in ok.text
        for body, named in (({"zones": ["a", "z"], "rtt_ms": 40, "loss": 0}, "zone_b"),
                            ({"zones": ["a", "b"], "rtt_ms": -1, "loss": 0}, "rtt_ms"),
                            ({"zones": ["a", "b"], "rtt_ms": 4, "loss": 1.5}, "loss"),
                            ({"zones": "a,b"}, "zones")):
            refused = requests.post(url, json=body, timeout=5)
            assert refused.status_code == 400 and named in refused.text, (body, refused.text)
    finally:
        server.stop()
