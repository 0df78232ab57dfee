"""Agent lifecycle: config errors name the setting, API discovery, iperf3 server restart, SIGTERM."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from apps.probes.agent import ConfigError, parse_peers, peers_from_api
from apps.probes.agent_iperf import parse_iperf3_json
from tests.support.agents import ROOT, start_agent, viewer_token
from tests.support.prometheus import free_port


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "NODE_NAME/--node"),
        (["--node", "a", "--peers", "b=10.0.0.1,oops"], {}, "PEERS/--peers[1]"),
        (["--node", "a", "--peers", "b=10.0.0.1:99999"], {}, "PEERS/--peers[0]"),
        (["--node", "a", "--iperf-duration", "5"], {}, "--iperf-duration"),
        (["--node", "a", "--probe-rate", "-1"], {}, "--probe-rate"),
        (["--node", "a"], {"PROBE_RATE": "fast"}, "PROBE_RATE"),
        (["--node", "a"], {"METRICS_PORT": "abc"}, "METRICS_PORT"),
        (["--node", "a"], {"IPERF_PORT": "70000"}, "IPERF_PORT"),
        (["--node", "a", "--bind", "127.0.0.1"], {"NETAWARE_PROBE_SECRET": "short"}, "NETAWARE_PROBE_SECRET: at least"),
        (["--node", "a", "--bind", "127.0.0.1"], {}, "NETAWARE_PROBE_SECRET (or NETAWARE_PROBE_SECRET_FILE)"),
        (["--node", "a", "--bind", "127.0.0.1"], {"NETAWARE_PROBE_SECRET_FILE": "/nonexistent"},
         "NETAWARE_PROBE_SECRET_FILE: cannot read"),
        (["--node", "a"], {"NETAWARE_PROBE_SECRET": "x" * 32}, "PROBE_BIND/--bind (or NODE_IP)"),
        (["--node", "a", "--bind", "127.0.0.1", "--max-peers", "-2"], {"NETAWARE_PROBE_SECRET": "x" * 32},
         "--max-peers"),
        (["--node", "a", "--bind", "127.0.0.1", "--rtt-export", "summary"], {"NETAWARE_PROBE_SECRET": "x" * 32},
         "PROBE_RTT_EXPORT/--rtt-export"),
    ],
)
def test_bad_configuration_exits_2_naming_the_setting(args, env, message) -> None:
    result = subprocess.run([sys.executable, "-m", "apps.probes.agent", *args], cwd=ROOT, timeout=30,
                            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env})
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_peer_lists_parse_from_flags_and_api_pages() -> None:
    peers = parse_peers("a=10.0.0.1, b=10.0.0.2:9200,c=[fd00::3]:9300", default_port=9105)
    assert {n: (p.host, p.port) for n, p in peers.items()} == {
        "a": ("10.0.0.1", 9105), "b": ("10.0.0.2", 9200), "c": ("fd00::3", 9300)}
    with pytest.raises(ConfigError, match=r"PEERS\[0\]"):
        parse_peers("=10.0.0.1")
    bare = peers_from_api([{"name": "a", "address": "10.0.0.1"}, {"name": "b"}, "junk"], default_port=1)
    assert {n: (p.host, p.port) for n, p in bare.items()} == {"a": ("10.0.0.1", 1)}
    page = peers_from_api({"count": 1, "next": None, "results": [
        {"name": "a", "address": "10.0.0.1", "probe_port": 9300}]}, default_port=1)
    assert page["a"].port == 9300
    with pytest.raises(ValueError):
        peers_from_api({"detail": "nope"}, default_port=1)


def test_iperf3_json_errors_are_rejected() -> None:
    assert parse_iperf3_json(json.dumps({"end": {"sum_received": {"bits_per_second": 2e7}}})) == 2e7
    with pytest.raises(ValueError, match="server is busy"):
        parse_iperf3_json(json.dumps({"start": {}, "end": {}, "error": "the server is busy running a test"}))
    with pytest.raises(ValueError, match="sum_received"):
        parse_iperf3_json(json.dumps({"end": {}}))
    with pytest.raises(ValueError):
        parse_iperf3_json(b"iperf3: error")


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def child_pids(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "children").read_text().split()
        except OSError:  # the thread exited between listing and reading
            continue
        out.update(int(p) for p in text)
    return out


def is_iperf3(pid: int) -> bool:
    """An iperf3 *server* child (the agent also starts short-lived ``iperf3 -c`` clients for its tests)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return argv[0].endswith(b"iperf3") and b"-s" in argv


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_discovers_peers_from_the_api_restarts_iperf3_and_stops_on_sigterm(live_server) -> None:
    """Peers come from the real ``GET /api/nodes/`` (addresses only, so every agent uses one port)."""
    from apps.topology import services
    from apps.topology.models import Node

    port = free_port()
    for name, address in (("pa-self", "127.0.0.3"), ("pa-peer", "127.0.0.2"), ("pa-ghost", "127.0.0.4")):
        services.upsert_node(name=name, zone="z", region="r", address=address, source="cluster")
    peer = agent = None
    try:
        peer = start_agent("pa-peer", f"http://127.0.0.2:{port}", [
            "--bind", "127.0.0.2", "--metrics-port", str(port), "--iperf-port", str(free_port())])
        agent = start_agent("pa-self", f"http://127.0.0.3:{port}", [
            "--bind", "127.0.0.3", "--metrics-port", str(port), "--iperf-port", str(free_port()),
            "--netaware-url", live_server.url, "--discovery-interval", "1", "--probe-rate", "10",
            "--rtt-export", "histogram"], env={"NETAWARE_API_TOKEN": viewer_token()})
        healthz = lambda: requests.get(f"{agent.url}/healthz", timeout=5).json()["peers"]  # noqa: E731
        assert wait_for(lambda: healthz() == ["pa-ghost", "pa-peer"]), agent.log()
        assert wait_for(lambda: (agent.value("netaware_probe_packets_received_total",
                                             source="pa-self", target="pa-peer") or 0) > 5)
        # the ghost never answers: sent grows, received stays 0, no RTT series
        assert agent.value("netaware_probe_packets_sent_total", source="pa-self", target="pa-ghost") > 5
        assert agent.value("netaware_probe_packets_received_total", source="pa-self", target="pa-ghost") == 0
        assert agent.value("netaware_probe_rtt_seconds_count", source="pa-self", target="pa-ghost") is None
        # a node removed from the API is dropped with its series
        Node.objects.filter(name="pa-ghost").delete()
        assert wait_for(lambda: healthz() == ["pa-peer"])
        assert agent.value("netaware_probe_packets_sent_total", source="pa-self", target="pa-ghost") is None
        assert agent.value("netaware_probe_discovery_total", result="ok") >= 2

        # the iperf3 server child is restarted when it dies
        servers = [pid for pid in child_pids(agent.process.pid) if is_iperf3(pid)]
        assert len(servers) == 1
        subprocess.run(["kill", "-9", str(servers[0])], check=True)
        assert wait_for(lambda: agent.value("netaware_probe_iperf_server_starts_total") == 2)
        restarted = [pid for pid in child_pids(agent.process.pid) if is_iperf3(pid)]
        assert len(restarted) == 1 and restarted != servers

        # SIGTERM: clean exit, no iperf3 left behind
        assert agent.stop() == 0
        assert "stopped" in agent.log()
        assert not is_iperf3(restarted[0])
    finally:
        for running in (agent, peer):
            if running is not None:
                running.stop()


def test_agent_imports_neither_django_nor_numpy() -> None:
    """The agent runs on every node; heavy imports would break its ~20 MiB budget."""
    code = ("import sys, apps.probes.agent; "
            "print(sorted(m for m in ('django', 'numpy', 'requests', 'yaml') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
