"""Replay a topology change after every pod is placed: the placement as it stays (rebalancer off) vs
after the drift moves (rebalancer on), on the changed topology (docs/evaluation.md, "Drift and re-planning").

The change is a zone pair's link degrading (``--degrade A:B:rtt_ms=40,loss=3``): the scenario's link
between the two zones (both directions, node links between them included) gets the new values and the
topology is derived again, exactly as from the scenario itself. "On" does, AppGroup by AppGroup, what a
rebalancer in mode ``on`` does with the moves ``drift.assess_drift`` lists on the changed topology: one
move at a time (each replacement landing where the move says) while the drift (1 - score / best) stays
above the threshold (``NETAWARE_REBALANCER_DRIFT_THRESHOLD``'s default, 0.01), stopping after a move that
does not raise the measured score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from apps.appgroups.graph import AppGroupSpec
from apps.probes.scenario import LinkSpec, Scenario
from apps.scheduler.scoring.state import ClusterState, evolve
from apps.topology.scenario_topology import topology_from_scenario
from apps.topology.topomath import Topology

from .adapter import EvaluationInputError
from .drift import DriftReport, apply_moves, assess_drift
from .metrics import LatencyModel, TransferModel, network_metrics, request_latency_ms, transfer_cost

# key as written -> LinkSpec field; the first spelling of each is the documented one
_KEYS = {"rtt_ms": "latency_ms", "latency_ms": "latency_ms", "loss": "loss_pct", "loss_pct": "loss_pct",
         "bandwidth_mbps": "bandwidth_mbps"}
_FORMAT = "ZONE:ZONE:rtt_ms=<ms>,loss=<percent>[,bandwidth_mbps=<Mbit/s>]"
# The rebalancer's default NETAWARE_REBALANCER_DRIFT_THRESHOLD: it moves pods only while drift is above it.
REBALANCE_THRESHOLD = 0.01


@dataclass(frozen=True)
class Degradation:
    """New link values between two zones (None: unchanged)."""

    zone_a: str
    zone_b: str
    latency_ms: float | None = None
    loss_pct: float | None = None
    bandwidth_mbps: float | None = None

    def describe(self) -> str:
        parts = [f"rtt {self.latency_ms:g} ms" if self.latency_ms is not None else "",
                 f"loss {self.loss_pct:g} %" if self.loss_pct is not None else "",
                 f"bandwidth {self.bandwidth_mbps:g} Mbit/s" if self.bandwidth_mbps is not None else ""]
        return f"{self.zone_a}<->{self.zone_b}: " + ", ".join(p for p in parts if p)


def parse_degradation(text: str) -> Degradation:
    """``A:B:rtt_ms=40,loss=3`` -> Degradation; errors name the part that is wrong."""
    match = re.fullmatch(r"\s*([^:\s]+)\s*:\s*([^:\s]+)\s*:\s*(.+?)\s*", text or "")
    if match is None:
        raise EvaluationInputError(f"--degrade: expected {_FORMAT}, got {text!r}")
    zone_a, zone_b, body = match.groups()
    values: dict[str, float] = {}
    for item in body.split(","):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise EvaluationInputError(f"--degrade: {item.strip()!r} is not one of rtt_ms=, loss=, bandwidth_mbps= "
                                       f"(format {_FORMAT})")
        try:
            value = float(raw)
        except ValueError:
            raise EvaluationInputError(f"--degrade: {key} must be a number, got {raw.strip()!r}") from None
        field = _KEYS[key]
        if not math.isfinite(value) or value < 0 or (field == "loss_pct" and value > 100) or (
                field == "bandwidth_mbps" and value == 0):
            bounds = {"latency_ms": ">= 0", "loss_pct": "within 0..100", "bandwidth_mbps": "> 0"}[field]
            raise EvaluationInputError(f"--degrade: {key} must be {bounds}, got {raw.strip()!r}")
        if field in values:
            raise EvaluationInputError(f"--degrade: {key} is given twice")
        values[field] = value
    return Degradation(zone_a, zone_b, **values)


def degrade_scenario(scenario: Scenario, degradation: Degradation) -> Scenario:
    """The scenario with the zone pair's links (both directions, and node links between the two zones)
    set to the degradation's values; the zones must exist."""
    zones = scenario.zones()
    for zone in (degradation.zone_a, degradation.zone_b):
        if zone not in zones:
            raise EvaluationInputError(f"--degrade: zone {zone!r} is not in scenario {scenario.name!r} "
                                       f"(zones: {', '.join(zones)})")
    changes = {k: v for k, v in (("latency_ms", degradation.latency_ms), ("loss_pct", degradation.loss_pct),
                                 ("bandwidth_mbps", degradation.bandwidth_mbps)) if v is not None}

    def worse(link: LinkSpec) -> LinkSpec:
        return replace(link, **changes)

    pair = {(degradation.zone_a, degradation.zone_b), (degradation.zone_b, degradation.zone_a)}
    zone_of = {node.name: node.zone for node in scenario.nodes}
    zone_links = {k: worse(v) if k in pair else v for k, v in scenario.zone_links.items()}
    node_links = {k: worse(v) if (zone_of.get(k[0]), zone_of.get(k[1])) in pair else v
                  for k, v in scenario.node_links.items()}
    return replace(scenario, zone_links=zone_links, node_links=node_links)


