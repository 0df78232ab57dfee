"""Run every profile over N arrival orders and summarise: the CLI table, JSON and the plotly figure."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from apps.appgroups.graph import AppGroupSpec
from apps.probes.scenario import Scenario, ScenarioError, load_scenario
from apps.scheduler.scoring.plans import survives_zone_loss
from apps.scheduler.scoring.state import ClusterState

from .adapter import (
    EvaluationInputError,
    cluster_nodes,
    load_appgroups,
    load_profiles,
    measured_topology_for_scenario,
    nominal_usage,
    topology_for_scenario,
)
from .certified import CertifiedOptimum, certified_optimum
from .metrics import (
    ROUTINGS,
    LatencyModel,
    TransferModel,
    network_metrics,
    pods_per_zone,
    request_latency_ms,
    transfer_cost,
)
from .replay import Degradation, ReplayOutcome, degraded_topology, parse_degradation, replay
from .simulate import PAPER_PROFILES, EvalProfile, appgroup_pods, parse_profile, simulate

# The source paper's results on its testbed ("Network Aware Scheduler for Kubernetes", section 7.2 and Table 5), read off Figure 5a.
PAPER_AVERAGE_SCORES: Mapping[str, float] = {"default": 64.5, "network": 88.0, "hybrid-1": 90.0, "hybrid-5": 91.8}
PAPER_TABLE5: Mapping[str, Mapping[str, str]] = {
    "default": {"ad": "C", "cart": "FAR", "checkout": "C", "currency": "FAR", "email": "B", "frontend": "B",
                "payment": "C", "productcatalog": "B", "recommendation": "B", "redis-cart": "C", "shipping": "A"},
    "network": {"ad": "A", "cart": "A", "checkout": "A", "currency": "A", "email": "A", "frontend": "A",
                "payment": "A", "productcatalog": "A", "recommendation": "FAR", "redis-cart": "A", "shipping": "A"},
    "hybrid-1": {"ad": "A", "cart": "A", "checkout": "C", "currency": "C", "email": "C", "frontend": "A",
                 "payment": "C", "productcatalog": "A", "recommendation": "A", "redis-cart": "A", "shipping": "C"},
    "hybrid-5": {"ad": "A", "cart": "A", "checkout": "B", "currency": "A", "email": "B", "frontend": "A",
                 "payment": "B", "productcatalog": "B", "recommendation": "A", "redis-cart": "A", "shipping": "B"},
}


@dataclass(frozen=True)
class Stat:
    mean: float
    sd: float
    minimum: float
    maximum: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        arr = np.asarray([v for v in values if v == v], dtype=np.float64)
        if arr.size == 0:
            return cls(float("nan"), float("nan"), float("nan"), float("nan"))
        sd = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
        return cls(float(arr.mean()), sd, float(arr.min()), float(arr.max()))


@dataclass(frozen=True)
class ReplayResult:
    """A profile's placements after a topology change (``replay.py``): as they stay (off) and after the
    drift moves (on), over the seeds."""

    score_before: Stat
    score_off: Stat
    score_on: Stat
    best_score: Stat
    on_fraction_of_best: Stat
    latency_before_ms: Stat
    latency_off_ms: Stat
    latency_on_ms: Stat
    transfer_off_usd: Stat
    transfer_on_usd: Stat
    moves: Stat

    @classmethod
    def of(cls, outcomes: Sequence[ReplayOutcome]) -> ReplayResult:
        def stat(name: str) -> Stat:
            return Stat.of([getattr(o, name) for o in outcomes])
        return cls(stat("score_before"), stat("score_off"), stat("score_on"), stat("best_score"),
                   stat("fraction_of_best"), stat("latency_before_ms"), stat("latency_off_ms"), stat("latency_on_ms"),
                   stat("transfer_off_usd"), stat("transfer_on_usd"), stat("moves"))


@dataclass(frozen=True)
class ProfileResult:
    profile: str
    description: str
    average_score: Stat
    total_score: Stat
    latency_ms: Stat
    transfer_usd: Stat  # cross-zone + cross-region traffic, USD per TransferModel.requests requests
    cross_region_gb: Stat  # GB between regions per TransferModel.requests requests
    pods_per_zone: Mapping[str, Stat]
    workload_scores: Mapping[str, Stat]
    worst_workload: str  # lowest mean score over seeds
    worst_workload_score: float
    worst_counts: Mapping[str, int]  # how often each workload was the worst of its seed
    fraction_of_optimum: float
    worst_fraction_of_optimum: float  # the worst arrival order's average score / the optimum
    seeds_with_pods_in: Mapping[str, int]  # zone -> number of seeds with at least one pod there
    unscheduled_pods: int  # over all seeds
    per_seed_average: tuple[float, ...]
    seconds: float
    replay: ReplayResult | None = None  # with a topology change (``evaluate(degrade=...)``)
    # Arrival orders in which every AppGroup survives the loss of any one zone (plans.survives_zone_loss),
    # and how often each zone's loss broke one.
    zone_loss_survived: int = 0
    zone_loss_breaking: Mapping[str, int] = field(default_factory=dict)
    # ... and in which, after any one zone's loss, every workload still has a zone holding its whole call chain.
    zone_loss_cells: int = 0


@dataclass(frozen=True)
class EvaluationReport:
    scenario: str
    appgroups: tuple[str, ...]
    seeds: int
    first_seed: int
    pods: int
    zones: tuple[str, ...]
    profiles: tuple[ProfileResult, ...]
    optimum: CertifiedOptimum | None
    latency_model: LatencyModel
    transfer_model: TransferModel
    paper_average_scores: Mapping[str, float] = field(default_factory=lambda: dict(PAPER_AVERAGE_SCORES))
    # The paper's Table 5 placements re-scored with our metric (when the AppGroup is Online Boutique).
    paper_table5_scores: Mapping[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    degradation: str = ""  # the topology change replayed after all pods are placed ("" = none)
    # --min-zones / --min-replicas: the AppGroups were changed so (0: as given).
    min_zones: int = 0
    min_replicas: int = 0
    routing: str = "uniform"  # metrics.ROUTINGS: how latency and transfer spread calls over replicas
    # The scenario's unmeasured / stale directed pairs: when any, the profiles schedule on the measured
    # view (measured_topology_from_scenario) and every figure is scored on the nominal one.
    unmeasured_pairs: int = 0
    stale_pairs: int = 0

    def profile(self, name: str) -> ProfileResult:
        for result in self.profiles:
            if result.profile == name:
                return result
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.optimum is not None:
            out["optimum"]["placements"] = {
                "/".join(key): list(nodes) for key, nodes in self.optimum.placements.items()
            }
            out["optimum"]["reference"] = self.optimum.reference
            out["optimum"]["gap"] = self.optimum.gap
            out["optimum"]["exact"] = self.optimum.exact
        return cast("dict[str, Any]", _clean(out))


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return None if value != value or value in (float("inf"), float("-inf")) else round(value, 4)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def initial_state(scenario: Scenario, groups: Sequence[AppGroupSpec]) -> ClusterState:
    return ClusterState(
        topology=topology_for_scenario(scenario), appgroups=tuple(groups), placements={},
        nodes=cluster_nodes(scenario), usage=nominal_usage(scenario), recent_bindings={},
    )


def zone_placement_score(state: ClusterState, groups: Sequence[AppGroupSpec],
                         zone_by_workload: Mapping[str, str]) -> float | None:
    """Average network score of a placement given per workload (first AppGroup) as a zone only:
    each zone's pods go to its nodes round-robin (one pod per node while nodes last). None when the
    AppGroup's workloads are not exactly those named."""
    group = groups[0]
    if len(groups) != 1 or {w.name for w in group.workloads} != set(zone_by_workload):
        return None
    by_zone: dict[str, list[str]] = {}
    for name, node in state.nodes.items():
        by_zone.setdefault(node.zone, []).append(name)
    used: dict[str, int] = {}
    placements: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for workload in group.workloads:
        zone = zone_by_workload[workload.name]
        nodes = by_zone.get(zone)
        if not nodes:
            return None
        chosen = []
        for _ in range(max(workload.replicas, 1)):
            chosen.append(nodes[used.get(zone, 0) % len(nodes)])
            used[zone] = used.get(zone, 0) + 1
        placements[(group.namespace, group.name, workload.name)] = tuple(chosen)
    return network_metrics(replace(state, placements=placements), groups).average


