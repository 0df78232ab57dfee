"""The learning rule of observed traffic (apps/traffic/edges.py, learning.py, adapters): bad series are
refused with a reason, a quiet window never deletes an edge but a long idle time does, workloads map to
the cluster's own selectors, applications split by component and part-of, sensitivities follow call sizes."""

from __future__ import annotations

import math

import pytest

from apps.appgroups import documents
from apps.appgroups.graph import AppGroupSpec, DependencySpec, LabelSelector, Sensitivity, WorkloadSpec
from apps.traffic import edges, learning
from apps.traffic.adapters import ADAPTERS, MEASURES
from apps.traffic.adapters.istio import ADAPTER as ISTIO
from apps.traffic.edges import Edge, Rates
from apps.traffic.learning import ClusterObject, LearningParams

NS = "shop"


def series(src, dst, values, *, src_ns=NS, dst_ns=NS):
    return {"metric": {"source_workload_namespace": src_ns, "source_workload": src,
                       "destination_workload_namespace": dst_ns, "destination_workload": dst},
            "values": [[ts, v] for ts, v in values]}


def parse(matrices, max_edges=100):
    return edges.parse_window_matrices(matrices, ISTIO.labels, default_namespace="default", max_edges=max_edges)


def test_every_adapter_names_its_edge_labels_in_every_query():
    for adapter in ADAPTERS.values():
        assert adapter.queries["requests"], adapter.name
        for measure in MEASURES:
            text = adapter.query(measure, rate="2m")
            if text is None:
                continue
            assert "$" not in text and "[2m]" in text, (adapter.name, measure)
            assert f"by ({adapter.labels.by}" in text, (adapter.name, measure)
        assert adapter.presence_query().startswith("count(")


def test_bad_series_are_refused_with_a_reason_and_good_ones_kept():
    matrices = {
        "requests": [
            series("frontend", "cart", [(60, "3.5")]),
            series("frontend", "ad", [(60, "NaN")]),
            series("frontend", "shipping", [(60, "-1")]),
            series("frontend", "checkout", [(60, "+Inf")]),
            series("Bad_Name", "cart", [(60, "1")]),
            series("x" * 70, "cart", [(60, "1")]),
            series("unknown", "frontend", [(60, "9")]),
            series("cart", "cart", [(60, "1")]),
            series("frontend", "cart", [(60, "1")], src_ns="Not A Namespace"),
        ],
        "p50": [series("frontend", "cart", [(60, "NaN")])],  # no observation: unknown, not wrong
        "p99": [series("frontend", "cart", [(60, "0.02")])],
    }
    windows, rejected = parse(matrices)
    assert list(windows[60]) == [Edge(NS, "frontend", NS, "cart")]
    rates = windows[60][Edge(NS, "frontend", NS, "cart")]
    assert rates.requests == 3.5 and math.isnan(rates.p50) and rates.p99 == 0.02
    assert rejected.counts == {"not finite": 2, "negative": 1, "invalid name": 3, "unknown workload": 1,
                               "self edge": 1}
    assert "Bad_Name" in rejected.summary()


def test_too_many_edges_keep_the_busiest_and_say_so():
    matrices = {"requests": [series(f"w{i}", "sink", [(60, str(i))]) for i in range(50)]}
    windows, rejected = parse(matrices, max_edges=10)
    assert len(windows[60]) == 10
    assert min(r.requests for r in windows[60].values()) == 40
    assert rejected.counts["edge cap"] == 40


def test_sources_merge_by_priority():
    e = Edge(NS, "a", NS, "b")
    merged = edges.merge_sources({"otel": {e: Rates(requests=1)}, "istio": {e: Rates(requests=2)},
                                  "hubble": {Edge(NS, "a", NS, "c"): Rates(requests=3)}},
                                 {name: a.priority for name, a in ADAPTERS.items()})
    assert merged[e][0] == "istio" and merged[e][1].requests == 2
    assert merged[Edge(NS, "a", NS, "c")][0] == "hubble"


