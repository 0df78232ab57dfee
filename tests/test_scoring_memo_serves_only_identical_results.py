"""The engine's per-pod memo (filter -> prioritize reuse) never changes an answer.

For random pods, candidate sets (with nodes unknown to the topology), profiles and cluster states,
run_filters + run_scorers with the memo (first call, prioritize on the survivors, and repeated
calls) give exactly what a call with the memo off gives; a new ClusterState (a new placement, new
usage, also one stepped with ``evolve`` and its reused indexes) or a changed pod is never served
from an old entry; callers mutating what they got back cannot corrupt it; concurrent threads get
the same answers; the memo stays bounded.
"""

from __future__ import annotations

import random
import threading
from dataclasses import replace

import numpy as np
import pytest

from apps.scheduler.scoring import engine, plans
from apps.scheduler.scoring.plugins import plan as plan_plugin
from apps.scheduler.scoring.state import ClusterState, NodeResources, NodeUsage, PodInfo, evolve
from apps.topology.topomath import Topology
from tests.support.scoring_fixtures import paper_appgroup, pod_labels, zoned_topology

N = 60
GHOSTS = ("ghost-a", "ghost-b")  # candidates neither the topology nor the cluster knows
UNMEASURED = "outside-1"  # in the cluster (resources) but not in the topology


def _topology(seed: int = 3) -> Topology:
    rng = np.random.default_rng(seed)
    zone = np.arange(N) // 10
    zl = rng.uniform(0.5, 12.0, (6, 6))
    zl = (zl + zl.T) / 2
    np.fill_diagonal(zl, 0.3)
    lat = zl[zone[:, None], zone[None, :]] * rng.uniform(0.9, 1.1, (N, N))
    bw = rng.uniform(50.0, 1000.0, (N, N))
    loss = rng.uniform(0.0, 3.0, (N, N))
    for arr in (lat, bw, loss):  # a few pairs missing one metric, a few missing all
        arr[rng.random((N, N)) < 0.04] = np.nan
    gone = rng.random((N, N)) < 0.02
    for arr in (lat, bw, loss):
        arr[gone] = np.nan
    np.fill_diagonal(lat, 0.0)
    return zoned_topology(lat, bw, loss, zone=zone, regions=2, zone_latency=zl, node_prefix="n")


def _placements(rng: random.Random, names: list[str], pods: int) -> dict[tuple[str, str, str], tuple[str, ...]]:
    group = paper_appgroup()
    out: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for w in group.workloads:
        if rng.random() < 0.7:
            out[(group.namespace, group.name, w.name)] = tuple(rng.choice(names) for _ in range(rng.randint(1, pods)))
    return out


@pytest.fixture(scope="module")
def base() -> ClusterState:
    topology = _topology()
    rng = random.Random(11)
    names = list(topology.nodes)
    nodes = {n: NodeResources(n, topology.zones[i], topology.regions[i], 4000, 16 << 30, rng.randint(0, 3900),
                              rng.randint(0, 15 << 30)) for i, n in enumerate(names) if i % 7}
    nodes[UNMEASURED] = NodeResources(UNMEASURED, "z9", "r9", 4000, 16 << 30)
    usage = {n: NodeUsage(cpu_15m=rng.random(), cpu_1h=rng.random(), cpu_1d=0.4, mem_15m=rng.random(),
                          mem_1h=rng.random(), mem_1d=0.5, cpu_stddev_1h=0.1, mem_stddev_1h=0.1,
                          net_used_bps_mean=rng.random() * 9e8, net_used_bps_stddev=1e8, net_capacity_bps=1e9,
                          stale=i % 11 == 0)
             for i, n in enumerate(names) if i % 5}
    # One plan book for the cold and the memoized calls (``replace`` keeps it): a placement plan is an
    # input of the plan filter, computed within a time budget, so a loaded machine could otherwise
    # give the two paths different plans. Its budget is the largest, so the plan is the MILP's.
    return ClusterState(topology=topology, appgroups=(paper_appgroup(),),
                        placements=_placements(rng, [*names, UNMEASURED], 6), nodes=nodes, usage=usage,
                        plan_book=plans.PlanBook(budget_s=10.0))


PROFILES = [*engine.BUILTIN_PROFILES.values(),
            engine.Profile("cold-only", (("cold-start", 1.0, {}), ("target-load-packing", 1.0, {})), ("overload",),
                           {"overload": {"cpu_threshold": 0.5}}),
            engine.Profile("strict", (("network-score", 1.0, {"same_node_score": 0.3}),
                                      ("network-overhead", 2.0, {})),
                           ("network-overhead", "bandwidth-risk", "overload"),
                           {"bandwidth-risk": {"threshold": 0.4}, "overload": {"cpu_threshold": 0.6}})]