def with_high_availability(groups: Sequence[AppGroupSpec], *, min_zones: int = 0, min_replicas: int = 0
                           ) -> tuple[AppGroupSpec, ...]:
    """The AppGroups with ``spec.minZones`` set to ``min_zones`` and every workload given at least
    ``max(min_zones, min_replicas)`` replicas (so the no-HA baseline of a comparison has the same pods)."""
    floor = max(min_zones, min_replicas, 1)
    out = []
    for group in groups:
        workloads = tuple(replace(w, replicas=max(w.replicas, floor)) if w.replicas > 0 else w
                          for w in group.workloads)
        out.append(replace(group, workloads=workloads, min_zones=min_zones or group.min_zones))
    return tuple(out)


def zone_loss(state: ClusterState, groups: Sequence[AppGroupSpec], zones: Sequence[str], *, chains: bool = False
              ) -> tuple[bool, set[str]]:
    """Whether every AppGroup of a final state survives the loss of any one zone (``chains``: with complete
    call chains in one zone), and the zones whose loss breaks one."""
    breaking: set[str] = set()
    for group in groups:
        counts: dict[str, dict[str, int]] = {}
        for workload in group.workloads:
            for node in state.placements.get((group.namespace, group.name, workload.name), ()):
                res = state.nodes.get(node)
                if res is not None:
                    where = counts.setdefault(workload.name, {})
                    where[res.zone] = where.get(res.zone, 0) + 1
        breaking.update(survives_zone_loss(group, counts, zones, chains=chains)[1])
    return not breaking, breaking


