"""An agent with an unreachable peer keeps probing and testing the others (compact export): the dead
peer reads loss 1.0 with no RTT and its lease attempts fail fast, while the live peer gets RTT
quantiles, loss and bandwidth as usual."""

from __future__ import annotations

import time

import pytest

from tests.support.agents import start_agent
from tests.support.prometheus import free_port

pytestmark = pytest.mark.slow


def test_an_unreachable_peer_does_not_stop_the_others() -> None:
    (pa, ia), (pb, ib) = (free_port(), free_port()), (free_port(), free_port())
    dead = free_port()  # nothing listens there: probes are lost, lease requests refused at once
    # --probe-timeout 3: a busy machine delaying an answer must not read as loss of the live peer
    common = ["--bind", "127.0.0.1", "--probe-rate", "10", "--probe-timeout", "3",
              "--iperf-interval", "0.5", "--iperf-duration", "1"]
    agents = []
    try:
        agents.append(start_agent("ur-a", f"http://127.0.0.1:{pa}", [
            *common, "--metrics-port", str(pa), "--iperf-port", str(ia),
            "--peers", f"ur-b=127.0.0.1:{pb},ur-dead=127.0.0.1:{dead}"]))
        agents.append(start_agent("ur-b", f"http://127.0.0.1:{pb}", [
            *common, "--metrics-port", str(pb), "--iperf-port", str(ib), "--peers", f"ur-a=127.0.0.1:{pa}"]))
        a = agents[0]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if (a.value("netaware_probe_iperf_tests_total", result="ok") or 0) >= 2 and \
                    (a.value("netaware_probe_iperf_tests_total", result="error") or 0) >= 2 and \
                    a.value("netaware_probe_loss_ratio", source="ur-a", target="ur-dead") == 1.0:
                break
            time.sleep(0.5)
        assert a.value("netaware_probe_peers") == 2
        assert a.value("netaware_probe_loss_ratio", source="ur-a", target="ur-dead") == 1.0
        assert a.value("netaware_probe_rtt_quantile_seconds", source="ur-a", target="ur-dead", quantile="0.9") is None
        assert a.value("netaware_probe_bandwidth_bits_per_second", source="ur-a", target="ur-dead") is None
        assert a.value("netaware_probe_iperf_tests_total", result="error") >= 2, a.log()
        # the live peer is measured all the while
        p50, p90, p99 = (a.value("netaware_probe_rtt_quantile_seconds", source="ur-a", target="ur-b", quantile=q)
                         for q in ("0.5", "0.9", "0.99"))
        # Loopback: the median is well under 10 ms even on a busy machine; the tail is the scheduler's.
        assert 0 < p50 <= p90 <= p99 and p50 < 0.01
        assert a.value("netaware_probe_loss_ratio", source="ur-a", target="ur-b") < 0.3
        assert a.value("netaware_probe_bandwidth_bits_per_second", source="ur-a", target="ur-b") > 100e6
        assert a.value("netaware_probe_iperf_tests_total", result="ok") >= 2, a.log()
    finally:
        for agent in agents:
            agent.stop()
