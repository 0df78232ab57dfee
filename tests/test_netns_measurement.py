"""Real probe agents in network namespaces measure a shaped and a lossy link; the pipeline stores it.

Three namespaces a, b, c are joined pairwise by veth; each also has a management veth to the root
namespace, where a real Prometheus scrapes the agents every second. Link a-b is rate-limited with
``tc tbf rate 20mbit`` on both ends' egress. Link b-c drops 10 % of the probe agents' UDP packets
with ``iptables -m statistic`` in c's INPUT chain (requests b->c and replies to c's probes of b).
The DROP rule is restricted to the probe UDP port on purpose: TCP collapses on a 10 %-loss link,
so iperf3 on b-c still reads the unshaped veth bandwidth, and bandwidth and loss are asserted on
different links. Latency cannot be shaped here: this kernel has no netem (sch_netem), so RTT is
only checked for presence and ordering, not against a nominal value.

The assertions read the **stored NetworkTopology**: the real pipeline pulls the window from
Prometheus with ``apps.probes.services.pull_window`` (the default PromQL, rate window = the test's
measuring time) into PairSample rows, ``apps.topology.services.rebuild_topology`` derives and stores
a snapshot from them, and the test reads that snapshot back.

Everything started is torn down in ``finally`` (agents, iperf3 children, Prometheus via its
fixture, iptables rules, qdiscs, namespaces and their veths), also when an assertion fails.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest

from tests.support import netns
from tests.support.agents import start_agent
from tests.support.prometheus import ScrapeTarget, scrape_config

UNAVAILABLE = netns.available()
pytestmark = [
    pytest.mark.netns,
    pytest.mark.slow,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=f"netns measurement test: {UNAVAILABLE}"),
]

PORT = 9105  # every agent uses the defaults inside its own namespace
SHAPED_MBIT = 20.0
LOSS = 0.10
MEASURE_SECONDS = 48
KEYS = ("a", "b", "c")


def node(key: str) -> str:
    return f"ns-{key}"


def _ts(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


@pytest.mark.django_db(transaction=True)
def test_shaped_bandwidth_and_random_loss_reach_the_stored_topology(prometheus_factory) -> None:
    netns.cleanup_stale()
    lab = netns.NetnsLab()
    try:
        for key in KEYS:
            lab.add_namespace(key)
        lab.connect("a", "b")
        lab.connect("a", "c")
        lab.connect("b", "c")
        lab.shape("a", "to-b", rate="20mbit", burst="32kbit", latency="50ms")
        lab.shape("b", "to-a", rate="20mbit", burst="32kbit", latency="50ms")
        lab.drop_randomly("c", ["INPUT", "-i", "to-b", "-p", "udp", "--dport", str(PORT)], LOSS)

        for key in KEYS:
            peers = ",".join(f"{node(o)}={lab.address_of(o, seen_from=key)}:{PORT}" for o in KEYS if o != key)
            agent = start_agent(node(key), f"http://{lab.mgmt_ip[key]}:{PORT}", [
                "--bind", "0.0.0.0", "--metrics-port", str(PORT), "--peers", peers, "--zone", f"zone-{key}", "--region", "lab",
                # A veth answers in microseconds: a reply later than 3 s means the agent was starved of CPU
                # (a busy 2-core machine), not that the packet was lost.
                "--probe-rate", "20", "--probe-timeout", "3", "--iperf-interval", "2", "--iperf-duration", "2",
            ], prefix=lab.prefix(key))
            lab.track(agent.process)

        prom = prometheus_factory(scrape_config(
            [ScrapeTarget(f"{lab.mgmt_ip[key]}:{PORT}", {"node": node(key)}) for key in KEYS], interval="1s"))
        started = time.time()
        prom.wait_for_series("netaware_probe_loss_ratio", minimum=6, timeout=20)
        # every directed pair needs a bandwidth test; then let the probe counters run
        prom.wait_for_series("netaware_probe_bandwidth_bits_per_second", minimum=6, timeout=40)
        time.sleep(max(0.0, started + MEASURE_SECONDS - time.time()))
        end = time.time()
        window = int(end - started) - 3

        measured = measure(prom.url, end=end, window=window)
        nodes = [node(k) for k in KEYS]
        shaped = {(node("a"), node("b")), (node("b"), node("a"))}
        lossy = {(node("b"), node("c")), (node("c"), node("b"))}
        report = {pair: {k: round(v[pair], 4) for k, v in measured.items() if pair in v}
                  for pair in ((s, t) for s in nodes for t in nodes if s != t)}
        print("measured per pair:", report)  # shown with -s, and in the failure report
        for pair in report:
            bw = measured["bandwidth_mbps"].get(pair)
            loss = measured["loss_pct"].get(pair)
            assert bw is not None and loss is not None, report
            if pair in shaped:
                assert bw == pytest.approx(SHAPED_MBIT, rel=0.25), report
            else:
                assert bw > 2 * SHAPED_MBIT, report
            if pair in lossy:
                assert loss == pytest.approx(100 * LOSS, abs=4.0), report
            else:
                # While iperf fills a link, probes share its queue: the token bucket's tail drops, or a
                # veth backlog overflowing on a busy CPU, lose a few (up to 2.8 % seen). Well below the
                # random drop's, which is what reaches the topology as loss.
                assert loss < 100 * LOSS / 2, report
            # RTT is measured on every pair but not shaped (no netem), so only its presence is checked
            assert 0 < measured["latency_ms"].get(pair, 0) < 1000, report
    finally:
        problems = lab.teardown()
    assert problems == []
    remaining = netns.sh("ip", "netns", "list").stdout.split()
    assert not set(lab.namespaces.values()) & set(remaining)


def measure(prometheus_url: str, *, end: float, window: int) -> dict[str, dict[tuple[str, str], float]]:
    """Per directed pair: latency (ms, p90), bandwidth (Mbit/s) and loss (%), as the pipeline stores them.

    Runs the real pipeline: ``pull_window`` pulls the window from Prometheus into PairSample rows
    and ``rebuild_topology`` derives and stores the NetworkTopology snapshot that is read back.
    """
    from apps.probes.queries import build_pull_queries
    from apps.probes.services import pull_window
    from apps.topology.selectors import topology_for
    from apps.topology.services import rebuild_topology

    # the pipeline's default PromQL, with a rate window that fits this short test
    queries = build_pull_queries(None, rate=f"{window}s")
    pull_window(start=_ts(end - window), end=_ts(end), prometheus_url=prometheus_url, queries=queries)
    snapshot = rebuild_topology(now=_ts(end + 1))
    assert snapshot is not None
    topology = topology_for(snapshot=snapshot)
    index = {name: i for i, name in enumerate(topology.nodes)}
    # node placement came through netaware_node_info into the stored topology
    placement = {name: (zone, region) for name, zone, region in
                 zip(topology.nodes, topology.zones, topology.regions, strict=True)}
    assert placement == {node(k): (f"zone-{k}", "lab") for k in KEYS}
    out: dict[str, dict[tuple[str, str], float]] = {"latency_ms": {}, "bandwidth_mbps": {}, "loss_pct": {}}
    for field in out:
        matrix: np.ndarray = getattr(topology, field)
        for s, i in index.items():
            for t, j in index.items():
                if s != t and not np.isnan(matrix[i, j]) and not topology.inferred[i, j]:
                    out[field][(s, t)] = float(matrix[i, j])
    return out

