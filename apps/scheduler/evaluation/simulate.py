"""Schedule an AppGroup's pods one at a time, as kube-scheduler (plus our extender) would.

Each step: NodeResourcesFit filter, then the extender's filter (profiles that use it), then the
score — the default plugins' weighted sum, plus the extender's 0..10 answer x weight x 10 — and a
uniformly random pick among the top-scoring nodes (kube-scheduler's selectHost). The placement is
then written into the ClusterState the next pod sees (placements, requested resources, pod count,
recent bindings), just as the extender's bind records it.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from apps.appgroups.graph import AppGroupSpec, LabelSelector, WorkloadSpec
from apps.scheduler.scoring.default_plugins import (
    DEFAULT_WEIGHTS,
    combine_with_extender,
    default_plugin_scores,
    filter_resource_fit,
)
from apps.scheduler.scoring.plans import PlanBook
from apps.scheduler.scoring.state import ClusterState, PodInfo, evolve

from .adapter import EvaluationInputError, engine_profile, engine_profile_names, extender_answer

PIN_LABEL = "netaware.io/appgroup"


@dataclass(frozen=True)
class EvalProfile:
    """How one simulated scheduler scores: default plugins on/off, extender profile and weight."""

    name: str
    default_plugins: bool
    extender_profile: str | None = None
    extender_weight: int = 0
    # the extender profile itself (a built-in, or read from a profile file)
    extender: Any = field(default=None, compare=False, repr=False)

    @property
    def description(self) -> str:
        parts = []
        if self.default_plugins:
            parts.append("default plugins (" + ", ".join(f"{k} x{v}" for k, v in DEFAULT_WEIGHTS.items()) + ")")
        if self.extender_profile:
            parts.append(f"extender profile {self.extender_profile!r} x{self.extender_weight}")
        return " + ".join(parts) + " + resource-fit filter"


_HYBRID_RE = re.compile(r"^hybrid-(\d+)(?P<noplan>-noplan)?$")
_COMBINED_RE = re.compile(r"^(?P<profile>[a-z0-9][-a-z0-9_]*?)\+default(?:-(?P<weight>\d+))?$")

PAPER_PROFILES = ("default", "network", "hybrid-1", "hybrid-5", "load-aware")


def parse_profile(name: str, available: Mapping[str, Any] | None = None) -> EvalProfile:
    """``default``; ``network`` (alias ``network-only``); ``hybrid-<w>`` (default plugins + the
    network extender at weight w; ``hybrid-<w>-noplan`` without placement plans); ``<engine profile>`` (that extender profile alone, weight 1);
    ``<engine profile>+default[-<w>]`` (beside the default plugins). Engine profiles are the built-ins,
    or ``available`` (``adapter.load_profiles``: the built-ins and a profile file's)."""
    text = name.strip()
    if text in ("default", "default-like"):
        return EvalProfile(text, True)
    if text in ("network", "network-only"):
        return EvalProfile(text, False, "network", 1, engine_profile("network", available))
    match = _HYBRID_RE.match(text)
    if match:
        weight = int(match.group(1))
        if weight < 1:
            raise EvaluationInputError(f"profile {name!r}: the extender weight must be >= 1")
        extender = "network-noplan" if match.group("noplan") else "network"
        return EvalProfile(text, True, extender, weight, engine_profile(extender, available))
    match = _COMBINED_RE.match(text)
    if match:
        return EvalProfile(text, True, match.group("profile"), int(match.group("weight") or 1),
                           engine_profile(match.group("profile"), available))
    if text in engine_profile_names(available):
        return EvalProfile(text, False, text, 1, engine_profile(text, available))
    known = ", ".join(["default", "network", "hybrid-<w>", *engine_profile_names(available)])
    raise EvaluationInputError(f"unknown profile {name!r} (known: {known})")


# --------------------------------------------------------------------------- pods


def labels_for(selector: LabelSelector) -> dict[str, str]:
    """Labels a pod needs for the selector to match it."""
    labels = dict(selector.match_labels)
    for key, operator, values in selector.match_expressions:
        if operator == "In" and values:
            labels[key] = values[0]
        elif operator == "Exists":
            labels.setdefault(key, "x")
        elif operator == "NotIn":
            labels.setdefault(key, "netaware-eval-" + "-".join(values)[:40])
    return labels


@dataclass(frozen=True)
class SimPod:
    group: AppGroupSpec
    workload: WorkloadSpec
    pod: PodInfo

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group.namespace, self.group.name, self.workload.name)


