"""The extender server against stores of a test's own (a PostgreSQL cluster and a redis-server on
free ports, seeded with the paper testbed and Online Boutique) that the test stops, restarts or
hangs, and a kube-scheduler-like driver that times every answer."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Mapping

import orjson
import psycopg

from apps.demo.rollout import Endpoint
from tests.support.extender_server import ROOT, ExtenderServer, extender_server
from tests.support.extender_wire import PAPER_TESTBED, kube_scheduler_http_timeout
from tests.support.services import PostgresServer, RedisServer

OURS = "netaware-scheduler"
# What the extender promises kube-scheduler for every answer, bind included (its deadline is below it):
# the shipped configuration's httpTimeout. A tighter bound would time the machine, not the product.
DEADLINE = kube_scheduler_http_timeout()

SEED = textwrap.dedent(f"""
    import yaml
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    from apps.appgroups import documents
    from apps.appgroups.services import save_appgroup
    from apps.probes.scenario import load_scenario
    from apps.topology.scenario_topology import topology_from_scenario
    from apps.topology.services import store_topology
    store_topology(topology=topology_from_scenario(load_scenario({PAPER_TESTBED!r})), source="imported")
    doc = yaml.safe_load(open("scenarios/online-boutique-appgroup.yaml").read())
    save_appgroup(spec=documents.spec_from_document(doc), origin="netaware")
""")


def store_env(database: str, redis_url: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database, "REDIS_URL": redis_url}


@contextlib.contextmanager
def seeded_stores(*, redis_args: tuple[str, ...] | None = None) -> Iterator[tuple[PostgresServer, RedisServer, str]]:
    """(PostgreSQL, Redis, database URL) of this test alone, migrated and seeded."""
    pg = PostgresServer().init().start()
    rs = (RedisServer(args=redis_args) if redis_args is not None else RedisServer()).start()
    try:
        database = pg.create_database("faults")
        subprocess.run([sys.executable, "manage.py", "shell", "-c", SEED], cwd=ROOT, check=True,
                       env={**store_env(database, rs.url), "DJANGO_SETTINGS_MODULE": "netaware_site.settings"},
                       capture_output=True)
        yield pg, rs, database
    finally:
        rs.destroy()
        pg.destroy()


def paper_cluster(fake_kube, pods: Mapping[str, str]) -> tuple[list[str], dict[str, dict]]:  # type: ignore[no-untyped-def]
    """The paper testbed's nodes and ``pods`` (name -> app label, ours to schedule) in the fake
    Kubernetes API; returns the node names and the pod objects."""
    from apps.probes.scenario import load_scenario

    scenario = load_scenario(PAPER_TESTBED)
    for node in scenario.nodes:
        fake_kube.add_node(node.name, zone=node.zone, region=node.region)
    return list(scenario.node_names), {
        name: fake_kube.add_pod("default", name, labels={"app": app}, scheduler_name=OURS,
                                requests={"cpu": "100m", "memory": "64Mi"}) for name, app in pods.items()}


@contextlib.contextmanager
def driven_extender(*, kube_url: str, database: str, redis_url: str, nodes: list[str],
                    **env: str) -> Iterator[tuple[ExtenderServer, Driver]]:
    """The extender server on these stores (loader checks every 0.3 s; ``env``: more settings) and a
    driver sending it ``nodes`` as candidates."""
    with extender_server(kube_url=kube_url, env={**store_env(database, redis_url),
                                                 "NETAWARE_STATE_DB_CHECK_SECONDS": "0.3", **env}) as ext:
        yield ext, Driver(ext.url, nodes)


class Driver:
    """filter + prioritize (+ bind) as kube-scheduler sends them; every answer must come in time."""

    def __init__(self, url: str, nodes: list[str]) -> None:
        self.ext = Endpoint(url, timeout=DEADLINE + 5.0)  # a late answer fails the assertion, not the socket
        self.nodes = nodes

    def ask(self, pod: dict) -> tuple[list[str], dict[str, int]]:
        args = {"Pod": pod, "Nodes": None, "NodeNames": self.nodes}
        started = time.monotonic()
        status, filtered, _ = self.ext.request("POST", "/filter", args)
        took = time.monotonic() - started
        status2, scores, _ = self.ext.request("POST", "/prioritize", args)
        took2 = time.monotonic() - started - took
        assert status == status2 == 200
        assert took < DEADLINE and took2 < DEADLINE, f"filter took {took:.2f}s, prioritize {took2:.2f}s"
        assert filtered["Error"] == ""
        return filtered["NodeNames"], {e["Host"]: e["Score"] for e in scores}

    def bind(self, pod: dict, node: str) -> str:
        started = time.monotonic()
        status, answer, _ = self.ext.request("POST", "/bind", {
            "PodName": pod["metadata"]["name"], "PodNamespace": pod["metadata"]["namespace"],
            "PodUID": pod["metadata"]["uid"], "Node": node})
        assert status == 200 and time.monotonic() - started < DEADLINE
        return answer["Error"]


def decisions(database: str, pod: str) -> list[tuple[str, dict, str]]:
    with psycopg.connect(database) as conn:
        rows = conn.execute("SELECT verb, result::text, error FROM scheduler_decision WHERE pod_name = %s "
                            "ORDER BY id", [pod]).fetchall()
    return [(verb, orjson.loads(result), error) for verb, result, error in rows]


def drain(redis_url: str, database: str, pod: str, count: int) -> list[tuple[str, dict, str]]:
    """Move the extender's queued decisions into PostgreSQL (the Celery task's job) until ``count``
    decisions of ``pod`` are stored."""
    deadline = time.monotonic() + 20
    while True:
        subprocess.run([sys.executable, "manage.py", "shell", "-c",
                        "from apps.scheduler import services; services.drain_decisions()"],
                       cwd=ROOT, check=True, env=store_env(database, redis_url), capture_output=True)
        found = decisions(database, pod)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.5)