def load_inputs(scenario_path: str | Path, appgroup_path: str | Path) -> tuple[Scenario, tuple[AppGroupSpec, ...]]:
    path = Path(scenario_path)
    if not path.is_file():
        raise EvaluationInputError(f"scenario file {str(scenario_path)!r} does not exist (or is not a file)")
    try:
        scenario = load_scenario(path)
    except ScenarioError as exc:
        raise EvaluationInputError(f"scenario {str(scenario_path)!r}: {exc}") from exc
    except OSError as exc:
        raise EvaluationInputError(f"scenario {str(scenario_path)!r}: {exc}") from exc
    groups = load_appgroups(appgroup_path)
    return scenario, groups


Progress = Callable[[str, int, int], None]  # (stage, done, total): arrival orders simulated over all profiles


def evaluate(
    scenario: Scenario,
    groups: Sequence[AppGroupSpec],
    *,
    profiles: Sequence[str] = PAPER_PROFILES,
    seeds: int = 50,
    first_seed: int = 0,
    with_optimum: bool = True,
    latency_model: LatencyModel | None = None,
    transfer_model: TransferModel | None = None,
    time_limit: float = 60.0,
    memory_limit: int | None = None,
    extender_profiles: Mapping[str, Any] | None = None,
    degrade: Degradation | None = None,
    min_zones: int = 0,
    min_replicas: int = 0,
    routing: str = "uniform",
    progress: Progress | None = None,
) -> EvaluationReport:
    """``degrade``: once every pod is placed, that zone pair's link degrades; each profile's result then
    carries ``replay`` (rebalancer off vs on, ``replay.py``). ``progress(stage, done, total)`` is called before
    the optimum and after each arrival order of each profile (``done`` of ``total`` orders over all
    profiles), so a background run can say how far it is."""
    if seeds < 1:
        raise EvaluationInputError(f"seeds must be >= 1, got {seeds}")
    if not profiles:
        raise EvaluationInputError("profiles: name at least one profile")
    started = time.perf_counter()
    parsed: list[EvalProfile] = [parse_profile(name, extender_profiles) for name in profiles]
    names = [p.name for p in parsed]
    if len(set(names)) != len(names):
        raise EvaluationInputError(f"profiles: {names} names a profile twice")
    if routing not in ROUTINGS:
        raise EvaluationInputError(f"routing: must be one of {', '.join(ROUTINGS)}, got {routing!r}")
    if min_zones < 0 or min_replicas < 0:
        raise EvaluationInputError("min zones and min replicas must be >= 0")
    if min_zones or min_replicas:
        groups = with_high_availability(groups, min_zones=min_zones, min_replicas=min_replicas)
    state0 = initial_state(scenario, groups)
    # What the schedulers see: the measured view when the agents miss pairs (the truth, state0, scores).
    seen0 = (replace(state0, topology=measured_topology_for_scenario(scenario))
             if scenario.unmeasured or scenario.stale else state0)
    for group in groups:
        for workload in group.workloads:
            if workload.replicas < 0:
                raise EvaluationInputError(f"{group.name}/{workload.name}: replicas must be >= 0")
    pods = appgroup_pods(groups)
    if not pods:
        raise EvaluationInputError("the AppGroups have no pods to schedule (all replicas are 0)")
    zones = scenario.zones()
    model = latency_model or LatencyModel()
    transfer = transfer_model or TransferModel()
    call_ms = model.call_ms_matrix(state0.topology)
    changed = degraded_topology(scenario, degrade) if degrade is not None else None
    total = seeds * len(parsed)
    if with_optimum and progress is not None:
        progress("computing the optimum (MILP)", 0, total)
    optimum = (certified_optimum(state0, groups, time_limit=time_limit, memory_limit=memory_limit)
               if with_optimum else None)
    reference = optimum.reference if optimum is not None else float("nan")

    results: list[ProfileResult] = []
    for number, profile in enumerate(parsed):
        t0 = time.perf_counter()
        averages: list[float] = []
        totals: list[float] = []
        latencies: list[float] = []
        dollars: list[float] = []
        region_gb: list[float] = []
        zone_counts: dict[str, list[float]] = {z: [] for z in zones}
        per_workload: dict[str, list[float]] = {}
        worst: Counter[str] = Counter()
        seeds_in: Counter[str] = Counter()
        breaking: Counter[str] = Counter()
        survived = cells = 0
        unscheduled = 0
        replays: list[ReplayOutcome] = []
        for seed in range(first_seed, first_seed + seeds):
            run = simulate(seen0, pods, profile, seed)
            if seen0 is not state0:
                run = replace(run, final_state=replace(run.final_state, topology=state0.topology, plan_book=None))
            metrics = network_metrics(run.final_state, groups)
            averages.append(metrics.average)
            totals.append(metrics.total)
            latencies.append(request_latency_ms(run.final_state, groups, call_ms, routing))
            cost = transfer_cost(run.final_state, groups, transfer, routing)
            dollars.append(cost.usd)
            region_gb.append(cost.cross_region_gb)
            counts = pods_per_zone(run.final_state, zones)
            for zone in zones:
                zone_counts[zone].append(counts.get(zone, 0))
                if counts.get(zone, 0):
                    seeds_in[zone] += 1
            for key, value in metrics.per_workload.items():
                per_workload.setdefault(key, []).append(value)
            if metrics.worst_workload:
                worst[metrics.worst_workload] += 1
            unscheduled += len(run.unscheduled)
            if changed is not None:
                replays.append(replay(run.final_state, groups, changed, latency_model=model, transfer_model=transfer))
            ok, broken = zone_loss(run.final_state, groups, zones)
            survived += ok
            breaking.update(broken)
            cells += zone_loss(run.final_state, groups, zones, chains=True)[0]
            if progress is not None:
                done = seed - first_seed + 1
                progress(f"profile {profile.name} ({number + 1} of {len(parsed)}): order {done} of {seeds}",
                         number * seeds + done, total)
        workload_stats = {k: Stat.of(v) for k, v in sorted(per_workload.items())}
        worst_name = min(workload_stats, key=lambda k: workload_stats[k].mean) if workload_stats else ""
        avg = Stat.of(averages)
        results.append(ProfileResult(
            profile=profile.name, description=profile.description, average_score=avg,
            total_score=Stat.of(totals), latency_ms=Stat.of(latencies), transfer_usd=Stat.of(dollars),
            cross_region_gb=Stat.of(region_gb),
            pods_per_zone={z: Stat.of(v) for z, v in zone_counts.items()},
            workload_scores=workload_stats, worst_workload=worst_name,
            worst_workload_score=workload_stats[worst_name].mean if worst_name else float("nan"),
            worst_counts=dict(worst.most_common()),
            fraction_of_optimum=avg.mean / reference if reference and reference == reference else float("nan"),
            worst_fraction_of_optimum=(avg.minimum / reference if reference and reference == reference
                                       else float("nan")),
            seeds_with_pods_in={z: seeds_in.get(z, 0) for z in zones}, unscheduled_pods=unscheduled,
            per_seed_average=tuple(averages), seconds=time.perf_counter() - t0,
            replay=ReplayResult.of(replays) if replays else None,
            zone_loss_survived=survived, zone_loss_breaking=dict(sorted(breaking.items())), zone_loss_cells=cells,
        ))
    table5 = {name: zone_placement_score(state0, groups, zones_) for name, zones_ in PAPER_TABLE5.items()}
    return EvaluationReport(
        paper_table5_scores={k: v for k, v in table5.items() if v is not None},
        scenario=scenario.name, appgroups=tuple(f"{g.namespace}/{g.name}" for g in groups), seeds=seeds,
        first_seed=first_seed, pods=len(pods), zones=tuple(zones), profiles=tuple(results), optimum=optimum,
        latency_model=model, transfer_model=transfer, seconds=time.perf_counter() - started,
        degradation=degrade.describe() if degrade is not None else "",
        min_zones=min_zones, min_replicas=min_replicas, routing=routing,
        unmeasured_pairs=len(scenario.unmeasured), stale_pairs=len(scenario.stale),
    )


