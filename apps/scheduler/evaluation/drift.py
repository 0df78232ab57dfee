"""Drift: how far a running AppGroup's placement has fallen behind the best one on today's topology.

A placement is planned once, on the topology of its day; links degrade, zones fill, nodes come and go,
and nothing moves running pods. ``assess_drift`` scores the *current* placement on the *current*
topology (average network score, modelled request latency, transfer cost: ``metrics.py``), asks the
placement planner (``scoring/plans.py``, deterministic: a work budget without the wall-time safety
net) where it would put the whole AppGroup now, and lists single-pod moves that close the gap.

Moves are greedy, best exact gain first, each an improvement on its own (the rebalancer applies them
one at a time and stops when one does not pay), to any node the AppGroup uses or the plan names; on a
tie, a move toward the plan (from a node holding more of the workload than the plan to one holding
fewer) wins. Moving pods next to those already well placed often needs fewer moves than following
the plan (made with the AppGroup unbound); when that search stops short of the plan, a second one
using only moves toward the plan is tried, and the sequence reaching the higher score is returned. Every destination must hold the pod's requests
with the moves before it applied. The best score is the best of the current placement, the plan and
where the moves lead, so a drift of 0 means nothing better was found.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from apps.appgroups.graph import AppGroupSpec, WorkloadSpec
from apps.scheduler.scoring import plans
from apps.scheduler.scoring.state import ClusterState, NodeResources, evolve

from .adapter import network_scores_at
from .metrics import LatencyModel, TransferModel, request_latency_ms, transfer_cost

# Work budget (nominal seconds, plans.WORK_PER_SECOND) of the plan drift compares with: larger than a
# scheduling request's (it runs in a periodic task), without the wall-time safety net (deterministic).
DRIFT_PLAN_BUDGET_S = 0.5
MAX_MOVES = 64
# A move must gain at least this much average network score (0..100) to be listed.
MIN_GAIN = 1e-3


@dataclass(frozen=True)
class PlacedPod:
    """One running pod of the AppGroup: ``pod`` is "namespace/name"."""

    pod: str
    workload: str
    node: str


@dataclass(frozen=True)
class Move:
    """Evict ``pod`` from ``from_node`` so its replacement lands on ``to_node``; ``expected_gain`` is
    the average network score (0..100 points) it adds with the moves before it applied."""

    pod: str
    workload: str
    from_node: str
    to_node: str
    expected_gain: float
    reason: str


@dataclass(frozen=True)
class DriftReport:
    """Current placement vs the best found now, on the current topology (see module docstring)."""

    appgroup: str  # "namespace/name"
    current_score: float  # average network score 0..100 (NaN: nothing to score)
    best_score: float
    drift: float  # 0..1: 1 - current / best
    current_latency_ms: float  # modelled request latency (critical path, metrics.LatencyModel)
    best_latency_ms: float
    current_transfer_cost: float  # USD per TransferModel.requests requests (metrics.TransferModel)
    best_transfer_cost: float
    moves: tuple[Move, ...]
    score_after_moves: float = math.nan  # where applying every move leads
    plan_id: str = ""
    notes: tuple[str, ...] = ()

    @property
    def recovered(self) -> float:
        """Share of the best score the moves reach (1.0 when there is nothing to gain)."""
        if not _finite(self.best_score) or self.best_score <= 0:
            return 1.0
        return min(1.0, (self.score_after_moves if _finite(self.score_after_moves) else self.current_score)
                   / self.best_score)


def _finite(x: float) -> bool:
    return x is not None and math.isfinite(x)


def drift_ratio(current: float, best: float) -> float:
    """1 - current / best, within 0..1; 0 when either is not a number or best is not positive."""
    if not (_finite(current) and _finite(best)) or best <= 0:
        return 0.0
    return float(min(1.0, max(0.0, 1.0 - current / best)))


# --------------------------------------------------------------------------- helpers

def _demand(workload: WorkloadSpec) -> tuple[int, int]:
    return workload.cpu_request_millicores, workload.memory_request_bytes


def _fits(node: NodeResources, cpu: int, mem: int) -> bool:
    return (node.allocatable_cpu_millicores - node.requested_cpu_millicores >= cpu
            and node.allocatable_memory_bytes - node.requested_memory_bytes >= mem
            and node.pod_count < plans.MAX_PODS_PER_NODE)


def _shift(node: NodeResources, cpu: int, mem: int, pods: int) -> NodeResources:
    return replace(node, requested_cpu_millicores=node.requested_cpu_millicores + cpu,
                   requested_memory_bytes=node.requested_memory_bytes + mem, pod_count=node.pod_count + pods)


class _Scorer:
    """Scores placements of one AppGroup on one state (only its placements change), as
    ``metrics.network_metrics`` does; a workload's Algorithm 2 depends only on its own pods and those of
    the workloads it calls or that call it, so each is remembered per those nodes and a single-pod
    move recomputes a few workloads, not the AppGroup."""

    def __init__(self, state: ClusterState, group: AppGroupSpec) -> None:
        self.state = state
        self.group = group
        self.memo: dict[tuple[tuple[str, tuple[str, ...]], ...], float] = {}
        self.parts: dict[tuple[str, tuple[tuple[str, ...], ...]], float | None] = {}
        self.neighbours = {w.name: tuple(sorted({w.name, *(d.target for d in w.dependencies),
                                                 *(o.name for o, _ in group.dependents_of(w.name))}))
                           for w in group.workloads}
        self.weight = {w.name: w.weight for w in group.workloads}

    def with_placement(self, placement: Mapping[str, Sequence[str]]) -> ClusterState:
        placements = dict(self.state.placements)
        for workload in self.group.workloads:
            key = (self.group.namespace, self.group.name, workload.name)
            nodes = tuple(sorted(placement.get(workload.name, ())))
            if nodes:
                placements[key] = nodes
            else:
                placements.pop(key, None)
        return evolve(self.state, placements=placements)

    def score(self, placement: Mapping[str, Sequence[str]]) -> float:
        """The average network score (0..100; NaN: nothing to score) of ``placement`` (workload -> nodes)."""
        nodes = {w: tuple(sorted(placement.get(w, ()))) for w in self.neighbours}
        key = tuple(nodes.items())
        known = self.memo.get(key)
        if known is not None:
            return known
        state: ClusterState | None = None
        scores: dict[str, float] = {}
        for workload, around in self.neighbours.items():
            if not nodes[workload]:
                continue
            part = (workload, tuple(nodes[n] for n in around))
            if part not in self.parts:
                state = state or self.with_placement(nodes)
                values = network_scores_at(state, self.group, workload, nodes[workload])
                self.parts[part] = float(np.mean(values)) if values is not None else None
            value = self.parts[part]
            if value is not None:
                scores[workload] = value
        if not scores:
            result = math.nan
        else:  # as metrics.network_metrics: importance-weighted mean of the workload scores
            total = sum(self.weight[w] for w in scores)
            result = (sum(self.weight[w] * v for w, v in scores.items()) / total if total > 0
                      else float(np.mean(list(scores.values()))))
        self.memo[key] = result
        return result


def _without_group(state: ClusterState, group: AppGroupSpec) -> ClusterState:
    """The state with the AppGroup's pods unbound (their requests released), for planning it anew."""
    nodes = dict(state.nodes)
    placements = dict(state.placements)
    for workload in group.workloads:
        cpu, mem = _demand(workload)
        for node in placements.pop((group.namespace, group.name, workload.name), ()):
            if node in nodes:  # never below 0: a state may not count the pods (no cluster watcher)
                n = nodes[node]
                nodes[node] = replace(n, requested_cpu_millicores=max(n.requested_cpu_millicores - cpu, 0),
                                      requested_memory_bytes=max(n.requested_memory_bytes - mem, 0),
                                      pod_count=max(n.pod_count - 1, 0))
    return evolve(state, placements=placements, nodes=nodes, changed_nodes=tuple(nodes), plan_book=None)