def window(**rps):
    return {Edge(NS, key.split("__")[0], NS, key.split("__")[1]): ("istio", Rates(requests=v, request_bytes=100 * v, response_bytes=200 * v))
            for key, v in rps.items()}


def test_an_edge_survives_quiet_windows_and_goes_after_the_idle_time():
    params = LearningParams(alpha=0.5, idle_seconds=180)
    states = learning.update_states({}, window(a__b=4.0), at=60, params=params)
    assert states[Edge(NS, "a", NS, "b")].requests == 4.0  # started at the observed value, not from zero
    states = learning.update_states(states, window(a__b=2.0), at=120, params=params)
    assert states[Edge(NS, "a", NS, "b")].requests == 3.0
    for at in (180, 240, 300):  # quiet: decays but stays
        states = learning.update_states(states, {}, at=at, params=params)
        assert Edge(NS, "a", NS, "b") in states
    assert states[Edge(NS, "a", NS, "b")].requests == pytest.approx(3.0 / 8)
    states = learning.update_states(states, window(a__b=0.0), at=360, params=params)  # inactive window
    assert Edge(NS, "a", NS, "b") not in states


def test_a_sub_threshold_edge_is_never_learned():
    params = LearningParams(min_requests=0.5, min_bytes=1e9)
    assert learning.update_states({}, window(a__b=0.1), at=60, params=params) == {}


def pod(name, labels, owner):
    return ClusterObject("Pod", NS, name, labels, owner)


def test_workloads_map_to_the_clusters_own_selectors_through_the_owner_chain():
    objects = [
        ClusterObject("Deployment", NS, "frontend", match_labels={"app": "frontend"}, replicas=2),
        ClusterObject("ReplicaSet", NS, "frontend-7d9", owner=("Deployment", "frontend")),
        pod("frontend-7d9-a", {"app": "frontend", "pod-template-hash": "7d9", "app.kubernetes.io/part-of": "boutique"},
            ("ReplicaSet", "frontend-7d9")),
        pod("frontend-7d9-b", {"app": "frontend", "pod-template-hash": "7d9", "app.kubernetes.io/part-of": "boutique"},
            ("ReplicaSet", "frontend-7d9")),
        ClusterObject("StatefulSet", NS, "redis-cart", match_labels={"tier": "cache"}),
        pod("redis-cart-0", {"app.kubernetes.io/name": "redis", "app": "redis-cart",
                             "controller-revision-hash": "x"}, ("StatefulSet", "redis-cart")),
        ClusterObject("Deployment", NS, "idle", match_labels={"role": "idle"}, template_labels={"role": "idle"}),
        pod("cache-0", {"app": "cache", "tier": "x"}, None),  # bare pods: one workload per app label
        pod("cache-1", {"app": "cache", "tier": "y"}, None),
    ]
    known = learning.workload_identities(objects)
    front = known[(NS, "frontend")]
    assert front.selector == {"app": "frontend"} and front.controller_kind == "Deployment"
    assert front.part_of == "boutique" and front.replicas == 2 and "pod-template-hash" not in front.labels
    redis = known[(NS, "redis-cart")]
    assert redis.selector == {"app.kubernetes.io/name": "redis"} and redis.controller_kind == "StatefulSet"
    assert known[(NS, "redis")] is redis  # a service graph's name for it
    assert known[(NS, "idle")].selector == {"role": "idle"}
    assert known[(NS, "cache")].selector == {"app": "cache"} and known[(NS, "cache")].replicas == 2
    assert known[(NS, "cache")].controller_kind == "" and (NS, "cache-0") not in known
    guessed = learning.identity_for(NS, "ghost", known)
    assert guessed.selector == {"app": "ghost"} and not guessed.resolved


def state(src, dst, rps, *, req=100.0, resp=100.0, ns=NS, dst_ns=None):
    return learning.EdgeState(Edge(ns, src, dst_ns or ns, dst), "istio", rps, 0.0, req * rps, resp * rps,
                              0.001, 0.01, 0, 0)


