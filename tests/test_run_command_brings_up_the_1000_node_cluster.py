"""The run command brings up the 1,000-node scenario on this machine (issue 13's target, CI variant).

``NETAWARE_SCENARIO=scenarios/large-1000.yaml NETAWARE_SCRAPE_INTERVAL=15s bash scripts/up.sh`` on its
own ports, database, Redis db and state directory (tests/support/stack.py); then, before the topology's
own staleness limit (600 s) has passed since start-up: every
directed zone pair (20 zones: 400) is measured by at least m = 3 node pairs in one stored window, the
topology is fresh (not stale, data from the last minute), the agents' series stay within the
200,000-series budget and Prometheus stays under 2 GiB RSS. How fast that happens (about three
minutes on a quiet 2-core machine) is a performance figure, measured by ``bench/bench_large_cluster.py``
(docs/benchmarks.md), not asserted here.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
import requests

from apps.probes.scenario import load_scenario
from tests.support.stack import running_stack

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
BUDGET = 200_000
STALE_AFTER = 600  # NETAWARE_STALE_AFTER_SECONDS default: older data is not fresh


@pytest.fixture
def stack():
    started_at = time.monotonic()
    with running_stack("large", NETAWARE_SCENARIO=str(ROOT / "scenarios" / "large-1000.yaml"),
                       NETAWARE_SCRAPE_INTERVAL="15s") as running:
        yield {"prom": f"http://127.0.0.1:{running.env['NETAWARE_PROMETHEUS_PORT']}", "result": running.result,
               "started_at": started_at, "database_url": running.env["DATABASE_URL"]}


def _prom(url: str, query: str) -> float:
    body = requests.get(f"{url}/api/v1/query", params={"query": query}, timeout=20).json()
    result = body["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def _own_metric(url: str, name: str) -> float:
    """A metric of Prometheus itself, from its own /metrics (the demo Prometheus does not scrape itself)."""
    for line in requests.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    raise AssertionError(f"prometheus exports no {name}")


def test_1000_nodes_every_zone_pair_measured_fresh_within_budget(stack):
    assert stack["result"].returncode == 0, stack["result"].stdout + stack["result"].stderr
    scenario = load_scenario(ROOT / "scenarios" / "large-1000.yaml")
    zone = {n.name: n.zone for n in scenario.nodes}
    zones = scenario.zones()
    wanted = {(a, b) for a in zones for b in zones}
    conn = psycopg.connect(stack["database_url"], autocommit=True)
    deadline = stack["started_at"] + STALE_AFTER
    missing: set = wanted
    fresh = False
    while time.monotonic() < deadline:
        newest = conn.execute("SELECT max(ts) FROM probes_pairsample WHERE series = 'rtt_p90'").fetchone()[0]
        if newest is not None:
            counts: dict[tuple[str, str], int] = {}
            for source, target in conn.execute(
                    "SELECT source, target FROM probes_pairsample WHERE series = 'rtt_p90' AND ts = %s", [newest]):
                key = (zone[source], zone[target])
                counts[key] = counts.get(key, 0) + 1
            missing = {pair for pair in wanted if counts.get(pair, 0) < 3}
            row = conn.execute("SELECT stale, data_until, node_count FROM topology_topologysnapshot "
                               "ORDER BY version DESC LIMIT 1").fetchone()
            fresh = row is not None and not row[0] and row[2] == 1000 and row[1] is not None and \
                conn.execute("SELECT now() - %s < interval '90 seconds'", [row[1]]).fetchone()[0]
            if not missing and fresh:
                break
        time.sleep(5)
    elapsed = time.monotonic() - stack["started_at"]
    assert not missing, f"{len(missing)} of {len(wanted)} zone pairs under 3 measured pairs after {elapsed:.0f} s"
    assert fresh, f"topology not fresh within {STALE_AFTER} s"
    print(f"every zone pair measured and the topology fresh {elapsed:.0f} s after start-up")

    ours = _prom(stack["prom"], 'count({__name__=~"netaware_.*|process_.*", job="netaware-emulator"})')
    head = _own_metric(stack["prom"], "prometheus_tsdb_head_series")
    rss = _own_metric(stack["prom"], "process_resident_memory_bytes")
    print(f"agent series {ours:.0f}, Prometheus head series {head:.0f}, Prometheus RSS {rss / 2**20:.0f} MiB")
    assert 100_000 < ours <= BUDGET
    assert head >= ours
    assert rss < 2 * 2**30
