"""The scheduling cache keeps each workload's placements up to date by deltas (binds assumed, bound
or forgotten, pods added, moved, finished and deleted, relists, AppGroups replaced): after any
sequence of them they equal the placements recounted from scratch from its pods, assumptions and
AppGroups, in pod-key order (so its per-record workload memo never serves a stale resolution)."""

from __future__ import annotations

import contextlib
import random

from apps.scheduler.cache import BindRefused, NodeRecord, PodRecord, SchedulingCache
from apps.scheduler.scoring.common import resolve_in
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
