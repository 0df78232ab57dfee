"""Real agents on loopback measure each other: RTT, loss counters, iperf3 bandwidth through leases."""

from __future__ import annotations

import time

import pytest

from tests.support.agents import signed, start_agent
from tests.support.prometheus import free_port

# Longer than the agent's default (1 s) so that a busy machine delaying an answer does not turn it into
# a loss: loopback loses nothing, and the test checks exactly that.
PROBE_TIMEOUT = 3.0


def ports(n: int) -> list[tuple[int, int]]:
    return [(free_port(), free_port()) for _ in range(n)]


@pytest.mark.slow
def test_three_agents_measure_rtt_loss_and_bandwidth(agents) -> None:
    names = ["pa-a", "pa-b", "pa-c"]
    allocated = dict(zip(names, ports(3), strict=True))
    for name, (port, iperf_port) in allocated.items():
        peers = ",".join(f"{other}=127.0.0.1:{p}" for other, (p, _) in allocated.items() if other != name)
        agents.append(start_agent(name, f"http://127.0.0.1:{port}", [
            "--bind", "127.0.0.1", "--metrics-port", str(port), "--iperf-port", str(iperf_port),
            "--peers", peers, "--probe-rate", "20", "--probe-timeout", str(PROBE_TIMEOUT),
            "--iperf-interval", "1", "--iperf-duration", "1",
            "--zone", "z1", "--region", "r1", "--rtt-export", "histogram",
        ]))
    # a lease asked of a peer not started yet is refused; from now on every peer listens
    refused_at_start = {agent.node: agent.value("netaware_probe_iperf_tests_total", result="error") or 0
                        for agent in agents}
    time.sleep(9)
    first = {agent.node: agent.samples() for agent in agents}
    # every probe sent by the first scrape is answered or timed out by the second
    time.sleep(PROBE_TIMEOUT + 1)
    for agent in agents:
        s = first[agent.node]
        later = agent.samples()
        assert s[("netaware_node_info", (("node", agent.node), ("region", "r1"), ("zone", "z1")))] == 1.0
        tested = 0
        for peer in names:
            if peer == agent.node:
                continue
            key = (("source", agent.node), ("target", peer))
            sent = s[("netaware_probe_packets_sent_total", key)]
            received = s[("netaware_probe_packets_received_total", key)]
            assert sent >= 120, (agent.node, peer, sent)
            # loopback loses nothing: every probe sent by the first scrape is answered by the second
            assert received <= sent <= later[("netaware_probe_packets_received_total", key)], (agent.node, peer)
            count = s[("netaware_probe_rtt_seconds_count", key)]
            # every answered probe lands in the histogram; a scrape between the two updates of one
            # answer may see them one apart
            assert abs(count - received) <= 1, (agent.node, peer, count, received)
            # an answer later than the agent's probe timeout (default 1 s) counts as lost, not as an RTT
            assert 0 < s[("netaware_probe_rtt_seconds_sum", key)] / count < PROBE_TIMEOUT
            assert s[("netaware_probe_rtt_seconds_bucket", (("le", "+Inf"), *key))] == count
            bandwidth = s.get(("netaware_probe_bandwidth_bits_per_second", key))
            if bandwidth is not None:
                tested += 1
                assert bandwidth > 100e6  # loopback TCP
                assert time.time() - 15 < s[("netaware_probe_bandwidth_last_test_timestamp_seconds", key)]
        assert tested >= 1, agent.log()
        assert s[("netaware_probe_iperf_tests_total", (("result", "error"),))] == refused_at_start[agent.node], \
            agent.log()
        assert s[("netaware_probe_iperf_tests_total", (("result", "ok"),))] >= 2
        assert s[("netaware_probe_echo_replies_total", ())] >= 240
        assert s[("netaware_probe_peers", ())] == 2


@pytest.mark.slow
def test_clients_queue_on_one_iperf3_server_through_its_lease(agents) -> None:
    """Two clients testing the same server back to back: leases make them take turns, no iperf3 errors."""
    (port_b, iperf_b), (port_a, iperf_a), (port_c, iperf_c) = ports(3)
    common = ["--bind", "127.0.0.1", "--probe-rate", "1", "--iperf-interval", "0.2", "--iperf-duration", "1"]
    server = start_agent("pa-b", f"http://127.0.0.1:{port_b}", [
        *common, "--metrics-port", str(port_b), "--iperf-port", str(iperf_b)])
    agents.append(server)
    for name, port, iperf_port in (("pa-a", port_a, iperf_a), ("pa-c", port_c, iperf_c)):
        agents.append(start_agent(name, f"http://127.0.0.1:{port}", [
            *common, "--metrics-port", str(port), "--iperf-port", str(iperf_port),
            "--peers", f"pa-b=127.0.0.1:{port_b}"]))
    time.sleep(12)
    busy = server.value("netaware_probe_iperf_leases_total", result="busy")
    granted = server.value("netaware_probe_iperf_leases_total", result="granted")
    assert busy is not None and busy > 0  # the clients did collide ...
    assert granted is not None and granted >= 3
    for client in agents[1:]:
        assert client.value("netaware_probe_iperf_tests_total", result="error") == 0, client.log()  # ... safely
        assert client.value("netaware_probe_iperf_tests_total", result="ok") >= 1  # nobody starves
        assert client.value("netaware_probe_bandwidth_bits_per_second", source=client.node, target="pa-b") > 100e6


def test_lease_endpoint_grants_one_holder_at_a_time(agents) -> None:
    port, iperf_port = ports(1)[0]
    agent = start_agent("pa-l", f"http://127.0.0.1:{port}", [
        "--bind", "127.0.0.1", "--metrics-port", str(port), "--iperf-port", str(iperf_port)])
    agents.append(agent)
    lease_url = f"{agent.url}/iperf/lease"
    first = signed("POST", lease_url, {"client": "x", "ttl": 5})
    assert first.status_code == 200
    token = first.json()["token"]
    assert first.json()["iperf_port"] == iperf_port
    second = signed("POST", lease_url, {"client": "y", "ttl": 5})
    assert second.status_code == 409
    assert second.json()["holder"] == "x" and 0 < second.json()["retry_after"] <= 5
    assert signed("DELETE", f"{lease_url}/not-the-token").status_code == 404
    assert signed("DELETE", f"{lease_url}/{token}").status_code == 200
    third = signed("POST", lease_url, {"client": "y", "ttl": 1})
    assert third.status_code == 200
    time.sleep(1.2)  # an unreleased lease expires by itself
    assert signed("POST", lease_url, {"client": "z", "ttl": 1}).status_code == 200
    bad = signed("POST", lease_url, {"client": "z", "ttl": "soon"})
    assert bad.status_code == 400 and "ttl" in bad.json()
