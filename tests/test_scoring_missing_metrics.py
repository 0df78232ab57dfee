"""NetworkScore's explicit rules for min == max, missing metrics, the same node and unknown nodes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.scheduler.scoring import engine
from apps.scheduler.scoring.common import NEUTRAL_SCORE, WorkloadRef, topology_positions
from apps.scheduler.scoring.network_score import compute_score, network_scores
from apps.scheduler.scoring.state import ClusterState, PodInfo
from apps.topology.scenario_topology import metric_extrema
from apps.topology.topomath import Topology
from tests.support import oracles
from tests.support.scoring_fixtures import random_metrics

NAN = float("nan")


def _topology(lat, bw, loss, *, extrema=True) -> Topology:
    lat, bw, loss = (np.array(a, dtype=float) for a in (lat, bw, loss))
    n = lat.shape[0]
    names = tuple(f"m{i}" for i in range(n))
    bounds = metric_extrema(lat, bw, loss) if extrema else (NAN,) * 6
    no = np.zeros((n, n), dtype=bool)
    return Topology(names, ("z",) * n, ("r",) * n, lat, bw, loss, no, no.copy(), *bounds)


def test_min_equal_max_metric_contributes_its_full_weight():
    topo = _topology([[0, 2, 2], [2, 0, 2], [2, 2, 0]], [[NAN, 100, 10], [100, NAN, 10], [10, 10, NAN]],
                     [[NAN, 1, 1], [1, NAN, 1], [1, 1, NAN]])
    # Latency and loss identical everywhere -> normalized 1; bandwidth spans 10..100.
    assert compute_score(topo, "m0", "m1", Sensitivity(1, 0, 0)) == 1.0
    assert compute_score(topo, "m0", "m2", Sensitivity(0.5, 0.25, 0.25)) == pytest.approx(0.75)
    assert compute_score(topo, "m0", "m1", Sensitivity(0.5, 0.25, 0.25)) == pytest.approx(1.0)


def test_missing_metrics_are_renormalized_and_all_missing_is_unreachable():
    lat = [[0, 1, 3, NAN], [1, 0, 3, 3], [3, 3, 0, 3], [NAN, 3, 3, 0]]
    bw = [[NAN, 100, NAN, NAN], [100, NAN, 10, 10], [NAN, 10, NAN, 10], [NAN, 10, 10, NAN]]
    loss = [[NAN, 0, NAN, NAN], [0, NAN, 2, 2], [NAN, 2, NAN, 2], [NAN, 2, 2, NAN]]
    topo = _topology(lat, bw, loss)
    s = Sensitivity(0.5, 0.3, 0.2)
    # m0 -> m2: only latency (3 = max -> 0) known; renormalized to latency alone.
    assert compute_score(topo, "m0", "m2", s) == pytest.approx(0.0)
    assert compute_score(topo, "m0", "m1", s) == pytest.approx(1.0)
    # m0 -> m3: nothing known -> UnreachableNodeScore.
    assert compute_score(topo, "m0", "m3", s) == 0.0
    # Only latency is known for m0 -> m2, and this dependency does not care about latency -> 0.5.
    assert compute_score(topo, "m0", "m2", Sensitivity(0, 0.5, 0.5)) == 0.5


def test_same_node_score_is_configurable():
    topo = _topology([[0, 1], [1, 0]], [[NAN, 100], [100, NAN]], [[NAN, 0], [0, NAN]])
    group = AppGroupSpec("ns", "g", (
        WorkloadSpec("a", LabelSelector({"app": "a"}), 1.0, (DependencySpec("b", Sensitivity(1, 1, 1)),)),
        WorkloadSpec("b", LabelSelector({"app": "b"}), 1.0),
    ))
    state = ClusterState(topology=topo, appgroups=(group,), placements={("ns", "g", "b"): ("m0",)})
    pod = PodInfo("ns", "a-1", labels={"app": "a"})
    default = engine.run_scorers(state, pod, ["m0", "m1"], engine.BUILTIN_PROFILES["network"])
    assert default.breakdown["network-score"][0] == pytest.approx(80.0)
    custom = engine.Profile("custom", (("network-score", 1.0, {"same_node_score": 0.5}),))
    out = engine.run_scorers(state, pod, ["m0", "m1"], custom)
    assert out.breakdown["network-score"][0] == pytest.approx(50.0)
    assert out.breakdown["network-score"][1] == pytest.approx(100.0)


def test_unknown_nodes_are_neutral_and_noted_never_an_error():
    topo = _topology([[0, 1], [1, 0]], [[NAN, 100], [100, NAN]], [[NAN, 0], [0, NAN]])
    group = AppGroupSpec("ns", "g", (
        WorkloadSpec("a", LabelSelector({"app": "a"}), 1.0, (DependencySpec("b", Sensitivity(1, 1, 1)),)),
        WorkloadSpec("b", LabelSelector({"app": "b"}), 1.0),
    ))
    # One of b's pods sits on a node the topology lacks: left out of the average, noted.
    state = ClusterState(topology=topo, appgroups=(group,), placements={("ns", "g", "b"): ("m1", "ghost")})
    pod = PodInfo("ns", "a-1", labels={"app": "a"})
    for name in engine.BUILTIN_PROFILES:
        profile = engine.BUILTIN_PROFILES[name]
        out = engine.run_scorers(state, pod, ["m0", "nowhere", "m1"], profile)
        assert out.total[1] == NEUTRAL_SCORE
        assert any("nowhere" in note for note in out.notes)
        filtered = engine.run_filters(state, pod, ["m0", "nowhere"], profile)
        assert "nowhere" in filtered.passed
    out = engine.run_scorers(state, pod, ["m0", "m1"], engine.BUILTIN_PROFILES["network"])
    assert out.breakdown["network-score"][0] == pytest.approx(100.0)
    assert any("ghost" in note for note in out.notes)


@pytest.mark.parametrize("subset", [False, True])
def test_vectorized_missing_metric_path_equals_naive(subset):
    rng = np.random.default_rng(3)
    lat, bw, loss = random_metrics(rng, 40, latency=(0.2, 20), bandwidth=(5, 1000), loss=(0, 5), missing=0.15)
    topo = _topology(lat, bw, loss)
    names = list(topo.nodes)
    group = AppGroupSpec("ns", "g", (
        WorkloadSpec("a", LabelSelector({"app": "a"}), 0.7, (DependencySpec("b", Sensitivity(0.6, 0.3, 0.1)),
                                                              DependencySpec("c", Sensitivity(0.2, 0.2, 0.6)))),
        WorkloadSpec("b", LabelSelector({"app": "b"}), 0.9, (DependencySpec("a", Sensitivity(0, 1, 0)),)),
        WorkloadSpec("c", LabelSelector({"app": "c"}), 0.4),
    ))
    r = random.Random(1)
    placements = {("ns", "g", w): tuple(r.choice(names) for _ in range(5)) for w in ("a", "b", "c")}
    state = ClusterState(topology=topo, appgroups=(group,), placements=placements)
    candidates = r.sample(names, 6) if subset else names
    for w in ("a", "b", "c"):
        ref = WorkloadRef(group, group.workload(w))
        scores, _ = network_scores(state, ref, topology_positions(topo, candidates))
        assert scores is not None
        np.testing.assert_allclose(scores, [oracles.network_score(state, ref, c) for c in candidates], atol=1e-4)