def test_applications_are_components_named_after_their_entry_point():
    states = [state("frontend", "cart", 5), state("cart", "redis", 5), state("frontend", "ad", 1),
              state("batch", "store", 2), state("frontend", "audit", 1, dst_ns="ops")]
    apps = learning.applications(states, {})
    assert [(a.namespace, a.name) for a in apps] == [(NS, "batch"), (NS, "frontend")]
    front = apps[1]
    assert {w.name for w in front.workloads} == {"frontend", "cart", "redis", "ad"}
    assert {(e.edge.source, e.edge.target) for e in front.edges} == {("frontend", "cart"), ("cart", "redis"),
                                                                      ("frontend", "ad")}
    documents.spec_from_document(documents.document_from_spec(front.spec))  # a valid AppGroup
    assert front.spec.workload("cart").weight == 1.0 and front.spec.workload("frontend").weight == 0.6  # 10 vs 6 req/s


def test_edge_weights_are_traffic_over_the_median_edge_and_travel_in_the_document():
    # 200 B per call: traffic = rps * (1 + 400 / 4096); the median edge (cart -> redis) weighs 1.
    states = [state("frontend", "cart", 5), state("cart", "redis", 2), state("frontend", "ad", 1),
              state("frontend", "stream", 0, req=0, resp=0)]
    states[3] = learning.EdgeState(Edge(NS, "frontend", NS, "stream"), "istio", 0.0, math.nan, 0.0, 8 * 4096.0,
                                   math.nan, math.nan, 0, 0)  # a TCP stream: 8 "calls" of 4 KiB per second
    weights = {(e.source, e.target): w for e, w in learning.edge_weights(states).items()}
    call = 1 + 200 / 4096
    median = (2 * call + 5 * call) / 2  # four edges: mean of the middle two (cart->redis, frontend->cart)
    exact = {("frontend", "cart"): 5 * call / median, ("cart", "redis"): 2 * call / median,
             ("frontend", "ad"): call / median, ("frontend", "stream"): 8 / median}
    assert weights == pytest.approx(exact, rel=0.05)
    assert all(f"{w:.2g}" == f"{w:g}" for w in weights.values())  # two significant digits: noise does not show
    assert weights[("frontend", "stream")] > weights[("frontend", "cart")] > weights[("frontend", "ad")]
    odd = learning.edge_weights(states[:3])
    assert sorted(odd.values()) == [0.5, 1.0, 2.5]  # the median edge exactly 1, two significant digits
    spec = learning.applications(states[:3], {})[0].spec
    assert spec.workload("frontend").dependencies[1].weight == 2.5  # frontend -> cart (sorted: ad, cart)
    doc = documents.document_from_spec(spec)
    deps = {(w["name"], d["name"]): d.get("weight") for w in doc["spec"]["workloads"] for d in w.get("dependencies", [])}
    assert deps == {("frontend", "ad"): 0.5, ("frontend", "cart"): 2.5, ("cart", "redis"): None}  # 1 is the default
    assert documents.spec_from_document(doc) == spec


def test_every_edge_without_traffic_weighs_one():
    idle = [state("a", "b", 0, req=0, resp=0), state("b", "c", 0, req=0, resp=0)]
    assert set(learning.edge_weights(idle).values()) == {1.0}


def test_part_of_splits_applications_that_call_each_other():
    known = {(NS, "a"): learning.WorkloadIdentity(NS, "a", {"app": "a"}, part_of="shop"),
             (NS, "b"): learning.WorkloadIdentity(NS, "b", {"app": "b"}, part_of="shop"),
             (NS, "c"): learning.WorkloadIdentity(NS, "c", {"app": "c"}, part_of="billing"),
             (NS, "d"): learning.WorkloadIdentity(NS, "d", {"app": "d"})}
    apps = learning.applications([state("a", "b", 3), state("b", "c", 3), state("c", "d", 3)], known)
    assert {a.name: sorted(w.name for w in a.workloads) for a in apps} == {"shop": ["a", "b"],
                                                                            "billing": ["c", "d"]}


