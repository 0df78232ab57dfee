"""Replay a scenario with its true AppGroups and with the AppGroups learned from the traffic they emit
(issue 18 item 7; docs/evaluation.md, "Learned vs true AppGroups").

The traffic: every dependency of the true AppGroups is a call edge between the workloads' controllers
(the names meshes use) carrying ``max(1.5, 4 x caller weight)`` requests/s with lognormal noise
(sigma 0.2) per window, 400-byte requests and 1.5 kB answers, or 200 kB answers where the true
dependency is more bandwidth- than latency-sensitive (the demo's mesh emulator's rule, apps/demo/mesh.py).
The cluster: one Deployment per workload (replicas, pod labels from its selector,
``app.kubernetes.io/part-of`` = its AppGroup). The learning: ``apps.traffic.learning`` exactly as the
pipeline runs it (moving averages over ``windows`` windows, owner chain, components split by part-of,
sensitivities from sizes, edge weights from rates). Learned workloads get the pods' resource requests (a
real cluster has them on the pods); everything else comes from the traffic. ``edge_weights=False`` drops
the learned per-dependency weights (every edge 1), to see what they change.

Both runs schedule the same pods in the same arrival order with the same profile; the learned run's
placements are then scored against the **true** AppGroups, so the ratio says how much of the network
score a learned graph keeps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from apps.appgroups.graph import AppGroupSpec, WorkloadSpec
from apps.probes.scenario import Scenario
from apps.traffic import learning
from apps.traffic.edges import Edge, Rates

from .metrics import LatencyModel, network_metrics, request_latency_ms
from .report import initial_state
from .simulate import PIN_LABEL, SimPod, appgroup_pods, labels_for, parse_profile, simulate

Key = tuple[str, str, str]  # namespace, AppGroup, workload


def controller_of(group: AppGroupSpec, workload: WorkloadSpec) -> str:
    return workload.controller_name or workload.name


def emitted_windows(groups: Sequence[AppGroupSpec], *, windows: int, seed: int = 0,
                    width: float = 60.0) -> list[tuple[float, dict[Edge, tuple[str, Rates]]]]:
    """Per window (end time, edges as the pipeline merges them) of the true graphs' traffic."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(1, windows + 1):
        window: dict[Edge, tuple[str, Rates]] = {}
        for group in groups:
            for w in group.workloads:
                for dep in w.dependencies:
                    target = group.workload(dep.target)
                    rps = max(1.5, 4.0 * w.weight) * float(rng.lognormal(0.0, 0.2))
                    answer = 200_000.0 if dep.sensitivity.bandwidth > dep.sensitivity.latency else 1_500.0
                    edge = Edge(group.namespace, controller_of(group, w), group.namespace, controller_of(group, target))
                    window[edge] = ("istio", Rates(requests=rps, errors=0.0, request_bytes=400.0 * rps,
                                                   response_bytes=answer * rps, p50=0.004, p99=0.02))
        out.append((k * width, window))
    return out


def cluster_objects(groups: Sequence[AppGroupSpec]) -> list[learning.ClusterObject]:
    """The Deployments and pods a cluster running the AppGroups holds (part-of = the AppGroup)."""
    out = []
    for group in groups:
        for w in group.workloads:
            name = controller_of(group, w)
            labels = {**labels_for(w.selector), learning.PART_OF_LABEL: group.name}
            out.append(learning.ClusterObject("Deployment", group.namespace, name, labels,
                                              match_labels=dict(w.selector.match_labels), template_labels=labels,
                                              replicas=max(1, w.replicas)))
            for i in range(max(1, w.replicas)):
                out.append(learning.ClusterObject("Pod", group.namespace, f"{name}-{i}", labels, ("Deployment", name)))
    return out


@dataclass(frozen=True)
class Learned:
    groups: tuple[AppGroupSpec, ...]
    workload_of: Mapping[Key, Key]  # true workload -> learned workload
    missing_edges: tuple[tuple[str, str], ...]  # true controller edges not learned
    phantom_edges: tuple[tuple[str, str], ...]  # learned edges not in the true graph


