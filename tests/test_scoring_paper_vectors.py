"""The paper's testbed with nominal Table 3 values reproduces the issue's acceptance vectors, and the
vectorized Score equals a straightforward per-node loop of Algorithm 2 (slips fixed)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.scoring import engine
from apps.scheduler.scoring.common import WorkloadRef, topology_positions
from apps.scheduler.scoring.network_score import compute_score, network_scores
from apps.scheduler.scoring.state import ClusterState, PodInfo
from apps.topology.scenario_topology import topology_from_scenario
from tests.support import oracles
from tests.support.scoring_fixtures import paper_appgroup

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper-testbed.yaml"


@pytest.fixture(scope="module")
def topology():
    return topology_from_scenario(load_scenario(SCENARIO))


def test_extrema_come_from_off_diagonal_nominal_pairs(topology):
    assert (topology.min_latency, topology.max_latency) == (0.5, 10.0)
    assert (topology.min_bandwidth, topology.max_bandwidth) == (20.0, 1000.0)
    assert (topology.min_lossrate, topology.max_lossrate) == (0.0, 5.0)


@pytest.mark.parametrize(("target", "expected"), [("n1403", 1.0), ("n1407", 0.8361), ("n1412", 0.6887),
                                                   ("n1417", 0.0)])
def test_compute_score_vector(topology, target, expected):
    got = compute_score(topology, "n1402", target, Sensitivity(0.6, 0.3, 0.1))
    assert got == pytest.approx(expected, abs=5e-5)


def test_compute_score_normalizes_sensitivities(topology):
    a = compute_score(topology, "n1402", "n1407", Sensitivity(0.6, 0.3, 0.1))
    b = compute_score(topology, "n1402", "n1407", Sensitivity(6, 3, 1))
    assert a == pytest.approx(b)


def _cart_group() -> AppGroupSpec:
    sens = Sensitivity(0.5, 0.4, 0.1)
    return AppGroupSpec("default", "shop", (
        WorkloadSpec("frontend", LabelSelector({"app": "frontend"}), 1.0, (DependencySpec("cart", sens),)),
        WorkloadSpec("cart", LabelSelector({"app": "cart"}), 0.8, (DependencySpec("redis-cart", sens),)),
        WorkloadSpec("redis-cart", LabelSelector({"app": "redis-cart"}), 0.7),
    ))


CART_VECTOR = {"n1402": 80.59, "n1403": 89.48, "n1407": 80.47, "n1408": 90.31, "n1412": 55.79, "n1417": 0.0}


def test_score_vector_over_dependencies_and_dependents(topology):
    group = _cart_group()
    state = ClusterState(topology=topology, appgroups=(group,), placements={
        ("default", "shop", "redis-cart"): ("n1402",), ("default", "shop", "frontend"): ("n1407",)})
    names = list(CART_VECTOR)
    scores, _ = network_scores(state, WorkloadRef(group, group.workload("cart")), topology_positions(topology, names))
    assert scores is not None
    np.testing.assert_allclose(scores, list(CART_VECTOR.values()), atol=0.01)
    # Same numbers through the engine (network profile), over all 19 nodes and over a small subset.
    pod = PodInfo("default", "cart-1", labels={"app": "cart"})
    for candidates in (list(topology.nodes), names):
        out = engine.run_scorers(state, pod, candidates, engine.BUILTIN_PROFILES["network"])
        got = dict(zip(out.nodes, out.breakdown["network-score"], strict=True))
        for node, expected in CART_VECTOR.items():
            assert got[node] == pytest.approx(expected, abs=0.01)
        assert out.workload == ("default/shop", "cart")


def test_vectorized_score_equals_naive_loop_on_random_placements(topology):
    plain = paper_appgroup()
    rng = random.Random(7)
    weighted = replace(plain, workloads=tuple(  # per-dependency weights, as learned AppGroups carry them
        replace(w, dependencies=tuple(replace(d, weight=rng.choice((0.2, 1.0, 3.5, 40.0))) for d in w.dependencies))
        for w in plain.workloads))
    nodes = list(topology.nodes)
    for trial in range(30):
        group = plain if trial < 20 else weighted
        placements = {}
        for w in group.workloads:
            if rng.random() < 0.6:
                placements[("default", "online-boutique", w.name)] = tuple(
                    rng.choice(nodes) for _ in range(rng.randint(1, 3)))
        state = ClusterState(topology=topology, appgroups=(group,), placements=placements)
        for w in group.workloads:
            ref = WorkloadRef(group, w)
            candidates = nodes if trial % 2 else rng.sample(nodes, 4)
            scores, _ = network_scores(state, ref, topology_positions(topology, candidates))
            naive = [oracles.network_score(state, ref, n) for n in candidates]
            if scores is None:
                assert all(v is None for v in naive)
            else:
                np.testing.assert_allclose(scores, naive, atol=1e-4)