def _random_pod(rng: random.Random) -> PodInfo:
    group = paper_appgroup()
    workload = rng.choice([*[w.name for w in group.workloads], "stranger"])
    labels = pod_labels(workload) if workload != "stranger" else {"app": "web"}
    return PodInfo("default", f"{workload}-{rng.randint(0, 3)}", uid=f"u{rng.randint(0, 3)}", labels=labels,
                   cpu_request_millicores=rng.choice([0, 100, 900]), memory_request_bytes=rng.choice([0, 64 << 20]),
                   bandwidth_request_bps=rng.choice([0.0, 2e8]))


def _random_candidates(rng: random.Random, state: ClusterState) -> list[str]:
    pool = [*state.topology.nodes, *GHOSTS, UNMEASURED]
    return rng.sample(pool, rng.randint(1, len(pool)))


def _pair(state: ClusterState, pod: PodInfo, candidates: list[str], profile: engine.Profile
          ) -> tuple[engine.FilterOutcome, engine.ScoreOutcome]:
    return _run(state, pod, candidates, profile, memo=True)


def _run(state: ClusterState, pod: PodInfo, candidates: list[str], profile: engine.Profile, *, memo: bool
         ) -> tuple[engine.FilterOutcome, engine.ScoreOutcome]:
    filtered = engine.run_filters(state, pod, list(candidates), profile, memo=memo)
    # Like kube-scheduler: prioritize gets a fresh list holding the survivors.
    return filtered, engine.run_scorers(state, pod, [str(n) for n in filtered.passed], profile, memo=memo)


def _cold(state: ClusterState, pod: PodInfo, candidates: list[str], profile: engine.Profile
          ) -> tuple[engine.FilterOutcome, engine.ScoreOutcome]:
    """The same calls without the memo, on a copy of the state that shares no indexes either."""
    return _run(replace(state), pod, candidates, profile, memo=False)


def _assert_same(got: tuple[engine.FilterOutcome, engine.ScoreOutcome],
                 want: tuple[engine.FilterOutcome, engine.ScoreOutcome]) -> None:
    gf, gs = got
    wf, ws = want
    assert (gf.passed, gf.failed, gf.unresolvable, gf.workload, gf.notes) == \
        (wf.passed, wf.failed, wf.unresolvable, wf.workload, wf.notes)
    assert (gs.nodes, gs.workload, gs.notes) == (ws.nodes, ws.workload, ws.notes)
    np.testing.assert_array_equal(gs.total, ws.total)
    np.testing.assert_array_equal(gs.extender, ws.extender)
    assert list(gs.breakdown) == list(ws.breakdown)
    for name in ws.breakdown:
        np.testing.assert_array_equal(gs.breakdown[name], ws.breakdown[name])


def test_memo_gives_identical_results_to_a_cold_call(base):
    rng = random.Random(7)
    some_filtered = 0
    for trial in range(120):
        state = base if trial % 3 else replace(base, placements=_placements(rng, list(base.topology.nodes), 5))
        pod, candidates, profile = _random_pod(rng), _random_candidates(rng, state), rng.choice(PROFILES)
        want = _cold(state, pod, candidates, profile)
        before = state.score_memo.hits
        _assert_same(_pair(state, pod, candidates, profile), want)  # first: filter fills, prioritize reuses
        assert state.score_memo.hits > before, "prioritize on the survivors did not reuse the filter's work"
        _assert_same(_pair(state, pod, candidates, profile), want)  # repeated: whole outcomes from the memo
        # Prioritize alone, on candidates filter never saw.
        other = _random_candidates(rng, state)
        ref_scores = engine.run_scorers(replace(state), pod, other, profile, memo=False)
        got = engine.run_scorers(state, pod, other, profile)
        _assert_same((want[0], got), (want[0], ref_scores))
        some_filtered += len(want[0].passed) < len(candidates)
    assert some_filtered > 10  # the survivor-subset path was exercised


def test_a_new_cluster_state_is_never_served_from_the_memo(base):
    group = paper_appgroup()
    pod = PodInfo("default", "cart-0", uid="c0", labels=pod_labels("cart"))
    candidates = list(base.topology.nodes[:30])
    profile = engine.BUILTIN_PROFILES["network-noplan"]  # every candidate scored: no plan narrowing
    key = (group.namespace, group.name, "redis-cart")
    near = replace(base, placements={key: ("n3",)})  # zone z0 (n0..n9)
    first = _pair(near, pod, candidates, profile)
    z0, z2 = slice(0, 10), slice(20, 30)
    assert first[1].total[z0].mean() > first[1].total[z2].mean()
    # Same pod, same candidates, the dependency moved to another zone: a new state object.
    far = replace(base, placements={key: ("n25",)})  # zone z2 (n20..n29)
    moved = _pair(far, pod, candidates, profile)
    _assert_same(moved, _cold(far, pod, candidates, profile))
    assert moved[1].total[z2].mean() > moved[1].total[z0].mean()
    # New usage only (placements equal): the load-aware filter and scorer see it.
    hot = {n: NodeUsage(cpu_15m=0.99, cpu_1h=0.99, cpu_1d=0.99) for n in base.topology.nodes}
    balanced = engine.BUILTIN_PROFILES["balanced"]
    calm_out = _pair(far, pod, candidates, balanced)
    hot_state = replace(far, usage=hot)
    hot_out = _pair(hot_state, pod, candidates, balanced)
    _assert_same(hot_out, _cold(hot_state, pod, candidates, balanced))
    assert hot_out[0].failed and hot_out[0].passed != calm_out[0].passed