def _materialize(plan: plans.PlacementPlan, group: AppGroupSpec, free_state: ClusterState,
                 current: Mapping[str, Sequence[str]]) -> dict[str, list[str]] | None:
    """The plan as nodes: its node plan where it has one, else per zone the nodes the workload already
    uses there first, then the roomiest; None when its pods do not fit the nodes."""
    nodes = dict(free_state.nodes)
    by_zone: dict[str, list[str]] = {}
    for name in sorted(nodes):
        by_zone.setdefault(nodes[name].zone, []).append(name)
    out: dict[str, list[str]] = {}
    for workload in group.workloads:
        cpu, mem = _demand(workload)
        chosen: list[str] = []
        node_plan = plan.nodes_for(workload.name)
        for node, count in sorted(node_plan.items()):
            chosen.extend([node] * count)
        for zone, count in sorted(plan.zones_for(workload.name).items()):
            left = count - sum(c for n, c in node_plan.items() if n in nodes and nodes[n].zone == zone)
            mine = Counter(n for n in current.get(workload.name, ()) if n in nodes and nodes[n].zone == zone)
            for _ in range(max(left, 0)):
                fitting = [n for n in by_zone.get(zone, ()) if _fits(nodes[n], cpu, mem)]
                if not fitting:
                    return None
                pick = max(fitting, key=lambda n: (mine[n], nodes[n].allocatable_cpu_millicores
                                                   - nodes[n].requested_cpu_millicores, n))
                if mine[pick]:
                    mine[pick] -= 1
                chosen.append(pick)
                nodes[pick] = _shift(nodes[pick], cpu, mem, 1)
        out[workload.name] = chosen
    return out


