"""Redis restarted and hung under the running extender server (a redis-server of this test's own,
with the persistence flags of the shipped demo manifest, and a PostgreSQL of its own): filter and
prioritize keep answering within the deadline; the decisions queued in Redis before the restart are
still there after it (append-only file); those answered while Redis was away or hung went to
PostgreSQL directly; once drained, every decision answered is stored exactly once — including a
batch that a hung Redis accepted late after the extender had already written it to PostgreSQL.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
import yaml

from apps.scheduler.decisionlog import DECISION_QUEUE_KEY
from tests.support.extender_server import ROOT
from tests.support.outages import decisions, drain, driven_extender, paper_cluster, seeded_stores
from tests.support.processes import wait_for

pytestmark = pytest.mark.slow


def shipped_persistence_flags() -> tuple[str, ...]:
    """redis-server's flags in k8s/overlays/demo/redis.yaml, less the password and the directory."""
    docs = yaml.safe_load_all((ROOT / "k8s" / "overlays" / "demo" / "redis.yaml").read_text())
    deployment = next(d for d in docs if d and d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    flags, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg in ("--requirepass", "--dir"):
            skip = True
        else:
            flags.append(str(arg))
    return tuple(flags)


def test_shipped_redis_keeps_an_append_only_file():
    flags = shipped_persistence_flags()
    assert flags[flags.index("--appendonly") + 1] == "yes"
    assert "redisdata:/data" in Path(ROOT / "docker-compose.yml").read_text()


def test_redis_restart_and_hang_lose_no_decision(fake_kube):
    names = [f"{phase}-{i}" for phase in ("queued", "away", "hung") for i in range(3)]
    nodes, pods = paper_cluster(fake_kube, dict.fromkeys(names, "cartservice"))
    with seeded_stores(redis_args=shipped_persistence_flags()) as (_pg, rs, database), \
            driven_extender(kube_url=fake_kube.url, database=database, redis_url=rs.url, nodes=nodes) as (_, driver):
        queue = redis.Redis(port=rs.port, socket_timeout=2)
        baseline = driver.ask(pods["queued-0"])
        for name in names[1:3]:
            assert driver.ask(pods[name]) == baseline
        wait_for(lambda: queue.llen(DECISION_QUEUE_KEY) == 6, 10, "six decisions queued in Redis")

        # --- Restarted (a clean stop, as a rollout or a node drain does): the queue survives.
        rs.stop()
        for name in names[3:6]:
            assert driver.ask(pods[name]) == baseline  # answered from memory meanwhile
        wait_for(lambda: len(decisions(database, "away-2")) == 2, 10, "decisions written straight to PostgreSQL")
        rs.start()
        queue = redis.Redis(port=rs.port, socket_timeout=2)
        assert queue.llen(DECISION_QUEUE_KEY) == 6, "the queued decisions did not survive the restart"

        # --- Hung (SIGSTOP): answers keep coming in time; the shipper gives up on Redis and writes
        # to PostgreSQL, while its pushes wait in the socket and land once Redis resumes.
        rs.pause()
        try:
            for name in names[6:]:
                assert driver.ask(pods[name]) == baseline
            wait_for(lambda: len(decisions(database, "hung-2")) == 2, 10, "decisions written around the hung Redis")
        finally:
            rs.resume()
        time.sleep(0.5)

        drain(rs.url, database, "queued-0", 2)
        for name in names:
            assert [verb for verb, _, _ in decisions(database, name)] == ["filter", "prioritize"], name
        assert queue.llen(DECISION_QUEUE_KEY) == 0
