"""The probe agent's hardening (issue 11): leases and probes authenticated with the shared secret,
listening on the node's IP only, and working as an unprivileged user with every capability dropped."""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path

import pytest
import requests

from apps.probes.agent_auth import sign_request
from tests.support import privilege
from tests.support.agents import TEST_SECRET, signed, start_agent, world_readable_agent_tree
from tests.support.prometheus import free_port

pytestmark = pytest.mark.slow

UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs"]


def test_lease_requests_need_a_fresh_valid_signature(agents) -> None:
    port = free_port()
    agent = start_agent("ha-l", f"http://127.0.0.1:{port}", [
        "--bind", "127.0.0.1", "--metrics-port", str(port), "--iperf-port", str(free_port())])
    agents.append(agent)
    url = f"{agent.url}/iperf/lease"
    body = json.dumps({"client": "mallory", "ttl": 5}).encode()
    refused = []
    # no signature at all
    refused.append(requests.post(url, data=body, timeout=5))
    # signed with another secret
    refused.append(signed("POST", url, {"client": "mallory", "ttl": 5}, secret="another-secret-0123456789"))
    # a genuine signature more than 30 s old
    old = sign_request(TEST_SECRET.encode(), "POST", "/iperf/lease", body, now=time.time() - 120)
    refused.append(requests.post(url, data=body, headers=old, timeout=5))
    # a genuine signature over another body (tampered in flight)
    other = sign_request(TEST_SECRET.encode(), "POST", "/iperf/lease", b'{"client": "x", "ttl": 1}')
    refused.append(requests.post(url, data=body, headers=other, timeout=5))
    for response in refused:
        assert response.status_code == 401, response.text
        assert response.headers["WWW-Authenticate"] == "NetawareHMAC"
        assert "token" not in response.json()
    # a captured genuine request replayed: the first is served, the copy refused
    genuine = sign_request(TEST_SECRET.encode(), "POST", "/iperf/lease", body)
    first = requests.post(url, data=body, headers=genuine, timeout=5)
    assert first.status_code == 200
    replay = requests.post(url, data=body, headers=genuine, timeout=5)
    assert replay.status_code == 401 and "replayed" in replay.json()["error"]
    # releasing needs a signature too: the lease stays held
    token = first.json()["token"]
    assert requests.delete(f"{url}/{token}", timeout=5).status_code == 401
    assert signed("POST", url, {"client": "bob", "ttl": 5}).status_code == 409
    assert signed("DELETE", f"{url}/{token}").status_code == 200
    assert agent.value("netaware_probe_iperf_leases_total", result="unauthorized") == 6
    assert agent.value("netaware_probe_iperf_leases_total", result="granted") == 1


def test_an_agent_without_the_secret_can_neither_probe_nor_test(agents) -> None:
    (pa, ia), (pb, ib) = (free_port(), free_port()), (free_port(), free_port())
    common = ["--bind", "127.0.0.1", "--probe-rate", "10", "--iperf-interval", "1", "--iperf-duration", "1"]
    good = start_agent("ha-good", f"http://127.0.0.1:{pa}", [
        *common, "--metrics-port", str(pa), "--iperf-port", str(ia), "--peers", f"ha-rogue=127.0.0.1:{pb}"])
    rogue = start_agent("ha-rogue", f"http://127.0.0.1:{pb}", [
        *common, "--metrics-port", str(pb), "--iperf-port", str(ib), "--peers", f"ha-good=127.0.0.1:{pa}"],
        env={"NETAWARE_PROBE_SECRET": "not-the-cluster-secret-42"})
    agents += [good, rogue]
    # a bare UDP probe (our header, no tag) gets no answer either
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(1.0)
        sock.sendto(struct.pack("!2sBIQ", b"NA", 1, 7, 123), ("127.0.0.1", pa))
        with pytest.raises(TimeoutError):
            sock.recvfrom(64)
    time.sleep(6)
    for agent, peer in ((good, "ha-rogue"), (rogue, "ha-good")):
        assert agent.value("netaware_probe_loss_ratio", source=agent.node, target=peer) == 1.0
        assert agent.value("netaware_probe_rtt_quantile_seconds", source=agent.node, target=peer,
                           quantile="0.9") is None
        assert agent.value("netaware_probe_echo_rejected_total") >= 20
        assert agent.value("netaware_probe_echo_replies_total") == 0
        assert agent.value("netaware_probe_iperf_leases_total", result="unauthorized") >= 1
        assert agent.value("netaware_probe_iperf_tests_total", result="ok") == 0
        assert agent.value("netaware_probe_bandwidth_bits_per_second", source=agent.node, target=peer) is None
    assert "do both agents share NETAWARE_PROBE_SECRET" in good.log() + rogue.log()