# --------------------------------------------------------------------------- entry

def assess_drift(*, state: ClusterState, group: AppGroupSpec, pods: Sequence[PlacedPod] | None = None,
                 budget_s: float = DRIFT_PLAN_BUDGET_S, latency_model: LatencyModel | None = None,
                 transfer_model: TransferModel | None = None, max_moves: int = MAX_MOVES) -> DriftReport:
    """The AppGroup's drift on ``state`` (its topology is the current one). ``pods``: its running pods
    with their names; without them, the state's placements with names "<workload>-<i>". ``state``'s
    nodes must count those pods in their requests (as the extender's and the evaluation's states do)."""
    label = f"{group.namespace}/{group.name}"
    latency_model = latency_model or LatencyModel()
    transfer_model = transfer_model or TransferModel()
    known = {w.name: w for w in group.workloads}
    if pods is None:
        pods = [PlacedPod(f"{group.namespace}/{w.name}-{i}", w.name, node) for w in group.workloads
                for i, node in enumerate(state.placements.get((group.namespace, group.name, w.name), ()))]
    notes: list[str] = []
    movable = [p for p in pods if p.workload in known and p.node in state.nodes]
    if len(movable) < len(pods):
        notes.append(f"{len(pods) - len(movable)} pod(s) on nodes or of workloads the state does not know "
                     "are left where they are")
    current: dict[str, list[str]] = {w.name: [] for w in group.workloads}
    for p in pods:
        if p.workload in known:
            current[p.workload].append(p.node)
    scorer = _Scorer(state, group)
    state = scorer.with_placement(current)
    scorer.state = state
    call_ms = latency_model.call_ms_matrix(state.topology)

    def latency(placement: Mapping[str, Sequence[str]]) -> float:
        return request_latency_ms(scorer.with_placement(placement), [group], call_ms)

    def cost(placement: Mapping[str, Sequence[str]]) -> float:
        return transfer_cost(scorer.with_placement(placement), [group], transfer_model).usd

    current_score = scorer.score(current)
    free_state = _without_group(state, group)
    # The pods running now, not the replicas hinted: pending pods are the scheduler's, not a move's.
    running = replace(group, workloads=tuple(replace(w, replicas=len(current[w.name])) for w in group.workloads))
    plan = plans.compute_plan(state=free_state, group=running, budget_s=budget_s, wall_slack=float("inf"),
                              reason="drift assessment")
    target = _materialize(plan, group, free_state, current) if plan.method != "none" else None
    if target is None:
        notes.append("the planner's plan does not fit the nodes; moves are searched around the current placement")
    elif plan.unplaced:
        notes.append("the plan does not hold the whole AppGroup; it is compared as found")
    plan_score = scorer.score(target) if target is not None else math.nan

    moves, after = _best_moves(state, group, scorer, movable, current, target, plan.plan_id, max_moves)
    after_score = scorer.score(after)
    candidates = [(current_score, current), (after_score, after)]
    if target is not None and not plan.unplaced:
        candidates.append((plan_score, target))
    finite = [(s, p) for s, p in candidates if _finite(s)]
    best_score, best = max(finite, key=lambda c: c[0]) if finite else (math.nan, current)
    if _finite(plan_score) and _finite(after_score) and plan_score > after_score + MIN_GAIN and plan_score >= best_score:
        notes.append(f"the plan scores {plan_score - after_score:.2f} more than the moves reach: the rest needs "
                     "moves that do not improve on their own (several pods across zones at once)")
    return DriftReport(
        appgroup=label, current_score=current_score, best_score=best_score,
        drift=drift_ratio(current_score, best_score),
        current_latency_ms=latency(current), best_latency_ms=latency(best),
        current_transfer_cost=cost(current), best_transfer_cost=cost(best),
        moves=tuple(moves), score_after_moves=after_score, plan_id=plan.plan_id, notes=tuple(notes),
    )