def test_small_chatty_calls_are_latency_bound_and_large_bodies_bandwidth_bound():
    chatty = learning.sensitivity(state("a", "b", 50, req=200, resp=800))
    bulk = learning.sensitivity(state("a", "b", 1, req=1000, resp=4 * 2**20))
    middle = learning.sensitivity(state("a", "b", 1, req=0, resp=64 * 1024))
    stream = learning.sensitivity(learning.EdgeState(Edge(NS, "a", NS, "b"), "istio", 0.0, math.nan, 5e5, 5e5,
                                                     math.nan, math.nan, 0, 0))
    assert chatty == Sensitivity(0.9, 0.0, 0.1)
    assert bulk == stream == Sensitivity(0.0, 0.9, 0.1)
    assert 0 < middle.latency < 0.9 and 0 < middle.bandwidth < 0.9


def test_diff_names_the_hot_edges_the_declared_appgroup_misses():
    apps = learning.applications([state("frontend", "cart", 5), state("frontend", "ad", 0.2)], {})
    declared = AppGroupSpec(NS, "shop", (
        WorkloadSpec("web", LabelSelector({"app": "frontend"}),
                     dependencies=(DependencySpec("ads", Sensitivity(1, 0, 0)),
                                   DependencySpec("pay", Sensitivity(1, 0, 0)))),
        WorkloadSpec("ads", LabelSelector({"app": "ad"})), WorkloadSpec("pay", LabelSelector({"app": "pay"}))))
    d = learning.diff(apps[0], declared)
    assert d.missing == (("web", "cart", 5),) and d.unmatched_workloads == ("cart",)
    assert d.common == (("web", "ads"),) and d.extra == (("web", "pay"),)
    assert d.hot_missing(1.0) == 1 and d.hot_missing(10.0) == 0


def test_diff_names_the_common_edges_whose_weights_disagree_with_the_traffic():
    # Learned: frontend -> cart 10 req/s, cart -> redis 5, frontend -> ad 0.5 (shares 2, 1, 0.1 of the median).
    apps = learning.applications([state("frontend", "cart", 10), state("cart", "redis", 5), state("frontend", "ad", 0.5)],
                                 {})

    def declared(cart_weight: float, ad_weight: float) -> AppGroupSpec:
        return AppGroupSpec(NS, "shop", (
            WorkloadSpec("web", LabelSelector({"app": "frontend"}), dependencies=(
                DependencySpec("cart", Sensitivity(1, 0, 0), weight=cart_weight),
                DependencySpec("ads", Sensitivity(1, 0, 0), weight=ad_weight))),
            WorkloadSpec("cart", LabelSelector({"app": "cart"}),
                         dependencies=(DependencySpec("redis", Sensitivity(1, 0, 0)),)),
            WorkloadSpec("ads", LabelSelector({"app": "ad"})), WorkloadSpec("redis", LabelSelector({"app": "redis"}))))

    unweighted = learning.diff(apps[0], declared(1.0, 1.0))  # all 1: compared by shape
    assert [(s, t) for s, t, *_ in unweighted.reweighted] == [("web", "ads"), ("web", "cart")]  # 10x off, then 2x
    assert unweighted.reweighted[0][2:] == (1.0, 0.1, 0.5) and unweighted.hot_reweighted(1.0) == 1
    agreeing = learning.diff(apps[0], declared(2.0, 0.1))  # the learned weights themselves: no drift
    assert agreeing.reweighted == () and agreeing.missing == () and agreeing.hot_reweighted(0.0) == 0
    assert learning.diff(apps[0], declared(2.0, 0.1), weight_drift_ratio=1.01).reweighted == ()
    assert [r[:2] for r in learning.diff(apps[0], declared(3.0, 0.1), weight_drift_ratio=1.2).reweighted] == [
        ("web", "cart")]  # 3 vs 2: 1.5x off
    assert learning.diff(apps[0], None).reweighted == ()
