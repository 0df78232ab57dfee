"""For a few candidates of a large topology the scorers read the (targets x candidates) submatrix
instead of full per-target vectors (``TopologyVectors.block``), and a small topology keeps all its
vectors at once (one gather per stack): either way the normalized values, the missing pairs and so
every score are exactly those of the per-target vectors, and Algorithm 2 still matches the per-node
reference loop."""

from __future__ import annotations

import random

import numpy as np

from apps.scheduler.scoring import network_score
from apps.scheduler.scoring.common import WorkloadRef, topology_positions
from apps.scheduler.scoring.indexes import TopologyVectors
from apps.scheduler.scoring.state import ClusterState
from apps.topology.topomath import Topology
from tests.support import oracles
from tests.support.scoring_fixtures import paper_appgroup, random_metrics

N = 240


def _topology(seed: int) -> Topology:
    rng = np.random.default_rng(seed)
    lat, bw, loss = random_metrics(rng, N, latency=(0.2, 40.0), bandwidth=(10.0, 10000.0), loss=(0.0, 5.0),
                                   missing=0.05)
    no = np.zeros((N, N), dtype=bool)
    zones = tuple(f"z{i // 40}" for i in range(N))
    return Topology(tuple(f"n{i}" for i in range(N)), zones, tuple("r" for _ in range(N)), lat, bw, loss, no,
                    no.copy())


def test_blocks_equal_sliced_full_vectors():
    vectors = TopologyVectors(_topology(1))
    rng = np.random.default_rng(2)
    for _ in range(40):
        targets = np.unique(rng.choice(N, rng.integers(1, 30)))
        cols = np.unique(rng.choice(N, rng.integers(1, 50)))
        for reverse in (False, True):
            full = vectors.stacked(targets, reverse)
            block = vectors.block(targets, cols, reverse)
            np.testing.assert_array_equal(block.zeros, full.zeros[:, :, cols])
            in_cols = np.isin(full.nan_col, cols)
            want = sorted(zip(full.nan_u[in_cols].tolist(), full.nan_col[in_cols].tolist(), strict=True))
            got = sorted(zip(block.nan_u.tolist(), cols[block.nan_col].tolist(), strict=True))
            assert got == want


def test_network_scores_on_a_few_candidates_match_the_reference_loop():
    topology = _topology(3)
    group = paper_appgroup()
    rnd = random.Random(4)
    names = list(topology.nodes)
    placements = {(group.namespace, group.name, w.name): tuple(rnd.choice(names) for _ in range(rnd.randint(1, 6)))
                  for w in group.workloads if rnd.random() < 0.8}
    state = ClusterState(topology=topology, appgroups=(group,), placements=placements)
    for workload in group.workloads:
        ref = WorkloadRef(group, workload)
        candidates = rnd.sample(names, 20)  # 20 * 4 < 240: the submatrix path
        scores, _ = network_score.network_scores(state, ref, topology_positions(topology, candidates))
        if scores is None:
            continue
        for node, got in zip(candidates, scores, strict=True):
            want = oracles.network_score(state, ref, node)
            assert abs(got - want) < 1e-3, (workload.name, node, got, want)


def _stack_from_vectors(vectors: TopologyVectors, targets: np.ndarray, reverse: bool):
    raw = np.stack([vectors.vector(int(t), reverse) for t in targets], axis=1)
    nan = np.isnan(raw)
    nan_u, nan_col = np.nonzero(nan.any(axis=0))
    return np.where(nan, np.float32(0.0), raw), nan_u, nan_col, raw[:, nan_u, nan_col].astype(np.float64)


def test_stacks_gathered_from_the_whole_topology_equal_per_target_vectors():
    vectors = TopologyVectors(_topology(5))
    rng = np.random.default_rng(6)
    for _ in range(40):
        targets = np.unique(rng.choice(N, rng.integers(1, N)))
        for reverse in (False, True):
            got = vectors.stacked(targets, reverse)
            zeros, nan_u, nan_col, nan_vals = _stack_from_vectors(vectors, targets, reverse)
            np.testing.assert_array_equal(got.zeros, zeros)
            np.testing.assert_array_equal(got.nan_u, nan_u)
            np.testing.assert_array_equal(got.nan_col, nan_col)
            np.testing.assert_array_equal(got.nan_vals, nan_vals)  # NaN where both are NaN
            assert not got.zeros.flags.writeable
    assert set(vectors._dense_parts) == {False, True}  # the whole-topology path answered
