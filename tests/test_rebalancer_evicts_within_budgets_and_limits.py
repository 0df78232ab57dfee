"""The rebalancer (apps/scheduler/rebalancer.py) against the fake Kubernetes API, with the real drift
computation, the real cluster watcher's pass and the decision log: a PodDisruptionBudget's refusal
(429) is respected, backed off and reported; a replacement that never becomes Ready stops the moves of
its workload; the per-AppGroup and cluster-wide rate limits hold; dry-run reports the moves `on` then
makes, and evicts nothing; each outcome is counted on ``/metrics`` (``netaware_rebalancer_*_total``).
The test plays kube-scheduler (binds the replacement where the move says)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from apps.appgroups.models import AppGroup
from apps.scheduler import decisionlog, selectors
from apps.scheduler.decisionlog import DecisionLog
from apps.scheduler.models import Decision
from apps.scheduler.rebalancer import Limits, Rebalancer, assess_appgroup
from netaware_core import metrics
from tests.support import rebalance_cluster as rc

EVICTION = r"/pods/[^/]+/eviction$"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def limits(**overrides: float) -> Limits:
    base = dict(interval=0.001, threshold=0.02, sustain=0.0, appgroup_per_minute=10, cluster_per_minute=10,
                ready_timeout=120.0, stop_seconds=600.0)
    return Limits(**{**base, **overrides})  # type: ignore[arg-type]


def counted(name: str, **labels: str) -> float:
    """The shared counter ``name`` as ``/metrics`` serves it (0 when absent)."""
    for family in metrics.counter_metrics():
        if family.name == name.removesuffix("_total"):
            return sum(s.value for s in family.samples
                       if s.name.endswith("_total") and all(s.labels.get(k) == v for k, v in labels.items()))
    return 0.0


@pytest.fixture
def cluster(transactional_db, fake_kube):
    selectors.redis_client().delete(metrics.COUNTERS_KEY)
    fake_kube.run_bound_pods = True
    fake_kube.run_controllers = True
    rc.nodes(fake_kube)
    return fake_kube


def rebalancer(clock: Clock, **overrides: float) -> Rebalancer:
    return Rebalancer(assess=assess_appgroup, decisions=DecisionLog(redis_client=selectors.redis_client),
                      limits=limits(**overrides), clock=clock)


def move_decisions(r: Rebalancer) -> list[Decision]:
    assert r.decisions is not None
    r.decisions.ship()
    decisionlog.drain(redis_client=selectors.redis_client())
    return list(Decision.objects.filter(verb="move").order_by("id"))


def status(fake, namespace="shop", name="app") -> dict:
    cr = fake.get("netaware.io", "v1alpha1", "appgroups", name, namespace)
    return ((cr or {}).get("status") or {}).get("rebalance") or {}


def sync_crs() -> None:
    from apps.appgroups import sync

    sync.sync_once()


def test_a_budget_refusal_is_respected_backed_off_and_reported(cluster):
    fake = cluster
    rc.deploy(fake, rc.group(), where=rc.SPLIT)
    rc.budget(fake, "shop", "front", min_available=2)  # both front pods must stay: no eviction allowed
    rc.watch_once()
    sync_crs()
    clock = Clock()
    r = rebalancer(clock)
    report = r.run_pass()
    assert report.phases == {"shop/app": "Waiting"}
    assert fake.count("POST", EVICTION) == 1
    assert len(fake.list("", "v1", "pods", "shop")) == 5  # nothing deleted
    refused = status(fake)["moves"][0]
    assert refused["outcome"] == "refused" and refused["workload"] == "front"
    assert "disruption budget" in status(fake)["message"]
    events = [e for e in fake.events("shop") if e["reason"] == "EvictionRefused"]
    assert {e["involvedObject"]["kind"] for e in events} == {"Pod", "AppGroup"}
    decision = move_decisions(r)[-1]
    assert decision.result["outcome"] == "refused" and "front-pdb" in decision.error
    r.run_pass()  # within the backoff: not asked again
    assert fake.count("POST", EVICTION) == 1
    # the budget relaxed (one front pod may go): after the backoff the move is made
    fake.merge("policy", "v1", "poddisruptionbudgets", "front-pdb", {"spec": {"minAvailable": 1}}, "shop")
    clock.advance(11)
    assert r.run_pass().phases == {"shop/app": "Moving"}
    assert fake.count("POST", EVICTION) == 2
    assert rc.ready_count(fake, "shop", "front") == 1
    assert status(fake)["moves"][0]["outcome"] == "evicted"
    assert counted("netaware_rebalancer_moves_total", outcome="refused") == 1
    assert counted("netaware_rebalancer_moves_total", outcome="evicted") == 1
    assert counted("netaware_rebalancer_passes_total") == 3


@pytest.mark.slow
def test_a_replacement_that_never_becomes_ready_stops_the_moves_of_its_workload(cluster):
    fake = cluster
    rc.deploy(fake, rc.group(), where=rc.SPLIT)
    rc.watch_once()
    sync_crs()
    fake.never_ready = {"app=front"}
    clock = Clock()
    r = rebalancer(clock, ready_timeout=60.0)
    assert r.run_pass().phases == {"shop/app": "Moving"}
    first = status(fake)["inFlight"]
    (replacement,) = rc.pending(fake, "shop")
    rc.bind(fake, "shop", replacement["metadata"]["name"], first["toNode"])  # scheduled, but never Ready
    rc.watch_once()
    clock.advance(30)
    assert r.run_pass().phases == {"shop/app": "Moving"}  # still waiting
    clock.advance(31)
    report = r.run_pass()
    assert status(fake)["blocked"] == ["front"]
    assert "inFlight" not in status(fake)
    for _ in range(3):
        clock.advance(61)
        r.run_pass()
    evicted = [m for m in status(fake)["moves"] if m["outcome"] == "evicted"]
    assert [m["workload"] for m in evicted] == ["front"]  # no second front pod was moved
    assert fake.count("POST", EVICTION) == 1
    assert report.phases["shop/app"] in ("Blocked", "Idle", "Waiting")
    assert any(e["reason"] == "RebalanceBlocked" for e in fake.events("shop"))
    assert counted("netaware_rebalancer_halts_total", reason="not_ready") == 1


def settle(fake, namespace: str) -> None:
    """kube-scheduler's part: each replacement bound where the move that caused it says."""
    moves = {m["workload"]: m["toNode"] for m in reversed(status(fake, namespace)["moves"])
             if m["outcome"] == "evicted"}
    for pod in rc.pending(fake, namespace):
        rc.bind(fake, namespace, pod["metadata"]["name"], moves[pod["metadata"]["labels"]["app"]])
    rc.watch_once()


