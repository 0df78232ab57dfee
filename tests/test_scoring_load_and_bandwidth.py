"""Load-aware scorers (water level, TargetLoadPacking, LoadVariationRiskBalancing), the overload
filter and the bandwidth filters: formulas, neutral on missing/stale metrics, pass on unknowns."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.probes.scenario import load_scenario
from apps.scheduler.scoring import engine
from apps.scheduler.scoring.common import NEUTRAL_SCORE
from apps.scheduler.scoring.state import ClusterState, NodeResources, NodeUsage, PodInfo
from apps.topology.scenario_topology import topology_from_scenario
from tests.support.scoring_fixtures import paper_appgroup, pod_labels

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper-testbed.yaml"


@pytest.fixture(scope="module")
def topology():
    return topology_from_scenario(load_scenario(SCENARIO))


def _flat(cpu: float) -> NodeUsage:
    return NodeUsage(cpu_15m=cpu, cpu_1h=cpu, cpu_1d=cpu)


def _state(topology, usage, *, recent=None, nodes=None) -> ClusterState:
    nodes = nodes or {n: NodeResources(n, allocatable_cpu_millicores=4000, allocatable_memory_bytes=8 << 30)
                      for n in topology.nodes}
    return ClusterState(topology=topology, appgroups=(paper_appgroup(),), nodes=nodes, usage=usage,
                        recent_bindings=recent or {})


POD = PodInfo("default", "cart-0", labels=pod_labels("cart"))


def _scores(state, scorer, candidates, params=None):
    profile = engine.Profile("t", ((scorer, 1.0, params or {}),))
    return engine.run_scorers(state, POD, candidates, profile).breakdown[scorer]


def test_water_level_targets_blend_of_average_and_least_loaded(topology):
    usage = {"n1402": _flat(0.2), "n1403": _flat(0.6), "n1404": _flat(0.4),
             "n1406": replace(_flat(0.1), stale=True)}
    state = _state(topology, usage)
    got = _scores(state, "water-level", ["n1402", "n1403", "n1404", "n1405", "n1406"])
    target = 0.7 * 0.4 + 0.3 * 0.2  # per window: 0.7 * mean + 0.3 * min (stale n1406 excluded)
    t = 100 * target
    expected = [(100 - t) * 20 / t + t, t * 40 / (100 - t), t * 60 / (100 - t), NEUTRAL_SCORE, NEUTRAL_SCORE]
    np.testing.assert_allclose(got, expected, atol=1e-9)
    hot = _scores(_state(topology, usage, recent={"n1402": 2}), "water-level", ["n1402"])
    assert hot[0] == pytest.approx(expected[0] - 20.0)


def test_target_load_packing_and_risk_balancing(topology):
    usage = {"n1402": NodeUsage(cpu_15m=0.3), "n1403": NodeUsage(cpu_15m=0.1), "n1404": NodeUsage(cpu_15m=0.99),
             "n1405": NodeUsage(cpu_1h=0.5, cpu_stddev_1h=0.1, mem_1h=0.2, mem_stddev_1h=0.04)}
    state = _state(topology, usage)
    pod = replace(POD, cpu_request_millicores=500)
    profile = engine.Profile("t", (("target-load-packing", 1.0, {}),))
    tlp = engine.run_scorers(state, pod, ["n1402", "n1403", "n1404", "n1406"], profile).breakdown["target-load-packing"]
    np.testing.assert_allclose(tlp, [40 * (100 - 42.5) / 60, 60 * 22.5 / 40 + 40, 0.0, NEUTRAL_SCORE])
    lvrb = _scores(state, "load-variation-risk", ["n1405", "n1406"])
    np.testing.assert_allclose(lvrb, [70.0, NEUTRAL_SCORE])  # min(cpu 70, memory 88)


def test_load_aware_is_neutral_without_metrics(topology):
    state = _state(topology, {"n1402": replace(_flat(0.95), stale=True)})
    for scorer in ("water-level", "target-load-packing", "load-variation-risk", "bandwidth-risk"):
        assert _scores(state, scorer, ["n1402", "n1403"]).tolist() == [NEUTRAL_SCORE, NEUTRAL_SCORE]
    out = engine.run_filters(state, POD, ["n1402", "n1403"], engine.BUILTIN_PROFILES["load-aware"])
    assert out.passed == ("n1402", "n1403")


def test_overload_filter_is_resolvable_failure(topology):
    state = _state(topology, {"n1402": _flat(0.95), "n1403": NodeUsage(mem_15m=0.5)})
    profile = engine.Profile("t", (("water-level", 1.0, {}),), ("overload",), {"overload": {"cpu_threshold": 0.9}})
    out = engine.run_filters(state, POD, ["n1402", "n1403"], profile)
    assert out.passed == ("n1403",) and not out.unresolvable
    assert "CPU utilisation 95%" in out.failed["n1402"]


def test_check_risk_node_bandwidth(topology):
    gbit = 1e9
    usage = {"n1402": NodeUsage(net_used_bps_mean=0.6 * gbit, net_used_bps_stddev=0.1 * gbit, net_capacity_bps=gbit),
             "n1403": NodeUsage(net_used_bps_mean=0.9 * gbit, net_used_bps_stddev=0.4 * gbit, net_capacity_bps=gbit),
             "n1404": NodeUsage(net_used_bps_mean=0.9 * gbit, net_capacity_bps=None)}
    state = _state(topology, usage)
    pod = replace(POD, bandwidth_request_bps=0.1 * gbit)
    profile = engine.Profile("t", (("bandwidth-risk", 1.0, {}),), ("bandwidth-risk",))
    out = engine.run_filters(state, pod, ["n1402", "n1403", "n1404"], profile)
    risk_bad = (1.0 + 0.4 ** 0.5) / 2  # mu clipped to 1
    assert out.passed == ("n1402", "n1404") and f"{risk_bad:.3f}" in out.failed["n1403"]
    scores = engine.run_scorers(state, pod, ["n1402", "n1404"], profile).breakdown["bandwidth-risk"]
    np.testing.assert_allclose(scores, [100 * (1 - (0.7 + 0.1 ** 0.5) / 2), NEUTRAL_SCORE])


def _bw_group(min_redis: float | None, min_frontend: float | None) -> AppGroupSpec:
    s = Sensitivity(0.5, 0.4, 0.1)
    return AppGroupSpec("default", "shop", (
        WorkloadSpec("frontend", LabelSelector({"app": "frontend"}), 1.0,
                     (DependencySpec("cart", s, min_bandwidth_bps=min_frontend),)),
        WorkloadSpec("cart", LabelSelector(pod_labels("cart")), 0.8,
                     (DependencySpec("redis-cart", s, min_bandwidth_bps=min_redis),)),
        WorkloadSpec("redis-cart", LabelSelector({"app": "redis-cart"}), 0.7),
    ))


def test_min_bandwidth_toward_dependencies_and_from_dependents(topology):
    profile = engine.BUILTIN_PROFILES["network"]
    nodes = ["n1402", "n1403", "n1407", "n1408", "n1412", "n1417"]
    state = ClusterState(topology=topology, appgroups=(_bw_group(200e6, None),),
                         placements={("default", "shop", "redis-cart"): ("n1402",)})
    out = engine.run_filters(state, POD, nodes, profile)
    assert out.passed == ("n1402", "n1403", "n1407", "n1408")
    assert set(out.unresolvable) == {"n1412", "n1417"} and not out.failed
    assert "100.0 Mbps, below the required 200.0 Mbps" in out.unresolvable["n1412"]
    state = ClusterState(topology=topology, appgroups=(_bw_group(None, 500e6),),
                         placements={("default", "shop", "frontend"): ("n1407",)})
    out = engine.run_filters(state, POD, nodes, profile)
    assert out.passed == ("n1407", "n1408")


def test_min_bandwidth_passes_unknown_bandwidth(topology):
    bw = topology.bandwidth_mbps.copy()
    bw[:, 0] = np.nan
    bare = replace(topology, bandwidth_mbps=bw, inferred=topology.inferred.copy(), stale=topology.stale.copy(),
                   latency_ms=topology.latency_ms.copy(), loss_pct=topology.loss_pct.copy())
    state = ClusterState(topology=bare, appgroups=(_bw_group(200e6, None),),
                         placements={("default", "shop", "redis-cart"): ("n1402",)})
    out = engine.run_filters(state, POD, ["n1412", "n1417"], engine.BUILTIN_PROFILES["network"])
    assert out.passed == ("n1412", "n1417")
