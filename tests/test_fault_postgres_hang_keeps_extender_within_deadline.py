"""PostgreSQL hung for real — every process of a cluster of this test's own SIGSTOPped, so open
connections get no answer and new ones are accepted by the kernel and then wait — under the running
extender server: filter, prioritize and bind answer within their deadlines, /readyz and /metrics
answer at once, the decision log notes that the database stopped answering, and once the server resumes the decisions and the placement answered during the
hang are stored exactly once.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.support.outages import DEADLINE, decisions, drain, driven_extender, paper_cluster, seeded_stores
from tests.support.processes import wait_for

pytestmark = pytest.mark.slow


def timed_get(ext, path: str) -> tuple[int, float]:
    started = time.monotonic()
    status, _ = ext.get(path)
    return status, time.monotonic() - started


def test_hung_postgres(fake_kube):
    names = ["before-0", *(f"hung-{i}" for i in range(4))]
    nodes, pods = paper_cluster(fake_kube, dict.fromkeys([*names, "bound-0"], "cartservice"))
    with seeded_stores() as (pg, rs, database), driven_extender(
            kube_url=fake_kube.url, database=database, redis_url=rs.url, nodes=nodes,
            NETAWARE_STATE_MAX_AGE_SECONDS="0.3", NETAWARE_STATE_HANG_SECONDS="0.5") as (ext, driver):
        baseline = driver.ask(pods["before-0"])

        pg.pause()
        try:
            time.sleep(1.0)  # the loader's next rounds now wait on the hung server
            for name in names[1:]:
                assert driver.ask(pods[name]) == baseline  # Driver asserts each answer came in time
                time.sleep(0.3)
            assert driver.bind(pods["bound-0"], "n1412") == ""  # within the bind deadline
            for path in ("/readyz", "/metrics"):
                status, took = timed_get(ext, path)
                assert status == 200 and took < DEADLINE, (path, status, took)
        finally:
            pg.resume()

        stored = drain(rs.url, database, names[-1], 2)
        # The loader waited on the hung server without an error: the decision log still says so.
        assert all(any(n.startswith("database: no answer for") for n in r.get("stale", ())) for _, r, _ in stored), stored
        assert [verb for verb, _, _ in stored] == ["filter", "prioritize"]
        for name in names:
            assert [verb for verb, _, _ in decisions(database, name)] == ["filter", "prioritize"], name
        assert "stale" not in decisions(database, "before-0")[0][1]  # (healthy before the hang)

        def placements() -> int:
            with psycopg.connect(database) as conn:
                return conn.execute("SELECT count(*) FROM appgroups_placement WHERE pod_name = 'bound-0'").fetchone()[0]

        wait_for(placements, 15, "the placement of the bind answered during the hang")
        time.sleep(1.0)
        assert placements() == 1