def appgroup_pods(groups: Sequence[AppGroupSpec]) -> list[SimPod]:
    """Every replica of every workload, as the pods kube-scheduler would see."""
    pods: list[SimPod] = []
    for group in groups:
        for workload in group.workloads:
            labels = {**labels_for(workload.selector), PIN_LABEL: f"{group.namespace}/{group.name}"}
            for i in range(max(0, workload.replicas)):
                pods.append(SimPod(group, workload, PodInfo(
                    namespace=group.namespace, name=f"{workload.name}-{i}", uid=f"{group.name}-{workload.name}-{i}",
                    labels=labels, cpu_request_millicores=workload.cpu_request_millicores,
                    memory_request_bytes=workload.memory_request_bytes,
                )))
    return pods


def arrival_order(n_pods: int, seed: int) -> np.ndarray:
    """Seed -> permutation of the pods; the same order for every profile (paired comparison)."""
    return np.random.default_rng(seed).permutation(n_pods)


# --------------------------------------------------------------------------- the loop


@dataclass(frozen=True)
class RunResult:
    profile: str
    seed: int
    order: tuple[str, ...]  # "workload-i" in arrival order
    placements: Mapping[tuple[str, str, str], tuple[str, ...]]
    unscheduled: tuple[str, ...]
    final_state: ClusterState


def bind(state: ClusterState, sim: SimPod, node: str) -> ClusterState:
    placements = dict(state.placements)
    placements[sim.key] = (*placements.get(sim.key, ()), node)
    nodes = dict(state.nodes)
    res = nodes[node]
    nodes[node] = replace(
        res,
        requested_cpu_millicores=res.requested_cpu_millicores + sim.pod.cpu_request_millicores,
        requested_memory_bytes=res.requested_memory_bytes + sim.pod.memory_request_bytes,
        pod_count=res.pod_count + 1,
    )
    recent = dict(state.recent_bindings)
    recent[node] = recent.get(node, 0) + 1
    return evolve(state, changed_nodes=(node,), placements=placements, nodes=nodes, recent_bindings=recent)


def choose_node(state: ClusterState, sim: SimPod, profile: EvalProfile, engine_profiles: Mapping[str, Any],
                rng: np.random.Generator) -> str | None:
    """One scheduling cycle for one pod; None when no node passes the filters."""
    candidates = list(state.nodes)
    passed, _failed = filter_resource_fit(state.nodes, sim.pod, candidates)
    if not passed:
        return None
    plugin_total: dict[str, int] = {n: 0 for n in passed}
    extender: dict[str, int] = {}
    if profile.extender_profile is not None:
        answer = extender_answer(state, sim.pod, passed, engine_profiles[profile.extender_profile])
        passed = [n for n in passed if n in set(answer.passed)]
        if not passed:
            return None
        extender = {n: answer.scores.get(n, 0) for n in passed}
        plugin_total = {n: 0 for n in passed}
    if profile.default_plugins:
        plugin_total = dict(default_plugin_scores(state, sim.pod, passed).total)
    totals = combine_with_extender(plugin_total, extender, profile.extender_weight)
    names = list(passed)
    values = np.array([totals[n] for n in names])
    best = np.flatnonzero(values == values.max())
    return names[int(best[rng.integers(best.size)])] if best.size > 1 else names[int(best[0])]


def simulate(initial: ClusterState, pods: Sequence[SimPod], profile: EvalProfile, seed: int) -> RunResult:
    order = arrival_order(len(pods), seed)
    rng = np.random.default_rng([seed, zlib.crc32(profile.name.encode())])
    engine_profiles = {profile.extender_profile: profile.extender or engine_profile(profile.extender_profile)} \
        if profile.extender_profile else {}
    # One scheduler's plans, kept across its pods; CPU-time budget only, so results do not depend on load.
    state = evolve(initial, plan_book=PlanBook(wall_slack=math.inf))
    unscheduled: list[str] = []
    for index in order:
        sim = pods[int(index)]
        node = choose_node(state, sim, profile, engine_profiles, rng)
        if node is None:
            unscheduled.append(sim.pod.name)
            continue
        state = bind(state, sim, node)
    return RunResult(
        profile=profile.name, seed=seed, order=tuple(pods[int(i)].pod.name for i in order),
        placements=dict(state.placements), unscheduled=tuple(unscheduled), final_state=state,
    )