def _best_moves(state: ClusterState, group: AppGroupSpec, scorer: _Scorer, pods: Sequence[PlacedPod],
                current: Mapping[str, Sequence[str]], target: Mapping[str, Sequence[str]] | None,
                plan_id: str, max_moves: int) -> tuple[list[Move], dict[str, list[str]]]:
    """The better of two greedy sequences: any move (fewest moves, often) and only moves toward the
    plan (which reaches a plan whose first steps the free search would not take, e.g. to an empty zone)."""
    free = _greedy_moves(state, group, scorer, pods, current, target, plan_id, max_moves, plan_only=False)
    if target is None or not scorer.score(target) > scorer.score(free[1]) + MIN_GAIN:
        return free
    planned = _greedy_moves(state, group, scorer, pods, current, target, plan_id, max_moves, plan_only=True)
    score_free, score_planned = scorer.score(free[1]), scorer.score(planned[1])
    if _finite(score_planned) and score_planned > score_free + MIN_GAIN:
        return planned
    return free


def _greedy_moves(state: ClusterState, group: AppGroupSpec, scorer: _Scorer, pods: Sequence[PlacedPod],
                  current: Mapping[str, Sequence[str]], target: Mapping[str, Sequence[str]] | None,
                  plan_id: str, max_moves: int, *, plan_only: bool) -> tuple[list[Move], dict[str, list[str]]]:
    """Best single-pod move first, each improving on its own, until none does (see module docstring)."""
    nodes = dict(state.nodes)
    spec = {w.name: w for w in group.workloads}
    placement = {w: list(ns) for w, ns in current.items()}
    # pods per (workload, node), in a stable order: which pod a move names
    where: dict[tuple[str, str], list[str]] = {}
    for p in sorted(pods, key=lambda p: p.pod):
        where.setdefault((p.workload, p.node), []).append(p.pod)
    want = {w: Counter(ns) for w, ns in (target or {}).items()}
    moves: list[Move] = []
    score = scorer.score(placement)
    if not _finite(score):
        return moves, placement
    for _ in range(max_moves):
        best: tuple[float, int, str, str, str] | None = None  # (gain, toward the plan, workload, from, to)
        used = sorted({n for ns in placement.values() for n in ns} | {n for ns in (target or {}).values() for n in ns})
        for workload in sorted(placement):
            cpu, mem = _demand(spec[workload])
            have = Counter(placement[workload])
            goal = want.get(workload, Counter())
            for a in sorted(have):
                if not where.get((workload, a)):
                    continue
                for b in used:
                    if b == a or b not in nodes or not _fits(nodes[b], cpu, mem):
                        continue
                    toward = int(target is not None and have[a] > goal[a] and goal[b] > have[b])
                    if plan_only and not toward:
                        continue
                    trial = dict(placement)
                    moved = list(placement[workload])
                    moved.remove(a)
                    moved.append(b)
                    trial[workload] = moved
                    gain = scorer.score(trial) - score
                    if gain > MIN_GAIN and (best is None or (round(gain, 9), toward) > (round(best[0], 9), best[1])):
                        best = (gain, toward, workload, a, b)
        if best is None:
            break
        gain, toward, workload, a, b = best
        pod = where[(workload, a)].pop(0)
        where.setdefault((workload, b), []).append(pod)
        placement[workload].remove(a)
        placement[workload].append(b)
        cpu, mem = _demand(spec[workload])
        nodes[a] = _shift(nodes[a], -cpu, -mem, -1)
        nodes[b] = _shift(nodes[b], cpu, mem, 1)
        score += gain
        za, zb = state.nodes[a].zone or "(none)", state.nodes[b].zone or "(none)"
        why = (f"toward plan {plan_id}: {workload} from zone {za} to {zb}" if toward
               else f"{workload} from zone {za} to {zb} (nearer its peers; not in plan {plan_id})")
        moves.append(Move(pod, workload, a, b, round(float(gain), 6), f"{why}, +{gain:.2f} score"))
    return moves, placement


def apply_moves(state: ClusterState, group: AppGroupSpec, moves: Sequence[Move]) -> ClusterState:
    """``state`` with ``moves`` applied in order (placements and node requests): what a rebalancer
    that carried them out would leave, for evaluation."""
    placements = dict(state.placements)
    nodes = dict(state.nodes)
    spec = {w.name: w for w in group.workloads}
    for move in moves:
        key = (group.namespace, group.name, move.workload)
        pods = list(placements.get(key, ()))
        if move.from_node not in pods:
            raise ValueError(f"move of {move.pod}: no pod of {move.workload} on {move.from_node}")
        pods.remove(move.from_node)
        pods.append(move.to_node)
        placements[key] = tuple(sorted(pods))
        cpu, mem = _demand(spec[move.workload])
        nodes[move.from_node] = _shift(nodes[move.from_node], -cpu, -mem, -1)
        nodes[move.to_node] = _shift(nodes[move.to_node], cpu, mem, 1)
    return evolve(state, placements=placements, nodes=nodes, changed_nodes=tuple(nodes))


__all__ = ["DriftReport", "Move", "PlacedPod", "apply_moves", "assess_drift", "drift_ratio"]
