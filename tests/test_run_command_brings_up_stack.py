"""The README's run command brings the whole stack up and the topology fills from measurements.

Runs ``bash scripts/up.sh`` exactly as a user would (on its own ports, database, Redis db and state
directory so it cannot disturb a running instance), then waits — as the issue's "done when" says, at
most three minutes — until ``GET /api/topology/`` shows every node of ``scenarios/paper-testbed.yaml``
with latency, bandwidth and loss matching the scenario (p90 latency within 15 %). The emulator samples
RTTs around the nominal value, so this proves the whole path: emulated probe metrics → Prometheus →
Celery beat/worker → Postgres → topology snapshot → API.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from apps.probes.scenario import load_scenario
from tests.support.prometheus import free_port

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture
def stack():
    state = Path(tempfile.mkdtemp(prefix="netaware-up-"))
    env = dict(os.environ)
    web, prom, emu = free_port(), free_port(), free_port()
    env.update(
        NETAWARE_STATE_DIR=str(state),
        NETAWARE_WEB_PORT=str(web),
        NETAWARE_PROMETHEUS_PORT=str(prom),
        NETAWARE_EMULATOR_PORT=str(emu),
        NETAWARE_DB_NAME="netaware_e2e",
        REDIS_URL="redis://127.0.0.1:6379/12",
    )
    env.pop("DATABASE_URL", None)
    env.pop("PROMETHEUS_URL", None)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run(["redis-cli", "-n", "12", "flushdb"], check=False, capture_output=True)
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-qc", "drop database if exists netaware_e2e"],
                   check=False, capture_output=True)
    try:
        started = subprocess.run(["bash", str(ROOT / "scripts" / "up.sh")], env=env, cwd=ROOT,
                                 capture_output=True, text=True, timeout=300)
        yield {"web": f"http://127.0.0.1:{web}", "result": started, "state": state}
    finally:
        subprocess.run(["bash", str(ROOT / "scripts" / "up.sh"), "stop"], env=env, cwd=ROOT,
                       capture_output=True, timeout=120)
        logs = state / "log"
        if logs.exists():
            for log in sorted(logs.glob("*.log")):
                print(f"--- {log.name} (tail) ---")
                print("\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        shutil.rmtree(state, ignore_errors=True)


def test_up_brings_stack_up_and_topology_matches_scenario(stack):
    result = stack["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{stack['web']}/" in result.stdout  # prints the dashboard URL
    assert "/api/docs/" in result.stdout  # and the API URL

    scenario = load_scenario(ROOT / "scenarios" / "paper-testbed.yaml")
    names = scenario.node_names

    def mismatches(body: dict) -> list[str]:
        """Everything in the served topology that does not match the scenario (empty = all good)."""
        spec = body["spec"]
        problems: list[str] = []
        if body.get("status", {}).get("stale"):
            problems.append(f"snapshot is stale: {body['status'].get('staleReason')}")
        loss_by_zone_pair: dict[tuple[str, str], list[float]] = {}
        for source in names:
            for target in names:
                if source == target:
                    continue
                link = scenario.link(source, target)
                assert link is not None
                try:
                    latency = spec["latency"][source][target]
                    bandwidth = spec["bandwidth"][source][target]
                    loss = spec["lossrate"][source][target]
                except KeyError:
                    problems.append(f"{source}->{target} missing")
                    continue
                # The emulator draws RTTs whose p90 is the scenario value: p90 must sit within 15 %.
                if abs(latency - link.latency_ms) > 0.15 * link.latency_ms:
                    problems.append(f"{source}->{target} latency {latency} vs {link.latency_ms}")
                if abs(bandwidth - link.bandwidth_mbps) > 0.15 * link.bandwidth_mbps:
                    problems.append(f"{source}->{target} bandwidth {bandwidth} vs {link.bandwidth_mbps}")
                # Per pair, loss is a binomial estimate over one rate window (a few hundred probes), so a
                # single pair may stray a few points; the zone-pair mean must be close.
                if abs(loss - link.loss_pct) > 6.0:
                    problems.append(f"{source}->{target} loss {loss} vs {link.loss_pct}")
                zone_pair = (scenario.node(source).zone, scenario.node(target).zone)
                loss_by_zone_pair.setdefault(zone_pair, []).append(loss - link.loss_pct)
        for zone_pair, errors in loss_by_zone_pair.items():
            mean_error = sum(errors) / len(errors)
            if abs(mean_error) > 1.5:
                problems.append(f"zone pair {zone_pair} mean loss error {mean_error:.2f} points")
        return problems

    # The promise: within 3 minutes of start-up the topology shows every node and matches.
    deadline = time.monotonic() + 180
    problems: list[str] = ["no topology served yet"]
    while time.monotonic() < deadline:
        response = requests.get(f"{stack['web']}/api/topology/", timeout=5)
        if response.ok:
            body = response.json()
            assert set(body["spec"]["latency"]) <= set(names)
            problems = mismatches(body)
            if not problems:
                break
        time.sleep(5)
    assert not problems, f"{len(problems)} mismatches after 3 minutes, e.g. {problems[:10]}"
    assert set(body["spec"]["latency"]) == set(names)
    dashboard = requests.get(f"{stack['web']}/", timeout=5)
    assert dashboard.ok and b"Network topology" in dashboard.content
