"""Every pod of a rollout is scored against every bind answered before it — through the production
extender server (``manage.py run_extender``), its informers on the demo cluster API and
kube-scheduler's cycle (``apps.demo.rollout``).

1. Binds answered one at a time, with the API's watch lagging a second behind (so only the placement
   the bind assumed can be seen): the prioritize answer of each of 44 Online Boutique pods equals, for
   every candidate, what the scoring engine computes from scratch for a cluster holding exactly the
   pods bound before it.
2. Binds asynchronous and parallel, as kube-scheduler sends them: every prioritize decision counts
   at least the binds answered before its filter was sent, and never more than were sent.

One process serves a replica (its scheduling cache is where binds are assumed); several replicas
are made safe by leader election (test_extender_replicas_*).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from apps.appgroups import documents
from apps.appgroups.services import save_appgroup
from apps.demo.rollout import CallStats, ExtenderConfig, KubeScheduler, RolloutResult
from apps.probes.scenario import load_scenario
from apps.scheduler import selectors, services
from apps.scheduler.models import Decision
from apps.scheduler.scoring import engine
from apps.scheduler.scoring.state import ClusterState, NodeResources
from apps.scheduler.wire import parse_pod
from apps.topology.scenario_topology import topology_from_scenario
from tests.support.extender_server import extender_server
from tests.support.extender_wire import PAPER_TESTBED, store_topology

pytestmark = pytest.mark.slow

OURS = "netaware-scheduler"
BOUTIQUE = Path(settings.BASE_DIR) / "scenarios" / "online-boutique-appgroup.yaml"
PODS = 44
CPU, MEMORY = 4000, 8 * 2**30


@pytest.fixture
def cluster(transactional_db, fake_kube):
    scenario = load_scenario(PAPER_TESTBED)
    topology = topology_from_scenario(scenario)
    store_topology(topology)
    spec = documents.spec_from_document(yaml.safe_load(BOUTIQUE.read_text()))
    save_appgroup(spec=spec, origin="netaware")
    for name, zone, region in zip(topology.nodes, topology.zones, topology.regions, strict=True):
        fake_kube.add_node(name, zone=zone, region=region, allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"})
    for i in range(PODS):
        workload = spec.workloads[i % len(spec.workloads)]
        app = workload.selector.match_labels["app"]
        fake_kube.add_pod(spec.namespace, f"{app}-{i:02d}", labels={"app": app}, scheduler_name=OURS,
                          requests={"cpu": "100m", "memory": "64Mi"})
    return topology, spec


def test_each_pod_is_scored_against_every_earlier_bind(cluster, fake_kube):
    topology, spec = cluster
    profiles, default = selectors.compiled_profiles()
    profile = profiles[default]
    with extender_server(kube_url=fake_kube.url) as ext:
        fake_kube.watch_delay = 1.0  # the extender's informers now lag: binds are seen only as assumed
        sched = KubeScheduler(api_url=fake_kube.url, extender=ExtenderConfig(url=ext.url), scheduler_name=OURS,
                              seed=3)
        sched.trace = []
        pending = sched.load()
        assert len(pending) == PODS
        result = RolloutResult(PODS, {}, {}, 0.0, CallStats(), CallStats(), CallStats(), [], [])
        placed: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        requested: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        checked = 0
        for obj in pending:
            pod = parse_pod(obj)
            node = sched.schedule_one(obj, pod, result)
            assert node is not None, result.unschedulable
            answered = [d for _, event, who, d in sched.trace if event == "scores" and who.endswith(pod.name)][-1]
            nodes = {n: NodeResources(n, topology.zones[i], topology.regions[i], CPU, MEMORY, *requested[n])
                     for i, n in enumerate(topology.nodes)}
            state = ClusterState(topology=topology, appgroups=(spec,), nodes=nodes,
                                 placements={k: tuple(v) for k, v in placed.items()})
            expected = engine.run_scorers(state, pod, list(answered), profile, memo=False)
            assert answered == dict(zip(expected.nodes, expected.extender.tolist(), strict=True)), pod.name
            checked += 1
            assert sched.bind(pod, node, result) == ""  # answered before the next pod's filter
            workload = next(w for w in spec.workloads if w.selector.matches(pod.labels))
            placed[(spec.namespace, spec.name, workload.name)].append(node)
            for i, amount in enumerate((pod.cpu_request_millicores, pod.memory_request_bytes, 1)):
                requested[node][i] += amount
        assert checked == PODS
    bound = [p for p in fake_kube.list("", "v1", "pods") if (p.get("spec") or {}).get("nodeName")]
    assert len(bound) == PODS


def test_parallel_asynchronous_binds_are_seen_by_every_later_filter(cluster, fake_kube):
    with extender_server(kube_url=fake_kube.url) as ext:
        sched = KubeScheduler(api_url=fake_kube.url, extender=ExtenderConfig(url=ext.url), scheduler_name=OURS,
                              seed=5, bind_parallelism=8)
        sched.trace = []
        result = sched.run(sched.load())
        assert len(result.scheduled) == PODS and not result.bind_errors, result.bind_errors
        deadline = time.monotonic() + 20  # the extender's decision-log thread ships to Redis
        while time.monotonic() < deadline:
            services.drain_decisions()
            if Decision.objects.filter(verb="prioritize").count() >= PODS:
                break
            time.sleep(0.2)
    seen = {f"{d.pod_namespace}/{d.pod_name}": d.result["placed"]
            for d in Decision.objects.filter(verb="prioritize", error="")}
    assert len(seen) == PODS
    filters = {who: t for t, event, who, _ in sched.trace if event == "filter"}
    bound_at = {who: t for t, event, who, _ in sched.trace if event == "bound"}
    order = sorted(filters, key=filters.get)
    overlapped = 0
    for index, pod in enumerate(order):
        answered_before = sum(1 for t in bound_at.values() if t < filters[pod])
        assert answered_before <= seen[pod] <= index, (pod, answered_before, seen[pod], index)
        overlapped += answered_before < index  # binds still in flight when this pod was filtered
    assert overlapped > 0, "no bind overlapped a later cycle: the binds were not asynchronous"
    bound = [p for p in fake_kube.list("", "v1", "pods") if (p.get("spec") or {}).get("nodeName")]
    assert len(bound) == PODS
