"""Two real ``manage.py run_rebalancer`` replicas against the fake Kubernetes API: the one holding the Lease
``netaware-rebalancer`` makes a move; the other, started next to it, evicts and writes nothing while the
Lease is renewed; once the holder is killed (no clean hand-over), the second takes the Lease over and
carries on from the AppGroup's status: it sees the first replica's move settled and makes the next one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings

from apps.appgroups import sync
from tests.support import rebalance_cluster as rc
from tests.support.extender_server import database_url

ROOT = Path(__file__).resolve().parent.parent
EVICTION = r"/eviction$"


def _holder(fake) -> str:
    lease = fake.get("coordination.k8s.io", "v1", "leases", "netaware-rebalancer", "netaware-system") or {}
    return (lease.get("spec") or {}).get("holderIdentity", "")


def _status(fake) -> dict:
    cr = fake.get("netaware.io", "v1alpha1", "appgroups", "app", "shop") or {}
    return (cr.get("status") or {}).get("rebalance") or {}


@pytest.fixture
def cluster(transactional_db, fake_kube):
    fake_kube.run_bound_pods = True
    fake_kube.run_controllers = True
    rc.nodes(fake_kube)
    rc.deploy(fake_kube, rc.group(), where=rc.SPLIT)
    rc.watch_once()
    sync.sync_once()  # the AppGroup's CR: its status carries the rebalancer's state from one leader to the next
    return fake_kube


@pytest.fixture
def replicas(cluster, tmp_path):
    """``start(name)``: a real run_rebalancer process named ``name`` in the Lease; all stopped at the end."""
    started: list[tuple[subprocess.Popen, Path]] = []

    def start(name: str) -> subprocess.Popen:
        log = tmp_path / f"{name}.log"
        env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL,
               "KUBE_API_URL": cluster.url, "KUBE_NAMESPACE": "netaware-system", "POD_NAME": name,
               "DEBUG": "false", "LOG_LEVEL": "INFO", "NETAWARE_REBALANCER_INTERVAL_SECONDS": "0.3",
               "NETAWARE_REBALANCER_SUSTAIN_SECONDS": "0", "NETAWARE_REBALANCER_LEASE_SECONDS": "3",
               "NETAWARE_REBALANCER_APPGROUP_MOVES_PER_MINUTE": "10", "OPENBLAS_NUM_THREADS": "1",
               "PYTHONUNBUFFERED": "1"}  # the test reads the log as it is written
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "manage.py", "run_rebalancer"], cwd=ROOT, env=env,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        started.append((proc, log))
        return proc

    yield start
    for proc, _ in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc, _ in started:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _until(condition: Callable[[], bool], what: str, procs: list[subprocess.Popen], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert all(p.poll() is None for p in procs), f"a replica exited while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.2)


@pytest.mark.slow
def test_a_second_replica_does_nothing_while_the_first_holds_the_lease(cluster, replicas, tmp_path):
    fake = cluster
    first = replicas("replica-a")
    _until(lambda: _holder(fake) == "replica-a" and fake.count("POST", EVICTION) == 1 and "inFlight" in _status(fake),
           "replica-a's first move", [first])
    moved = _status(fake)["inFlight"]
    events = fake.count("POST", r"/events$")

    second = replicas("replica-b")
    _until(lambda: "netaware rebalancer replica-b" in (tmp_path / "replica-b.log").read_text(errors="replace"),
           "replica-b to start", [first, second])
    time.sleep(4.0)  # longer than the Lease: replica-b would have taken an unrenewed one over by now
    assert _holder(fake) == "replica-a"
    assert fake.count("POST", EVICTION) == 1  # nobody moved a second pod: replica-a waits for its replacement
    assert fake.count("POST", r"/events$") == events  # and replica-b reported nothing

    os.killpg(first.pid, signal.SIGKILL)  # replica-a is gone without releasing the Lease
    first.wait()
    (replacement,) = rc.pending(fake, "shop")
    rc.bind(fake, "shop", replacement["metadata"]["name"], moved["toNode"])  # kube-scheduler's part
    rc.watch_once()
    def evicted() -> list[dict]:
        return [m for m in _status(fake).get("moves") or [] if m["outcome"] == "evicted"]

    # (the Eviction is posted before the status is written: wait for both)
    _until(lambda: fake.count("POST", EVICTION) == 2 and len(evicted()) == 2,
           "replica-b to take over and make the next move", [second])
    assert _holder(fake) == "replica-b"
    assert evicted()[1]["pod"] == moved["pod"]  # replica-a's move is kept in the status, newest first
    assert len(rc.pending(fake, "shop")) == 1  # the second move's replacement waits for a scheduler