def run_evaluation(
    scenario_path: str | Path,
    appgroup_path: str | Path,
    *,
    profiles: Sequence[str] = PAPER_PROFILES,
    seeds: int = 50,
    first_seed: int = 0,
    with_optimum: bool = True,
    time_limit: float = 60.0,
    memory_limit: int | None = None,
    profile_file: str | Path | None = None,
    degrade: str | None = None,
    min_zones: int = 0,
    min_replicas: int = 0,
    routing: str = "uniform",
    progress: Progress | None = None,
) -> EvaluationReport:
    """The whole evaluation from files (what ``manage.py evaluate`` and the dashboard call).
    ``time_limit`` (s) and ``memory_limit`` (bytes; None: no limit, solved in this process) bound the
    optimum's solver; ``profile_file``: extender profile documents beside the built-ins
    (``adapter.load_profiles``); ``degrade``: a zone pair's link change replayed after all pods are
    placed (``replay.parse_degradation``: ``A:B:rtt_ms=40,loss=3``)."""
    if time_limit <= 0:
        raise EvaluationInputError(f"time limit must be > 0 seconds, got {time_limit}")
    if memory_limit is not None and memory_limit < 64 * 2**20:
        raise EvaluationInputError(f"memory limit must be at least 64Mi, got {memory_limit} bytes")
    degradation = parse_degradation(degrade) if degrade is not None else None
    scenario, groups = load_inputs(scenario_path, appgroup_path)
    extender_profiles = load_profiles(profile_file) if profile_file is not None else None
    return evaluate(scenario, groups, profiles=profiles, seeds=seeds, first_seed=first_seed,
                    with_optimum=with_optimum, time_limit=time_limit, memory_limit=memory_limit,
                    extender_profiles=extender_profiles, degrade=degradation, min_zones=min_zones,
                    min_replicas=min_replicas, routing=routing, progress=progress)


