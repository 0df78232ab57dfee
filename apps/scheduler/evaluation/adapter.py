"""The one seam between the evaluation harness and the scoring engine.

Everything the harness needs from apps.scheduler.scoring (the extender's own code) goes through
here, so the simulation scores nodes exactly as the extender does: network Score (Algorithm 2),
cold start, load-aware scorers, profiles, the 0..100 -> 0..10 extender mapping. Nothing in this
package re-implements a network scorer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from apps.appgroups import documents
from apps.appgroups.graph import AppGroupSpec, Sensitivity
from apps.probes.scenario import Scenario
from apps.scheduler.scoring import engine, network_score, plans
from apps.scheduler.scoring.common import WorkloadRef
from apps.scheduler.scoring.state import ClusterState, NodeResources, NodeUsage, PodInfo
from apps.topology.scenario_topology import measured_topology_from_scenario, topology_from_scenario
from apps.topology.topomath import Topology
from netaware_core.yamlsafe import load_yaml


class EvaluationInputError(ValueError):
    """Bad evaluation input (file, AppGroup, profile); the message names what is wrong."""


# --------------------------------------------------------------------------- topology & nodes


def topology_for_scenario(scenario: Scenario) -> Topology:
    """The scenario's nominal link values as a Topology (extrema over all off-diagonal pairs)."""
    return topology_from_scenario(scenario)


def measured_topology_for_scenario(scenario: Scenario) -> Topology:
    """What netaware's topology says of the scenario once its stale pairs have aged: the scenario's
    ``unmeasured`` and ``stale`` pairs inferred from their zone / region (the schedulers' view)."""
    return measured_topology_from_scenario(scenario)


def cluster_nodes(scenario: Scenario) -> dict[str, NodeResources]:
    """The scenario's nodes with their capacity; requested = the pods already running there."""
    return {
        node.name: NodeResources(
            name=node.name, zone=node.zone, region=node.region,
            allocatable_cpu_millicores=node.cpu_millicores, allocatable_memory_bytes=node.memory_bytes,
            requested_cpu_millicores=node.existing_cpu_millicores,
            requested_memory_bytes=node.existing_memory_bytes, pod_count=node.existing_pods,
            labels=dict(node.labels),
        )
        for node in scenario.nodes
    }


def nominal_usage(scenario: Scenario) -> dict[str, NodeUsage]:
    """Measured utilisation as the emulator reports it (the scenario's nominal values, all windows)."""
    return {
        node.name: NodeUsage(
            cpu_15m=node.cpu_utilization, cpu_1h=node.cpu_utilization, cpu_1d=node.cpu_utilization,
            mem_15m=node.memory_utilization, mem_1h=node.memory_utilization, mem_1d=node.memory_utilization,
            cpu_stddev_1h=0.0, mem_stddev_1h=0.0,
        )
        for node in scenario.nodes
    }


# --------------------------------------------------------------------------- AppGroup input


def load_appgroups(path: str | Path) -> tuple[AppGroupSpec, ...]:
    """Every AppGroup document of a YAML file, parsed by the AppGroup app's own CR parser."""
    file = Path(path)
    if not file.is_file():
        raise EvaluationInputError(f"appgroup file {str(path)!r} does not exist (or is not a file)")
    try:
        docs = [d for d in load_yaml(file.read_text(), multi=True) if d is not None]
    except yaml.YAMLError as exc:
        raise EvaluationInputError(f"appgroup file {str(path)!r} is not valid YAML: {exc}") from exc
    specs: list[AppGroupSpec] = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, Mapping) or doc.get("kind") != "AppGroup":
            continue
        try:
            specs.append(documents.spec_from_document(doc))
        except documents.DocumentError as exc:
            raise EvaluationInputError(f"appgroup file {str(path)!r}, document {i}: {exc}") from exc
    if not specs:
        raise EvaluationInputError(f"appgroup file {str(path)!r} holds no AppGroup document")
    return tuple(specs)


# --------------------------------------------------------------------------- network Score


def workload_ref(group: AppGroupSpec, workload: str) -> WorkloadRef:
    return WorkloadRef(group, group.workload(workload))


def network_scores_at(state: ClusterState, group: AppGroupSpec, workload: str,
                      nodes: Sequence[str]) -> np.ndarray | None:
    """Algorithm 2 (0..100) of the workload on each of ``nodes`` given ``state``'s placements;
    None when none of its dependencies or dependents is placed."""
    positions = np.fromiter((state.topology.index.get(n, -1) for n in nodes), dtype=np.int64, count=len(nodes))
    scores, _notes = network_score.network_scores(state, workload_ref(group, workload), positions)
    return scores