def test_states_stepped_by_evolve_answer_like_fresh_ones(base):
    """The extender's cache and the harness step states with ``evolve`` (binds patch the usage
    arrays, everything else is shared): every step answers exactly like a state built from scratch."""
    rng = random.Random(5)
    profile = engine.BUILTIN_PROFILES["balanced"]
    names = [n for n in base.topology.nodes if n in base.nodes]
    state = base
    for step in range(40):
        node = rng.choice(names)
        res = state.nodes[node]
        nodes = {**state.nodes, node: replace(res, requested_cpu_millicores=res.requested_cpu_millicores + 300,
                                              requested_memory_bytes=res.requested_memory_bytes + (1 << 28))}
        placements = _placements(rng, names, 4) if step % 4 == 0 else state.placements
        state = evolve(state, changed_nodes=(node,), nodes=nodes, placements=placements)
        assert state.indexes.vectors is base.indexes.vectors  # the topology part is shared
        pod = _random_pod(rng)
        candidates = _random_candidates(rng, state)
        _assert_same(_pair(state, pod, candidates, profile), _cold(state, pod, candidates, profile))
    moved = {**state.nodes, names[0]: replace(state.nodes[names[0]], zone="z5")}
    relabelled = evolve(state, changed_nodes=(names[0],), nodes=moved)
    assert relabelled.indexes.places is not state.indexes.places  # a zone change rebuilds places
    pod = PodInfo("default", "checkout-0", labels=pod_labels("checkout"))
    _assert_same(_pair(relabelled, pod, names, profile), _cold(relabelled, pod, names, profile))


def test_plan_counts_kept_across_binds_match_a_fresh_count(base):
    """The plan filter keeps each workload's zone and node counts on the state's places (which
    survive binds) with the placements tuple counted: after binds of one workload at a time, pods
    removed, and a node moved to another zone, the plan filter and scorer answer like a fresh state,
    and the counts equal a fresh count."""
    rng = random.Random(8)
    profile = engine.BUILTIN_PROFILES["network"]
    group = paper_appgroup()
    names = [n for n in base.topology.nodes if n in base.nodes]
    state = replace(base, plan_book=plans.PlanBook(budget_s=10.0))  # its own: the other tests keep base's plans
    for step in range(30):
        key = (group.namespace, group.name, rng.choice(group.workloads).name)
        pods = state.placements.get(key, ())
        node = rng.choice(names)
        # mostly a bind (one more pod of one workload), sometimes a pod deleted
        placed = pods[1:] if step % 5 == 4 and pods else (*pods, node)
        res = state.nodes[node]
        nodes = {**state.nodes, node: replace(res, pod_count=res.pod_count + 1)}
        state = evolve(state, changed_nodes=(node,), nodes=nodes, placements={**state.placements, key: placed})
        if step == 20:  # a node moves zone: places are rebuilt, so no count survives it
            moved = names[step]
            state = evolve(state, changed_nodes=(moved,),
                           nodes={**state.nodes, moved: replace(state.nodes[moved], zone="z5")})
        pod = PodInfo("default", f"{key[2]}-{step}", labels=pod_labels(key[2]))
        fresh = replace(state)
        assert plans.placed_by_zone(state, group) == plans.placed_by_zone(fresh, group)
        for w in group.workloads:
            assert plan_plugin.placed_counts(state, group, w.name) == plan_plugin.placed_counts(fresh, group, w.name)
        candidates = _random_candidates(rng, state)
        _assert_same(_pair(state, pod, candidates, profile), _cold(state, pod, candidates, profile))


def test_a_changed_pod_is_never_served_from_the_memo(base):
    candidates = list(base.topology.nodes)
    profile = engine.BUILTIN_PROFILES["hybrid"]
    pod = PodInfo("default", "p-0", uid="same", labels=pod_labels("cart"), cpu_request_millicores=100)
    variants = [pod, replace(pod, labels=pod_labels("frontend")), replace(pod, cpu_request_millicores=3900),
                replace(pod, annotations={engine.PROFILE_ANNOTATION: "balanced"}),
                replace(pod, labels={**pod_labels("cart"), "netaware.io/appgroup": "missing"})]
    for variant in variants:
        _pair(base, variant, candidates, profile)
    for variant in variants:
        _assert_same(_pair(base, variant, candidates, profile), _cold(base, variant, candidates, profile))
    workloads = {_pair(base, v, candidates, profile)[1].workload for v in variants}
    assert len(workloads) == 3  # cart, frontend, none (the missing pinned AppGroup)