# --------------------------------------------------------------------------- presentation


def _pm(stat: Stat, digits: int = 1) -> str:
    if stat.mean != stat.mean:
        return "n/a"
    return f"{stat.mean:.{digits}f} ± {stat.sd:.{digits}f}"


def format_table(report: EvaluationReport) -> str:
    zones = report.zones
    header = ["profile", "avg score", "total score", "% of optimum", "worst order %", "latency ms",
              f"transfer $/{report.transfer_model.requests // 1_000_000}M req", "survives a zone loss", "in-zone chains",
              *[f"pods {z}" for z in zones], "worst workload", "paper avg", "paper Table 5 re-scored"]
    rows = []
    for r in report.profiles:
        paper = report.paper_average_scores.get(r.profile)
        rows.append([
            r.profile, _pm(r.average_score), _pm(r.total_score, 0),
            f"{100 * r.fraction_of_optimum:.1f}" if r.fraction_of_optimum == r.fraction_of_optimum else "n/a",
            f"{100 * r.worst_fraction_of_optimum:.1f}" if r.worst_fraction_of_optimum == r.worst_fraction_of_optimum
            else "n/a",
            _pm(r.latency_ms), _pm(r.transfer_usd, 2), f"{r.zone_loss_survived}/{report.seeds}",
            f"{r.zone_loss_cells}/{report.seeds}", *[_pm(r.pods_per_zone[z]) for z in zones],
            f"{r.worst_workload} ({r.worst_workload_score:.1f})" if r.worst_workload else "-",
            f"{paper:.1f}" if paper is not None else "-",
            f"{report.paper_table5_scores[r.profile]:.1f}" if r.profile in report.paper_table5_scores else "-",
        ])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *[line(r) for r in rows]]
    out.append("")
    out.append(f"scenario {report.scenario}, AppGroups {', '.join(report.appgroups)}, {report.pods} pods, "
               f"{report.seeds} arrival orders (seeds {report.first_seed}..{report.first_seed + report.seeds - 1}), "
               f"{report.seconds:.1f} s")
    if report.routing != "uniform":
        out.append(f"latency and transfer with {report.routing} routing (calls stay in the caller's zone when "
                   "the callee has a pod there)")
    if report.unmeasured_pairs or report.stale_pairs:
        out.append(f"scheduled on the measured view ({report.unmeasured_pairs} unmeasured and {report.stale_pairs} "
                   "stale directed pairs inferred from their zone / region), scored on the nominal links")
    if report.min_zones or report.min_replicas:
        out.append(f"changed for this run: spec.minZones {report.min_zones or 'as given'}, every workload at least "
                   f"{max(report.min_zones, report.min_replicas, 1)} replicas")
    if report.optimum is not None:
        opt = report.optimum
        out.append(f"{opt.message} [{opt.bins} bins{'' if opt.uniform else ', links not uniform in a bin'}; "
                   f"{opt.seconds:.1f} s]; % of optimum = % of the best placement found")
    for r in report.profiles:
        far = {z: n for z, n in r.seeds_with_pods_in.items() if n}
        extra = f", unscheduled pods: {r.unscheduled_pods}" if r.unscheduled_pods else ""
        out.append(f"{r.profile}: seeds with pods per zone {far}{extra}")
    if report.degradation:
        out.extend(["", f"after all pods are placed, {report.degradation} (mean ± sd over the seeds):",
                    format_replay_table(report)])
    return "\n".join(out)