def test_listens_on_the_node_ip_only(agents) -> None:
    port, iperf_port = free_port(), free_port()
    agent = start_agent("ha-ip", f"http://127.0.0.2:{port}", [
        "--metrics-port", str(port), "--iperf-port", str(iperf_port)], env={"NODE_IP": "127.0.0.2"})
    agents.append(agent)
    deadline = time.monotonic() + 10  # the iperf3 server child starts in the background
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.2", iperf_port)) == 0:
                break
        time.sleep(0.1)
    for p in (port, iperf_port):
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.2", p)) == 0, f"nothing listens on 127.0.0.2:{p}"
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", p)) != 0, f"port {p} answers on 127.0.0.1"
    tcp, udp = Path("/proc/net/tcp").read_text(), Path("/proc/net/udp").read_text()
    # local addresses are little-endian hex: 127.0.0.2 is 0200007F; 0.0.0.0 (all addresses) is 00000000
    for table in (tcp, udp):
        assert f"0200007F:{port:04X}" in table
        assert f"00000000:{port:04X}" not in table
    assert f"00000000:{iperf_port:04X}" not in tcp


def test_runs_as_nobody_with_every_capability_dropped(agents) -> None:
    (pa, ia), (pb, ib) = (free_port(), free_port()), (free_port(), free_port())
    # A 10 s window: probes sent while the other agent was still starting (seconds on a busy machine)
    # count as lost until they leave it.
    common = ["--bind", "127.0.0.1", "--probe-rate", "10", "--iperf-interval", "1", "--iperf-duration", "1",
              "--quantile-window", "10"]
    plain = start_agent("ha-plain", f"http://127.0.0.1:{pa}", [
        *common, "--metrics-port", str(pa), "--iperf-port", str(ia), "--peers", f"ha-nobody=127.0.0.1:{pb}"])
    agents.append(plain)  # stopped by the fixture even if the second one fails to start
    nobody = start_agent("ha-nobody", f"http://127.0.0.1:{pb}", [
        *common, "--metrics-port", str(pb), "--iperf-port", str(ib), "--peers", f"ha-plain=127.0.0.1:{pa}"],
        prefix=privilege.as_root(*UNPRIVILEGED), code=world_readable_agent_tree())
    agents.append(nobody)
    status = Path(f"/proc/{nobody.pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["Uid"].split()[0] == "65534"
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap].strip(), 16) == 0, (cap, fields[cap])
    assert fields["NoNewPrivs"].strip() == "1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = all(
            (a.value("netaware_probe_bandwidth_bits_per_second", source=a.node, target=peer) or 0) > 0
            and a.value("netaware_probe_loss_ratio", source=a.node, target=peer) is not None
            and a.value("netaware_probe_loss_ratio", source=a.node, target=peer) < 0.3
            for a, peer in ((plain, "ha-nobody"), (nobody, "ha-plain")))
        if done:
            break
        time.sleep(0.5)
    for agent, peer in ((plain, "ha-nobody"), (nobody, "ha-plain")):
        rtt = agent.value("netaware_probe_rtt_quantile_seconds", source=agent.node, target=peer, quantile="0.9")
        # an answer later than the agent's probe timeout (default 1 s) counts as lost, not as an RTT
        assert rtt is not None and 0 < rtt < 1.0, agent.log()
        assert agent.value("netaware_probe_loss_ratio", source=agent.node, target=peer) < 0.3
        assert agent.value("netaware_probe_bandwidth_bits_per_second", source=agent.node, target=peer) > 100e6, \
            agent.log()