def test_callers_mutating_results_cannot_corrupt_the_memo(base):
    pod = PodInfo("default", "frontend-0", labels=pod_labels("frontend"))
    candidates = list(base.topology.nodes)
    profile = engine.BUILTIN_PROFILES["balanced"]
    want = _cold(base, pod, candidates, profile)
    _pair(base, pod, candidates, profile)
    got = _pair(base, pod, candidates, profile)  # served from the memo
    got[0].failed.clear()
    got[0].failed["n1"] = "mutated"
    got[1].total[:] = -1.0
    got[1].extender[:] = 99
    for arr in got[1].breakdown.values():
        arr[:] = -5.0
    got[1].breakdown.clear()
    _assert_same(_pair(base, pod, candidates, profile), want)


def test_concurrent_threads_get_cold_answers(base):
    rng = random.Random(9)
    cases = [(_random_pod(rng), _random_candidates(rng, base), rng.choice(PROFILES)) for _ in range(20)]
    wanted = [_cold(base, *case) for case in cases]
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        order = list(range(len(cases))) * 3
        random.Random(seed).shuffle(order)
        try:
            for i in order:
                _assert_same(_pair(base, *cases[i]), wanted[i])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_memo_is_bounded(base):
    rng = random.Random(1)
    profile = engine.BUILTIN_PROFILES["network"]
    state = replace(base)
    limit = state.score_memo.max_entries
    for i in range(limit + 50):
        pod = PodInfo("default", f"cart-{i}", uid=str(i), labels=pod_labels("cart"))
        engine.run_filters(state, pod, _random_candidates(rng, state), profile)
    assert 0 < len(state.score_memo) <= limit


def test_placement_positions_are_shared_only_between_identical_placements(base):
    """A topology's placement memo (network terms of every replica of a rollout reuse it) answers
    like a fresh computation for every placement tuple, an extra pod or a node the topology does
    not know changes the answer, what it hands out is read-only, and it stays bounded."""
    from apps.scheduler.scoring import indexes, network_score
    from apps.scheduler.scoring.common import resolve_workload

    vectors = base.indexes.vectors
    index = base.topology.index
    rng = random.Random(9)
    pool = [*base.topology.nodes[:12], UNMEASURED, *GHOSTS]
    for _ in range(300):
        nodes = tuple(rng.choice(pool) for _ in range(rng.randint(0, 8)))
        got = vectors.placed(nodes)
        known = [index[n] for n in nodes if n in index]
        want_pos, want_counts = (np.unique(known, return_counts=True) if known
                                 else (np.zeros(0, dtype=np.int64), np.zeros(0)))
        np.testing.assert_array_equal(got.positions, want_pos)
        np.testing.assert_array_equal(got.counts, want_counts.astype(np.float64))
        assert got.missing == tuple(sorted({n for n in nodes if n not in index}))
        assert vectors.placed(tuple(list(nodes))) is got  # equal content, another tuple: same entry
        grown = vectors.placed((*nodes, pool[0]))
        assert grown.counts.sum() == got.counts.sum() + 1
        if got.positions.size:
            with pytest.raises(ValueError):
                got.counts[0] = 99.0
    assert len(vectors._placed) <= indexes._PLACED_ENTRIES
    for i in range(indexes._PLACED_ENTRIES + 20):
        vectors.placed(("n1",) * (i + 1))
    assert len(vectors._placed) == indexes._PLACED_ENTRIES

    # Network terms of a state stepped by one bind equal those of a state sharing nothing.
    ref, _ = resolve_workload(base, PodInfo("default", "checkout-0", labels=pod_labels("checkout")))
    assert ref is not None
    for _ in range(20):
        key = rng.choice(list(base.placements))
        stepped = evolve(base, placements={**base.placements, key: (*base.placements[key], rng.choice(pool))})
        got_terms, got_notes = network_score.network_terms(stepped, ref)
        want_terms, want_notes = network_score.network_terms(replace(stepped), ref)
        assert got_notes == want_notes
        assert [(t.name, t.reverse, t.weight) for t in got_terms] == [(t.name, t.reverse, t.weight) for t in want_terms]
        for g, w in zip(got_terms, want_terms, strict=True):
            np.testing.assert_array_equal(g.targets, w.targets)
            np.testing.assert_array_equal(g.counts, w.counts)