def learn(groups: Sequence[AppGroupSpec], *, windows: int = 3, seed: int = 0,
          params: learning.LearningParams | None = None, edge_weights: bool = True) -> Learned:
    """The AppGroups the learning rule derives from the true graphs' emitted traffic."""
    params = params or learning.LearningParams()
    states: dict[Edge, learning.EdgeState] = {}
    for at, window in emitted_windows(groups, windows=windows, seed=seed):
        states = learning.update_states(states, window, at=at, params=params)
    apps = learning.applications(states.values(), learning.workload_identities(cluster_objects(groups)))
    true_of = {(g.namespace, controller_of(g, w)): (g, w) for g in groups for w in g.workloads}
    learned_groups: list[AppGroupSpec] = []
    workload_of: dict[Key, Key] = {}
    for app in apps:
        workloads = []
        for lw in app.spec.workloads:
            group, w = true_of[(app.namespace, lw.name)]
            deps = lw.dependencies if edge_weights else tuple(replace(d, weight=1.0) for d in lw.dependencies)
            workloads.append(replace(lw, cpu_request_millicores=w.cpu_request_millicores, dependencies=deps,
                                     memory_request_bytes=w.memory_request_bytes, replicas=max(1, w.replicas)))
            workload_of[(group.namespace, group.name, w.name)] = (app.namespace, app.name, lw.name)
        learned_groups.append(replace(app.spec, workloads=tuple(workloads)))
    for group in groups:  # a workload without any traffic: an AppGroup of its own (nothing to keep close)
        for w in group.workloads:
            key = (group.namespace, group.name, w.name)
            if key not in workload_of:
                name = f"unlearned-{controller_of(group, w)}"
                learned_groups.append(AppGroupSpec(group.namespace, name, (replace(w, dependencies=()),)))
                workload_of[key] = (group.namespace, name, w.name)
    true_edges = {(controller_of(g, w), controller_of(g, g.workload(d.target)))
                  for g in groups for w in g.workloads for d in w.dependencies}
    learned_edges = {(w.name, d.target) for g in learned_groups for w in g.workloads for d in w.dependencies}
    return Learned(tuple(learned_groups), workload_of, tuple(sorted(true_edges - learned_edges)),
                   tuple(sorted(learned_edges - true_edges)))


@dataclass(frozen=True)
class LearnedRun:
    seed: int
    true_score: float
    learned_score: float  # the learned run's placements scored against the true AppGroups
    true_latency_ms: float
    learned_latency_ms: float


@dataclass(frozen=True)
class LearnedComparison:
    profile: str
    runs: tuple[LearnedRun, ...]
    learned: Learned

    @property
    def true_mean(self) -> float:
        return float(np.mean([r.true_score for r in self.runs]))

    @property
    def learned_mean(self) -> float:
        return float(np.mean([r.learned_score for r in self.runs]))

    @property
    def ratio(self) -> float:
        """Mean learned score as a fraction of the mean true score."""
        return self.learned_mean / self.true_mean if self.true_mean > 0 else math.nan

    @property
    def worst_ratio(self) -> float:
        return min((r.learned_score / r.true_score for r in self.runs if r.true_score > 0), default=math.nan)


def _learned_pods(true_pods: Sequence[SimPod], learned: Learned) -> list[SimPod]:
    """The same pods, in the same order, belonging to their learned AppGroups (paired comparison)."""
    by_key = {(g.namespace, g.name): g for g in learned.groups}
    out = []
    for sim in true_pods:
        ns, gname, wname = learned.workload_of[sim.key]
        group = by_key[(ns, gname)]
        workload = group.workload(wname)
        pod = replace(sim.pod, labels={**sim.pod.labels, PIN_LABEL: f"{ns}/{gname}"},
                      uid=f"{gname}-{sim.pod.uid}")
        out.append(SimPod(group, workload, pod))
    return out


def compare(scenario: Scenario, groups: Sequence[AppGroupSpec], *, profile: str = "network",
            seeds: Iterable[int] = range(50), windows: int = 3, edge_weights: bool = True) -> LearnedComparison:
    """Schedule with the true and with the learned AppGroups; score both against the true ones."""
    learned = learn(groups, windows=windows, edge_weights=edge_weights)
    eval_profile = parse_profile(profile)
    true_initial = initial_state(scenario, groups)
    learned_initial = initial_state(scenario, learned.groups)
    true_pods = appgroup_pods(groups)
    learned_pods = _learned_pods(true_pods, learned)
    back = {v: k for k, v in learned.workload_of.items()}
    call_ms = LatencyModel().call_ms_matrix(true_initial.topology)
    runs = []
    for seed in seeds:
        true_run = simulate(true_initial, true_pods, eval_profile, seed)
        learned_run = simulate(learned_initial, learned_pods, eval_profile, seed)
        placed = replace(true_initial, placements={back[k]: v for k, v in learned_run.final_state.placements.items()})
        runs.append(LearnedRun(
            seed, network_metrics(true_run.final_state, groups).average, network_metrics(placed, groups).average,
            request_latency_ms(true_run.final_state, groups, call_ms), request_latency_ms(placed, groups, call_ms)))
    return LearnedComparison(profile, tuple(runs), learned)
