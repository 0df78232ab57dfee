"""Issue 25's "Done when": an AppGroup in ``rebalanceMode: on`` whose placement was good before a zone
pair degraded (front in A, cart and db in B; then A-B at 40 ms and 3 % loss) is moved back to >= 99 % of
the best plan's score, one eviction at a time, with no PodDisruptionBudget violated and never fewer Ready
pods than a budget allows. Real parts throughout: the extender server (its own process) schedules every
replacement (the demo's scheduler cycle, ``manage.py demo_scheduler``), the cluster watcher's pass
records the placements, the drift computation says what to move; only the Kubernetes API is the fake."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from apps.appgroups.models import AppGroup
from apps.scheduler import selectors
from apps.scheduler.decisionlog import DecisionLog
from apps.scheduler.rebalancer import Limits, Rebalancer, assess_appgroup
from tests.support import rebalance_cluster as rc
from tests.support.extender_server import extender_server

BUDGETS = {"front": 1, "cart": 1}


@pytest.fixture
def cluster(transactional_db, fake_kube):
    fake_kube.run_bound_pods = True
    fake_kube.run_controllers = True
    rc.nodes(fake_kube, links=rc.DEGRADED)
    rc.deploy(fake_kube, rc.group(), where=rc.SPLIT)
    for workload, minimum in BUDGETS.items():
        rc.budget(fake_kube, "shop", workload, min_available=minimum)
    rc.watch_once()
    return fake_kube


@pytest.mark.slow
def test_an_on_appgroup_returns_to_the_best_plan_within_its_budgets(cluster):
    fake = cluster
    group = AppGroup.objects.get(namespace="shop", name="app")
    before = assess_appgroup(group)
    assert before.drift > 0.1 and before.moves
    rebalancer = Rebalancer(assess=assess_appgroup, decisions=DecisionLog(redis_client=selectors.redis_client),
                            limits=Limits(interval=0.0, threshold=0.01, sustain=0.0, appgroup_per_minute=100,
                                          cluster_per_minute=100, ready_timeout=60.0, stop_seconds=600.0))
    lowest = {w: rc.ready_count(fake, "shop", w) for w in BUDGETS}
    phases: list[str] = []
    with extender_server(kube_url=fake.url, env={"NETAWARE_PLAN_BUDGET_MS": "2000"}) as ext:
        for _ in range(16):
            phases.append(rebalancer.run_pass().phases["shop/app"])
            for w in BUDGETS:
                lowest[w] = min(lowest[w], rc.ready_count(fake, "shop", w))
            call_command("demo_scheduler", "--once", api=fake.url, extender=ext.url)
            rc.watch_once()
            if phases[-1] == "Idle" and not rc.pending(fake, "shop"):
                break
    after = assess_appgroup(group)
    evictions = fake.count("POST", r"/eviction$")
    assert phases[-1] == "Idle", phases
    assert evictions >= 1 and "Stopped" not in phases, phases
    assert after.score >= 0.99 * after.best, (after, phases)
    assert after.score > before.score
    assert all(lowest[w] >= minimum for w, minimum in BUDGETS.items()), lowest
    assert len(fake.list("", "v1", "pods", "shop")) == 5 and not rc.pending(fake, "shop")
