"""Two extender replicas with leader election (a coordination.k8s.io Lease on the demo API): only
the holder is ready and binds; when it dies, the other takes over and its very first answers
already count every bind the old leader made (its informer watched all along)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from apps.demo.rollout import Endpoint
from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, load_testbed, save_boutique

pytestmark = pytest.mark.slow

OURS = "netaware-scheduler"
ELECTION = {"NETAWARE_EXTENDER_LEADER_ELECTION": "true", "NETAWARE_EXTENDER_LEASE_SECONDS": "3"}


def wait_for(predicate, what: str, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def answers(server) -> bool:  # type: ignore[no-untyped-def]
    try:
        server.get("/healthz")
    except OSError:
        return False
    return True


def test_one_leader_answers_and_the_standby_takes_over_with_every_bind(transactional_db, fake_kube):
    nodes = load_testbed()
    save_boutique("default")
    from apps.topology.models import Node

    for node in Node.objects.all():
        fake_kube.add_node(node.name, zone=node.zone, region=node.region)
    redis_pod = fake_kube.add_pod("default", "redis-cart-0", labels={"app": "redis-cart"}, scheduler_name=OURS)
    with extender_server(kube_url=fake_kube.url, env={**ELECTION, "POD_NAME": "replica-a"}) as a, \
            extender_server(kube_url=fake_kube.url, env={**ELECTION, "POD_NAME": "replica-b"}, wait=False) as b:
        a.wait_ready()
        wait_for(lambda: answers(b), "the second replica's health port did not come up", timeout=60)
        wait_for(lambda: b"not the leader" in b.get("/readyz")[1], "the second replica did not sync")
        assert b.get("/readyz")[0] == 503
        lease = fake_kube.get("coordination.k8s.io", "v1", "leases", "netaware-extender", namespace="netaware-system")
        assert lease["spec"]["holderIdentity"] == "replica-a"
        bind = {"PodName": "redis-cart-0", "PodNamespace": "default", "PodUID": redis_pod["metadata"]["uid"],
                "Node": "n1412"}
        refused = Endpoint(b.url).request("POST", "/bind", bind)[1]["Error"]
        assert "not the leader" in refused
        assert Endpoint(a.url).request("POST", "/bind", bind)[1]["Error"] == ""

        os.killpg(a.proc.pid, signal.SIGKILL)  # the leader dies without releasing the lease
        wait_for(lambda: b.get("/readyz")[0] == 200, "the standby did not take over")
        cart = k8s_pod("cartservice-1", namespace="default", labels={"app": "cartservice"})
        scores = {e["Host"]: e["Score"]
                  for e in Endpoint(b.url).request("POST", "/prioritize",
                                                   {"Pod": cart, "Nodes": None, "NodeNames": nodes})[1]}
        assert scores["n1412"] == 8  # next to the redis pod the old leader bound
        lease = fake_kube.get("coordination.k8s.io", "v1", "leases", "netaware-extender", namespace="netaware-system")
        assert lease["spec"]["holderIdentity"] == "replica-b" and lease["spec"]["leaseTransitions"] == 1
