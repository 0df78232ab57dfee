"""The bounded fan-out: at most K peers, every directed zone pair measured by at least m node
pairs in every epoch, deterministic from the node list alone, and rotating so every pair comes round."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from apps.probes.fanout import (
    FanoutError,
    FanoutNode,
    FanoutSettings,
    cluster_fanout,
    cluster_fanout_at,
    coverage,
    epochs_to_cover_all,
    layout,
    node_epoch,
    peers_of,
)
from apps.probes.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def scenario_nodes(name: str) -> list[FanoutNode]:
    scenario = load_scenario(ROOT / "scenarios" / name)
    return [FanoutNode(n.name, n.zone, n.region) for n in scenario.nodes]


def random_cluster(seed: int) -> list[FanoutNode]:
    rng = random.Random(seed)
    nodes = []
    for z in range(rng.randint(2, 25)):
        for i in range(rng.randint(1, 60)):
            nodes.append(FanoutNode(f"z{z}-{i}", f"zone-{z}", f"r{z % 3}"))
    return nodes


@pytest.mark.parametrize("nodes_of", [
    lambda: scenario_nodes("paper-testbed.yaml"),
    lambda: scenario_nodes("large-1000.yaml"),
    *[(lambda s=s: random_cluster(s)) for s in range(6)],
])
@pytest.mark.parametrize("k", [5, 10, 24, 40])
def test_each_agent_probes_at_most_k_peers_and_every_zone_pair_gets_m(nodes_of, k: int) -> None:
    nodes = nodes_of()
    settings = FanoutSettings(max_peers=k, min_pairs=3)
    lay = layout(nodes)
    for epoch in (0, 1, 17):
        peers = cluster_fanout(nodes, settings, epoch)
        for source, targets in peers.items():
            assert len(targets) <= k
            assert source not in targets
            assert len(set(targets)) == len(targets)
            # each agent computes its own part from the node list alone: same answer
            assert peers_of(lay, source, settings, epoch) == targets
        cov = coverage(nodes, peers, 3)
        # The guarantee holds whenever K leaves room for it (q_min + own_min <= K, true for these).
        zones = len(lay.zones)
        smallest = min(len(z.members) for z in lay.zones)
        if k >= -(-3 * (zones - 1) // smallest) + 1:
            assert not cov.shortfall, (epoch, dict(cov.shortfall))


def test_plan_does_not_depend_on_input_order() -> None:
    nodes = random_cluster(42)
    shuffled = list(nodes)
    random.Random(1).shuffle(shuffled)
    settings = FanoutSettings(max_peers=12)
    assert cluster_fanout(nodes, settings, 5) == cluster_fanout(shuffled, settings, 5)


def test_full_mesh_when_k_is_zero_or_covers_everyone() -> None:
    nodes = scenario_nodes("paper-testbed.yaml")
    names = {n.name for n in nodes}
    for k in (0, len(nodes) - 1, 100):
        peers = cluster_fanout(nodes, FanoutSettings(max_peers=k), 3)
        assert all(set(targets) == names - {source} for source, targets in peers.items())


def test_own_zone_is_probed_in_full_when_small() -> None:
    nodes = scenario_nodes("paper-testbed.yaml")
    zone = {n.name: n.zone for n in nodes}
    peers = cluster_fanout(nodes, FanoutSettings(max_peers=10), 0)
    for source, targets in peers.items():
        same = {t for t in targets if zone[t] == zone[source]}
        assert same == {n.name for n in nodes if n.zone == zone[source]} - {source}


def test_rotation_reaches_every_pair_and_changes_the_sample() -> None:
    nodes = [FanoutNode(f"n{z}-{i}", f"z{z}") for z in range(6) for i in range(12)]
    settings = FanoutSettings(max_peers=8)
    lay = layout(nodes)
    first = cluster_fanout(nodes, settings, 0)
    assert cluster_fanout(nodes, settings, 1) != first
    for node in nodes:
        epochs = epochs_to_cover_all(lay, node.name, settings)
        assert epochs is not None and epochs <= 20, (node.name, epochs)


def test_rotation_epoch_follows_the_clock() -> None:
    settings = FanoutSettings(rotation_seconds=600)
    assert settings.epoch(1200.0) == 2 and settings.epoch(1799.9) == 2 and settings.epoch(1800.0) == 3


def test_nodes_without_zone_are_their_own_zone() -> None:
    nodes = [FanoutNode(f"n{i}") for i in range(10)]
    peers = cluster_fanout(nodes, FanoutSettings(max_peers=4, min_pairs=1), 0)
    assert all(len(t) == 4 for t in peers.values())
    # every node is still probed by someone
    assert {t for targets in peers.values() for t in targets} == {n.name for n in nodes}


def test_bad_input_names_the_parameter() -> None:
    with pytest.raises(FanoutError, match="max_peers"):
        FanoutSettings(max_peers=-1)
    with pytest.raises(FanoutError, match="min_pairs"):
        FanoutSettings(min_pairs=0)
    with pytest.raises(FanoutError, match="rotation_seconds"):
        FanoutSettings(rotation_seconds=0)
    with pytest.raises(FanoutError, match="duplicate node 'a'"):
        layout([FanoutNode("a"), FanoutNode("a")])
    with pytest.raises(FanoutError, match="not in the node list"):
        peers_of(layout([FanoutNode("a"), FanoutNode("b")]), "c", FanoutSettings(), 0)


def test_staggered_rotation_keeps_coverage_and_spreads_the_churn() -> None:
    """Nodes of a zone rotate one after the other (fanout.node_epoch): at every instant every zone pair
    still has m measured pairs, and no instant sees more than a few nodes change their peers, so a
    Prometheus head never holds two full generations of series."""
    nodes = scenario_nodes("large-1000.yaml")
    settings = FanoutSettings(max_peers=24, rotation_seconds=3600)
    lay = layout(nodes)
    start = 1_800_000_000.0
    before = cluster_fanout_at(nodes, settings, start)
    most_changed = 0
    for step in range(1, 61):  # one period in one-minute steps
        now = start + 60 * step
        peers = cluster_fanout_at(nodes, settings, now)
        assert not coverage(nodes, peers, 3).shortfall, now
        changed = sum(peers[n] != before[n] for n in peers)
        most_changed = max(most_changed, changed)
        before = peers
    # 1,000 nodes rotate once per period: about 17 per minute, never all at once
    assert 0 < most_changed <= 60
    assert {node_epoch(lay, n.name, settings, start + 3600) for n in nodes} <= {
        node_epoch(lay, nodes[0].name, settings, start + 3600) - 1, node_epoch(lay, nodes[0].name, settings,
                                                                              start + 3600)}