def degraded_topology(scenario: Scenario, degradation: Degradation) -> Topology:
    return topology_from_scenario(degrade_scenario(scenario, degradation))


@dataclass(frozen=True)
class ReplayOutcome:
    """One placement before the change, after it (off), and after the moves (on)."""

    score_before: float
    score_off: float
    score_on: float
    best_score: float  # one AppGroup: the best its drift assessment found; several: NaN
    latency_before_ms: float
    latency_off_ms: float
    latency_on_ms: float
    transfer_off_usd: float
    transfer_on_usd: float
    moves: int

    @property
    def fraction_of_best(self) -> float:
        return self.score_on / self.best_score if self.best_score and math.isfinite(self.best_score) else math.nan


def rebalance(state: ClusterState, group: AppGroupSpec, report: DriftReport, *,
              threshold: float = REBALANCE_THRESHOLD) -> tuple[ClusterState, int]:
    """``state`` after the moves a rebalancer makes from ``report`` (module docstring), and how many."""
    score = network_metrics(state, (group,)).average
    made = 0
    for move in report.moves:
        if not (math.isfinite(report.best_score) and report.best_score > 0
                and 1.0 - score / report.best_score > threshold):
            break
        state = apply_moves(state, group, (move,))
        made += 1
        after = network_metrics(state, (group,)).average
        if not after > score + 1e-9:
            break  # the rebalancer stops when a move did not improve the measured score
        score = after
    return state, made


def replay(state: ClusterState, groups: Sequence[AppGroupSpec], topology: Topology, *,
           latency_model: LatencyModel, transfer_model: TransferModel,
           threshold: float = REBALANCE_THRESHOLD) -> ReplayOutcome:
    """``state``: every pod placed on the healthy topology; ``topology``: the changed one."""
    before_ms = request_latency_ms(state, groups, latency_model.call_ms_matrix(state.topology))
    before = network_metrics(state, groups).average
    degraded = evolve(state, topology=topology)
    call_ms = latency_model.call_ms_matrix(topology)
    on = degraded
    moves = 0
    best = math.nan
    for group in groups:
        report = assess_drift(state=on, group=group, latency_model=latency_model, transfer_model=transfer_model)
        on, made = rebalance(on, group, report, threshold=threshold)
        moves += made
        best = report.best_score if len(groups) == 1 else math.nan
    return ReplayOutcome(
        score_before=before, score_off=network_metrics(degraded, groups).average,
        score_on=network_metrics(on, groups).average, best_score=best, latency_before_ms=before_ms,
        latency_off_ms=request_latency_ms(degraded, groups, call_ms), latency_on_ms=request_latency_ms(on, groups, call_ms),
        transfer_off_usd=transfer_cost(degraded, groups, transfer_model).usd,
        transfer_on_usd=transfer_cost(on, groups, transfer_model).usd, moves=moves,
    )
