"""The extender server keeps answering filter and prioritize from memory, within its deadline, while
its PostgreSQL is stopped or hung, its Redis is stopped and its Kubernetes watch is broken or
expired — real servers of this test's own (a PostgreSQL cluster and a redis-server on free ports)
and the demo cluster API, stopped and restarted for real. The decision log says what is stale;
nothing the extender decided is lost once the stores return.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.support.outages import OURS, decisions, drain, driven_extender, paper_cluster, seeded_stores

pytestmark = pytest.mark.slow



@pytest.fixture
def stores():
    with seeded_stores() as running:
        yield running


def test_outages_of_postgres_redis_and_the_watch(stores, fake_kube):
    pg, rs, database = stores
    nodes, pods = paper_cluster(fake_kube, {"cart-0": "cartservice", "redis-0": "redis-cart", "cart-1": "cartservice",
                                            "front-0": "frontend", "front-1": "frontend"})
    with driven_extender(kube_url=fake_kube.url, database=database, redis_url=rs.url, nodes=nodes,
                         NETAWARE_STATE_MAX_AGE_SECONDS="0.3") as (ext, driver):
        assert driver.bind(pods["redis-0"], "n1412") == ""
        baseline = driver.ask(pods["cart-0"])
        assert baseline[1]["n1412"] == 8  # the placed dependency counts (same node 0.8)

        # --- PostgreSQL stopped: same answers from memory; binds still work, placements wait.
        pg.stop()
        time.sleep(1.0)  # the loader notices
        assert driver.ask(pods["cart-0"]) == baseline
        assert driver.bind(pods["front-0"], "n1402") == ""
        status, body = ext.get("/readyz")
        assert status == 200, body  # still in service: it answers from memory
        pg.start()
        time.sleep(1.5)
        stored = drain(rs.url, database, "cart-0", 4)
        assert [v for v, _, _ in stored] == ["filter", "prioritize", "filter", "prioritize"]
        stale = [r.get("stale", []) for _, r, _ in stored[2:]]
        assert all(any("database unavailable" in note for note in notes) for notes in stale), stale
        with psycopg.connect(database) as conn:  # the bind answered during the outage was recorded after it
            deadline = time.monotonic() + 60  # the placement writer retries every second; no promised bound
            while not conn.execute("SELECT 1 FROM appgroups_placement WHERE pod_name = 'front-0'").fetchone():
                assert time.monotonic() < deadline, "the placement of a bind answered during the outage was lost"
                time.sleep(0.2)

        # --- PostgreSQL hung (a lock the loader's query waits on): answers keep coming in time.
        with psycopg.connect(database) as locker:
            locker.execute("BEGIN")
            locker.execute("LOCK TABLE appgroups_appgroup IN ACCESS EXCLUSIVE MODE")
            for _ in range(5):
                assert driver.ask(pods["cart-0"]) == driver.ask(pods["cart-0"])
                time.sleep(0.3)
            locker.execute("ROLLBACK")

        # --- Redis stopped: answers unchanged; the decisions go to PostgreSQL directly.
        current = driver.ask(pods["cart-0"])  # front-0, bound above, is a dependent of cart now
        rs.stop()
        assert driver.ask(pods["cart-1"]) == current
        time.sleep(1.0)
        assert [v for v, _, _ in decisions(database, "cart-1")] == ["filter", "prioritize"]
        rs.start()

        # --- The watch broken: the API away, then back; a 410 forces a relist.
        fake_kube.down()
        time.sleep(0.5)
        assert driver.ask(pods["cart-0"]) == current
        assert "binding default/front-1 to n1403" in driver.bind(pods["front-1"], "n1403")
        # A pod created while the watch was away, then compacted away: resuming answers 410.
        late = fake_kube.add_pod("default", "redis-9", labels={"app": "redis-cart"}, scheduler_name=OURS)
        fake_kube.compact()
        fake_kube.up()
        deadline = time.monotonic() + 60  # the informer's back-off (at most 30 s) then the re-list
        while pod_lists(fake_kube) < 2:  # the start-up list, then the re-list after the 410
            assert time.monotonic() < deadline, "the informer did not re-list after the broken, expired watch"
            time.sleep(0.2)
        time.sleep(0.3)
        gets = fake_kube.count("GET", r"/pods/redis-9$")
        assert driver.bind(late, "n1404") == ""
        assert fake_kube.count("GET", r"/pods/redis-9$") == gets  # known from the re-list, not read on demand
        stored = drain(rs.url, database, "cart-0", 6)
        during = stored[-2:]  # the filter/prioritize answered while the API was away
        assert all(any(n.startswith("pods:") or n.startswith("nodes:") for n in r.get("stale", []))
                   for _, r, _ in during), during


def pod_lists(fake) -> int:
    """Full lists of pods (not watches) the API has answered."""
    return sum(1 for r in list(fake.requests)
               if r.method == "GET" and r.path == "/api/v1/pods" and "watch" not in (r.query or {}))