def pair_score_matrix(topology: Topology, sensitivity: Sensitivity) -> np.ndarray:
    """ComputeScore (Algorithm 1, 0..1) for every ordered node pair: ``out[i, j]`` = source i ->
    target j, same-node score on the diagonal, through the scorer's own vectorized code."""
    everything = np.arange(topology.size, dtype=np.int64)
    return network_score.pair_scores(network_score.TopologyVectors(topology), everything, everything, sensitivity)


# --------------------------------------------------------------------------- extender profiles


@dataclass(frozen=True)
class ExtenderAnswer:
    passed: tuple[str, ...]
    failed: Mapping[str, str]
    scores: Mapping[str, int]  # 0..MaxExtenderPriority, what prioritize answers


def engine_profile_names(available: Mapping[str, engine.Profile] | None = None) -> tuple[str, ...]:
    return tuple(available or engine.BUILTIN_PROFILES)


def engine_profile(name: str, available: Mapping[str, engine.Profile] | None = None) -> engine.Profile:
    """The extender profile of that name (what the extender runs for a pod selecting it): one of
    ``available`` (built-ins and a profile file's, see ``load_profiles``), else of the built-ins."""
    profiles = available or engine.BUILTIN_PROFILES
    if name not in profiles:
        known = ", ".join(sorted(profiles))
        raise EvaluationInputError(f"unknown extender profile {name!r} (the engine has: {known})")
    return profiles[name]


def load_profiles(path: str | Path) -> dict[str, engine.Profile]:
    """The built-in extender profiles and those of a profile file: YAML or JSON holding one profile
    document, a list of them, or ``{"profiles": [...]}`` (any ``apiVersion`` the engine reads; a file
    profile may replace a built-in of the same name). Errors name the file and the field
    (``profiles[0].plugins.score[1].args.cpu_weight``)."""
    file = Path(path)
    if not file.is_file():
        raise EvaluationInputError(f"profile file {str(path)!r} does not exist (or is not a file)")
    try:
        data = load_yaml(file.read_text())
    except yaml.YAMLError as exc:
        raise EvaluationInputError(f"profile file {str(path)!r} is not valid YAML: {exc}") from exc
    if isinstance(data, Mapping) and "profiles" in data:
        data = data["profiles"]
    documents_ = [data] if isinstance(data, Mapping) else data
    if not isinstance(documents_, list) or not documents_:
        raise EvaluationInputError(f"profile file {str(path)!r}: profiles: must be a non-empty list of profile "
                                   "documents")
    profiles = dict(engine.BUILTIN_PROFILES)
    read: set[str] = set()
    for i, document in enumerate(documents_):
        try:
            profile = engine.parse_profile(document, prefix=f"profiles[{i}].")
        except engine.ProfileError as exc:
            raise EvaluationInputError(f"profile file {str(path)!r}: {exc}") from exc
        if profile.name in read:
            raise EvaluationInputError(f"profile file {str(path)!r}: profiles[{i}].name: {profile.name!r} is "
                                       "named twice")
        read.add(profile.name)
        profiles[profile.name] = profile
    return profiles


def extender_answer(state: ClusterState, pod: PodInfo, candidates: Sequence[str],
                    profile: engine.Profile) -> ExtenderAnswer:
    """What the extender answers kube-scheduler for this pod: filter, then prioritize (0..10)."""
    filtered = engine.run_filters(state, pod, candidates, profile)
    outcome = engine.run_scorers(state, pod, filtered.passed, profile)
    return ExtenderAnswer(
        passed=filtered.passed,
        failed={**filtered.failed, **filtered.unresolvable},
        scores={n: int(v) for n, v in zip(outcome.nodes, outcome.extender, strict=True)},
    )


# --------------------------------------------------------------------------- placement plans


def best_joint_plans(state: ClusterState, groups: Sequence[AppGroupSpec]) -> list[plans.PlacementPlan]:
    """The placement planner's joint plan of ``groups`` at its largest work budget, without the
    wall-time safety net (the same on every machine): a candidate for the certified optimum."""
    return plans.compute_joint_plans(state=state, groups=list(groups), budget_s=plans.MAX_ADAPTED_BUDGET_S,
                                     wall_slack=float("inf"))
