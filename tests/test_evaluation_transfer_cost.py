"""Cross-zone and cross-region traffic of a placement, priced per GB (the evaluation's cost column)."""

from __future__ import annotations

import numpy as np
import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.scheduler.evaluation.metrics import TransferModel, transfer_cost
from apps.scheduler.scoring.state import ClusterState, NodeResources
from apps.topology.topomath import Topology


def _state(placements):
    nodes = {n: NodeResources(n, zone, region) for n, zone, region in (
        ("a1", "a", "eu"), ("a2", "a", "eu"), ("b1", "b", "eu"), ("u1", "u", "us"))}
    group = AppGroupSpec("ns", "app", (
        WorkloadSpec("front", LabelSelector({"app": "front"}), 1.0, (DependencySpec("db", Sensitivity(1, 0, 0)),),
                     replicas=2),
        WorkloadSpec("db", LabelSelector({"app": "db"}), 1.0, replicas=1),
    ))
    empty = np.zeros((0, 0))
    topology = Topology((), (), (), empty, empty.copy(), empty.copy(), empty.astype(bool), empty.astype(bool))
    return ClusterState(topology=topology, appgroups=(group,), placements=placements, nodes=nodes), group


def test_cross_zone_and_cross_region_bytes_are_priced_per_gb():
    model = TransferModel(bytes_per_call=1000, cross_zone_usd_per_gb=0.02, cross_region_usd_per_gb=0.05,
                          requests=1_000_000)  # 1 GB of calls per dependency
    state, group = _state({("ns", "app", "front"): ("a1", "b1"), ("ns", "app", "db"): ("a2",)})
    cost = transfer_cost(state, [group], model)
    # half of the front->db pairs cross a zone (b1 -> a2), none a region
    assert (cost.cross_zone_gb, cost.cross_region_gb) == pytest.approx((0.5, 0.0))
    assert cost.usd == pytest.approx(0.01)
    state, group = _state({("ns", "app", "front"): ("u1", "a1"), ("ns", "app", "db"): ("a1",)})
    cost = transfer_cost(state, [group], model)
    assert (cost.cross_zone_gb, cost.cross_region_gb, cost.usd) == pytest.approx((0.0, 0.5, 0.025))


def test_one_zone_costs_nothing():
    state, group = _state({("ns", "app", "front"): ("a1", "a2"), ("ns", "app", "db"): ("a2",)})
    assert transfer_cost(state, [group], TransferModel()).usd == 0.0
