"""The scheduling cache keeps each workload's placements up to date by deltas (binds assumed, bound
or forgotten, pods added, moved, finished and deleted, relists, AppGroups replaced): after any
sequence of them they equal the placements recounted from scratch from its pods, assumptions and
AppGroups, in pod-key order (so its per-record workload memo never serves a stale resolution)."""

from __future__ import annotations

import contextlib
import random

from apps.scheduler.cache import BindRefused, NodeRecord, PodRecord, SchedulingCache
from apps.scheduler.scoring.common import resolve_in
from apps.scheduler.scoring.indexes import ZoneRoom
from apps.scheduler.scoring.state import NodeResources
from tests.support.scoring_fixtures import paper_appgroup, pod_labels

OURS = "netaware-scheduler"
NODES = [f"n{i}" for i in range(6)]


def _recount(cache: SchedulingCache) -> dict:
    """What the placements must be: every live pod on its assumed or bound node, by workload."""
    out: dict = {}
    for key in sorted(cache._pods):
        pod = cache._pods[key]
        assumed = cache._assumed.get(key)
        node = assumed.node if assumed is not None else pod.node
        if pod.terminal or not node:
            continue
        ref, _ = resolve_in(cache._appgroups, namespace=pod.namespace, labels=pod.labels)
        if ref is not None:
            out.setdefault(ref.key, []).append(node)
    return {k: tuple(v) for k, v in out.items()}


def test_placements_follow_every_change():
    rng = random.Random(3)
    group = paper_appgroup()
    cache = SchedulingCache(scheduler_names=(OURS,))
    cache.set_appgroups((group,))
    cache.replace_nodes(NodeRecord(NodeResources(n, "z", "r", 4000, 16 << 30)) for n in NODES)
    names = [f"p{i:02d}" for i in range(40)]
    workloads = [w.name for w in group.workloads]
    labels = {name: pod_labels(rng.choice(workloads)) for name in names}

    def record(name: str, **fields) -> PodRecord:
        return PodRecord("default", name, uid=f"uid-{name}", labels=labels[name], cpu_request_millicores=100,
                         scheduler_name=OURS, **fields)

    checked = 0
    for step in range(1500):
        name = rng.choice(names)
        action = rng.random()
        if action < 0.3:
            cache.upsert_pod(record(name, node=rng.choice(["", "", *NODES])))
        elif action < 0.55 and cache.pod("default", name) is not None:
            with contextlib.suppress(BindRefused):  # refused (placed elsewhere): nothing may change
                cache.assume(namespace="default", name=name, uid=f"uid-{name}", node=rng.choice(NODES))
            if rng.random() < 0.3:
                cache.forget(namespace="default", name=name, uid=f"uid-{name}")
            elif rng.random() < 0.5:
                cache.bound(namespace="default", name=name)
        elif action < 0.65:
            cache.upsert_pod(record(name, node=rng.choice(NODES), terminal=True))
        elif action < 0.8:
            cache.remove_pod("default", name)
        elif action < 0.83:
            keep = rng.sample(names, 20)
            cache.replace_pods(record(n, node=rng.choice(["", *NODES])) for n in keep)
        elif action < 0.84:  # the AppGroup deleted, then back: every pod is resolved again
            cache.set_appgroups(() if cache._appgroups else (group,))
        with cache._lock:
            got = dict(cache._placements)
        assert got == _recount(cache), step
        assert cache.view().state.placements == got
        checked += bool(got)
    assert checked > 900  # most steps had placements to compare


def _room_recount(nodes, max_pods: int) -> dict:
    out: dict = {}
    for node in nodes.values():
        cpu, mem, pods = out.get(node.zone, (0, 0, 0))
        out[node.zone] = (cpu + max(node.allocatable_cpu_millicores - node.requested_cpu_millicores, 0),
                          mem + max(node.allocatable_memory_bytes - node.requested_memory_bytes, 0),
                          pods + max(max_pods - node.pod_count, 0))
    return out


def test_zone_room_patched_by_binds_equals_a_recount():
    """The placement plans' free room per zone is summed once and then patched by each view's binds
    (indexes.ZoneRoom); after any sequence of binds, deletions and node changes it equals a sum
    over the view's nodes (an overfull node counts 0, never negative)."""
    rng = random.Random(5)
    group = paper_appgroup()
    cache = SchedulingCache(scheduler_names=(OURS,))
    cache.set_appgroups((group,))
    zones = {n: f"z{i % 3}" for i, n in enumerate(NODES)}
    cache.replace_nodes(NodeRecord(NodeResources(n, zones[n], "r", 1000, 4 << 30)) for n in NODES)
    names = [f"p{i:02d}" for i in range(30)]
    labels = {name: pod_labels(rng.choice([w.name for w in group.workloads])) for name in names}
    patched = 0
    for step in range(600):
        name = rng.choice(names)
        action = rng.random()
        if action < 0.5:
            cache.upsert_pod(PodRecord("default", name, uid=f"uid-{name}", labels=labels[name], scheduler_name=OURS,
                                       cpu_request_millicores=rng.choice([100, 400, 900]),
                                       memory_request_bytes=rng.choice([1 << 28, 3 << 30])))
            with contextlib.suppress(BindRefused):
                cache.assume(namespace="default", name=name, uid=f"uid-{name}", node=rng.choice(NODES))
        elif action < 0.8:
            cache.remove_pod("default", name)
        elif action < 0.85:  # a node changes capacity or zone: the room is summed again
            node = rng.choice(NODES)
            zones[node] = rng.choice(["z0", "z1", "z2"])
            cache.upsert_node(NodeRecord(NodeResources(node, zones[node], "r", rng.choice([1000, 2000]), 4 << 30)))
        state = cache.view().state
        room = state.indexes.zone_room
        patched += room._value is not None  # carried over from the previous view by its binds, not summed
        assert dict(room.get(state.nodes, 110)) == _room_recount(state.nodes, 110), step
    assert patched > 300  # most steps checked a patched room
    assert dict(ZoneRoom().get(state.nodes, 2)) == _room_recount(state.nodes, 2)
