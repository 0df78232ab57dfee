"""``manage.py run_rebalancer`` as a real process against the fake Kubernetes API: while another replica
holds and renews the Lease ``netaware-rebalancer``, it evicts nothing and writes nothing; once that
replica stops renewing, it takes the Lease over and makes the move."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

from tests.support import rebalance_cluster as rc
from tests.support.extender_server import database_url

ROOT = Path(__file__).resolve().parent.parent
LEASES = "/apis/coordination.k8s.io/v1/namespaces/netaware-system/leases"


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _hold(fake, stop: threading.Event) -> None:
    """Replica A: holds the Lease and renews it every half second until ``stop``."""
    fake.create("coordination.k8s.io", "v1", "leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "netaware-rebalancer", "namespace": "netaware-system"},
        "spec": {"holderIdentity": "replica-a", "leaseDurationSeconds": 3, "acquireTime": _stamp(),
                 "renewTime": _stamp(), "leaseTransitions": 0}}, namespace="netaware-system")
    while not stop.wait(0.5):
        fake.merge("coordination.k8s.io", "v1", "leases", "netaware-rebalancer", {"spec": {"renewTime": _stamp()}},
                   "netaware-system")


def _holder(fake) -> str:
    lease = fake.get("coordination.k8s.io", "v1", "leases", "netaware-rebalancer", "netaware-system") or {}
    return (lease.get("spec") or {}).get("holderIdentity", "")


@pytest.fixture
def cluster(transactional_db, fake_kube):
    fake_kube.run_bound_pods = True
    fake_kube.run_controllers = True
    rc.nodes(fake_kube)
    rc.deploy(fake_kube, rc.group(), where=rc.SPLIT)
    rc.watch_once()
    return fake_kube


@pytest.mark.slow
def test_a_second_replica_does_nothing_while_the_first_holds_the_lease(cluster, tmp_path):
    fake = cluster
    stop = threading.Event()
    holder = threading.Thread(target=_hold, args=(fake, stop), daemon=True)
    holder.start()
    log = tmp_path / "rebalancer.log"
    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL, "KUBE_API_URL": fake.url,
           "KUBE_NAMESPACE": "netaware-system", "POD_NAME": "replica-b", "DEBUG": "false", "LOG_LEVEL": "INFO",
           "NETAWARE_REBALANCER_INTERVAL_SECONDS": "0.3", "NETAWARE_REBALANCER_SUSTAIN_SECONDS": "0",
           "NETAWARE_REBALANCER_LEASE_SECONDS": "3", "OPENBLAS_NUM_THREADS": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "manage.py", "run_rebalancer"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while fake.count("GET", f"{LEASES}/netaware-rebalancer") < 5:  # it is up and asking for the Lease
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(4.0)  # longer than the Lease: it would have taken over an unrenewed one
        assert _holder(fake) == "replica-a"
        assert fake.count("POST", r"/eviction$") == 0
        assert fake.count("PATCH", r"/appgroups/") == 0 and fake.count("POST", r"/events$") == 0
        stop.set()  # replica A is gone: B takes the Lease over and acts
        holder.join()
        deadline = time.monotonic() + 60
        while fake.count("POST", r"/eviction$") == 0:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        assert _holder(fake) == "replica-b"
        assert len(rc.pending(fake, "shop")) == 1  # one move: its replacement waits for a scheduler
    finally:
        stop.set()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