def test_rate_limits_hold_per_appgroup_and_cluster_wide(cluster):
    fake = cluster
    rc.deploy(fake, rc.group(), where=rc.SPLIT)
    rc.watch_once()
    sync_crs()
    clock = Clock()
    r = rebalancer(clock, appgroup_per_minute=1)
    r.run_pass()
    settle(fake, "shop")
    report = r.run_pass()  # the first move completed and improved; the next one is due but limited
    assert report.phases == {"shop/app": "Waiting"} and "rate limit: 1 move(s) a minute for this AppGroup" in \
        status(fake)["message"]
    assert fake.count("POST", EVICTION) == 1
    clock.advance(61)
    r.run_pass()
    assert fake.count("POST", EVICTION) == 2

    # cluster-wide: a second AppGroup, the cluster allowing 1 a minute, which shop's move just used
    rc.deploy(fake, rc.group("shop2"), where=rc.SPLIT)
    rc.watch_once()
    sync_crs()
    r.limits = limits(appgroup_per_minute=10, cluster_per_minute=1)
    r.run_pass()
    assert fake.count("POST", EVICTION) == 2
    assert "rate limit: 1 move(s) a minute in the cluster" in status(fake, "shop2")["message"]
    clock.advance(61)
    r.run_pass()
    assert fake.count("POST", EVICTION) == 3
    assert status(fake, "shop2")["moves"][0]["outcome"] == "evicted"


def test_dry_run_reports_the_moves_on_makes_and_evicts_nothing(cluster):
    fake = cluster
    rc.deploy(fake, rc.group(mode="dry-run"), where=rc.SPLIT)
    rc.watch_once()
    sync_crs()
    clock = Clock()
    r = rebalancer(clock)
    expected = assess_appgroup(AppGroup.objects.get(namespace="shop", name="app")).moves
    assert expected
    assert r.run_pass().phases == {"shop/app": "DryRun"}
    r.run_pass()  # level-triggered: the same drift is not reported twice
    assert fake.count("POST", EVICTION) == 0 and len(fake.list("", "v1", "pods", "shop")) == 5
    proposed = [(m["pod"], m["toNode"], m["outcome"]) for m in reversed(status(fake)["moves"])]
    assert proposed == [(m.pod, m.to_node, "dry-run") for m in expected]
    decisions = move_decisions(r)
    assert [(d.pod_name, d.node, d.result["mode"]) for d in decisions] == [(m.pod, m.to_node, "dry-run")
                                                                          for m in expected]
    assert all(d.result["expected_gain"] > 0 and d.result["reason"] for d in decisions)
    # the same AppGroup switched on makes the first of these moves
    AppGroup.objects.filter(namespace="shop", name="app").update(rebalance_mode="on")
    r.run_pass()
    evicted = [m for m in status(fake)["moves"] if m["outcome"] == "evicted"]
    assert [(m["pod"], m["toNode"]) for m in evicted] == [(expected[0].pod, expected[0].to_node)]