def format_replay_table(report: EvaluationReport) -> str:
    """Rebalancer off vs on after the topology change, one row per profile."""
    usd = f"$/{report.transfer_model.requests // 1_000_000}M req"
    header = ["profile", "score before", "score off", "score on", "best now", "on % of best", "latency before ms",
              "latency off ms", "latency on ms", f"transfer off {usd}", f"transfer on {usd}", "moves"]
    rows = []
    for r in report.profiles:
        if r.replay is None:
            continue
        x = r.replay
        fraction = x.on_fraction_of_best
        rows.append([r.profile, _pm(x.score_before), _pm(x.score_off), _pm(x.score_on), _pm(x.best_score),
                     f"{100 * fraction.mean:.1f}" if fraction.mean == fraction.mean else "n/a",
                     _pm(x.latency_before_ms), _pm(x.latency_off_ms), _pm(x.latency_on_ms),
                     _pm(x.transfer_off_usd, 2), _pm(x.transfer_on_usd, 2), _pm(x.moves)])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *[line(r) for r in rows]])


def report_figure(report: EvaluationReport) -> dict[str, Any]:
    """Plotly figure (as a JSON-able dict): average score ± sd per profile, and pods per zone."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = [r.profile for r in report.profiles]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Average network score (mean ± sd)", "Pods per zone (mean)"))
    fig.add_trace(go.Bar(
        x=names, y=[r.average_score.mean for r in report.profiles], name="average score",
        error_y={"type": "data", "array": [r.average_score.sd for r in report.profiles]},
    ), row=1, col=1)
    paper = [(n, report.paper_average_scores[n]) for n in names if n in report.paper_average_scores]
    if paper:
        fig.add_trace(go.Scatter(x=[p[0] for p in paper], y=[p[1] for p in paper], mode="markers",
                                 name="paper", marker={"symbol": "diamond", "size": 10}), row=1, col=1)
    if report.optimum is not None and report.optimum.reference == report.optimum.reference:
        fig.add_hline(y=report.optimum.reference, line_dash="dash", annotation_text="optimum", row=1, col=1)
    for zone in report.zones:
        fig.add_trace(go.Bar(x=names, y=[r.pods_per_zone[zone].mean for r in report.profiles], name=f"zone {zone}"),
                      row=1, col=2)
    fig.update_layout(barmode="group", title=f"{report.scenario}: {report.seeds} arrival orders",
                      yaxis={"range": [0, 105]})
    figure: dict[str, Any] = fig.to_plotly_json()
    return cast("dict[str, Any]", _plain(figure))


def _plain(value: Any) -> Any:
    """numpy arrays/scalars in a plotly dict -> lists/floats, so json/orjson can dump it."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def write_figure_html(report: EvaluationReport, path: str | Path) -> None:
    import plotly.io as pio

    Path(path).write_text(pio.to_html(report_figure(report), include_plotlyjs="cdn", full_html=True))
