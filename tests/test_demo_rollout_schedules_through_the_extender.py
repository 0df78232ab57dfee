"""The demo: an AppGroup's pods scheduled into the demo cluster through the real extender server by
the rollout driver (``manage.py rollout``), with a network score well above kube-scheduler's default
profile for the same arrival order; the demo cluster answers kubectl like an API server."""

from __future__ import annotations

import io
import json
import re
import threading
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from apps.demo.cluster import node_objects
from apps.probes.scenario import load_scenario
from apps.topology import services as topology_services
from apps.topology.scenario_topology import topology_from_scenario
from tests.support.extender_server import extender_server
from tests.support.extender_wire import PAPER_TESTBED, store_topology
from tests.support.kubectl import kubectl

pytestmark = pytest.mark.slow


def test_rollout_places_the_appgroup_network_aware(transactional_db, fake_kube):
    scenario = load_scenario(PAPER_TESTBED)
    store_topology(topology_from_scenario(scenario))
    fake_kube.seed(node_objects(scenario))
    with extender_server(kube_url=fake_kube.url) as ext:
        out = io.StringIO()
        call_command("rollout", api=fake_kube.url, extender=ext.url, extender_health=ext.health,
                     scenario=PAPER_TESTBED, replicas=2, seed=3, stdout=out)
        text = out.getvalue()
        assert "scheduled 22/22 pods of default/online-boutique" in text, text
        ours, theirs = map(float, re.search(r"netaware ([\d.]+) vs kube-scheduler's default profile ([\d.]+)",
                                            text).groups())
        assert ours > theirs + 20, text
        pods = fake_kube.list("", "v1", "pods", namespace="default")
        assert len(pods) == 22 and all((p.get("spec") or {}).get("nodeName") for p in pods)

        # Repeatable: the command replaces its pods and schedules them again.
        again = io.StringIO()
        call_command("rollout", api=fake_kube.url, extender=ext.url, extender_health=ext.health,
                     scenario=PAPER_TESTBED, seed=4, stdout=again)
        assert "scheduled 11/11 pods" in again.getvalue()
        assert len(fake_kube.list("", "v1", "pods", namespace="default")) == 11

    listing = kubectl("--server", fake_kube.url, "get", "nodes,pods", "-o", "wide", timeout=60)
    assert listing.returncode == 0, listing.stderr
    assert "n1402" in listing.stdout and "frontend-0" in listing.stdout
    row = next(line for line in listing.stdout.splitlines() if "frontend-0" in line)
    assert re.search(r"\bn14\d\d\b", row), row  # the NODE column shows where it was bound


def test_the_first_rollout_waits_until_every_node_is_measured_in_a_fresh_topology(transactional_db, fake_kube):
    """On a fresh start the nodes are known before any probe window is stored: a rebuild then stores
    every node with no measurement, the extender is ready with it, and a rollout would score without
    the network. ``--wait-for-fresh-topology`` (scripts/up.sh's first demo) waits for the measurement."""
    scenario = load_scenario(PAPER_TESTBED)
    fake_kube.seed(node_objects(scenario))
    call_command("load_nodes", scenario=str(PAPER_TESTBED), stdout=io.StringIO())
    unmeasured = topology_services.rebuild_topology()
    assert unmeasured is not None and unmeasured.stale and unmeasured.measured_pairs == 0
    args = {"api": fake_kube.url, "scenario": PAPER_TESTBED, "seed": 5}
    with extender_server(kube_url=fake_kube.url) as ext:
        status, raw = ext.get("/readyz")
        body = json.loads(raw)
        assert status == 200 and body["nodes"] == body["topology_nodes"] == len(scenario.nodes), body
        assert body["measured_nodes"] == 0 and "no measurement" in body["topology_stale"], body
        expected = "no fresh topology of every node after 1s (topology stale: no measurement"
        with pytest.raises(CommandError, match=re.escape(expected)):
            call_command("rollout", extender=ext.url, extender_health=ext.health, wait_for_fresh_topology=1,
                         stdout=io.StringIO(), **args)

        def measurement_arrives() -> None:
            try:
                store_topology(topology_from_scenario(scenario))
            finally:
                connection.close()

        arrival = threading.Timer(3.0, measurement_arrives)
        started = time.monotonic()
        arrival.start()
        try:
            waited = io.StringIO()
            call_command("rollout", extender=ext.url, extender_health=ext.health, wait_for_fresh_topology=60,
                         stdout=waited, **args)
        finally:
            arrival.join()
        assert time.monotonic() - started >= 3.0
        body = json.loads(ext.get("/readyz")[1])
        assert body["measured_nodes"] == len(scenario.nodes) and body["topology_stale"] == "", body
        # What it printed is what a rollout on the fresh topology gives (same seed), not the
        # network-blind placement it would have made a moment earlier.
        again = io.StringIO()
        call_command("rollout", extender=ext.url, extender_health=ext.health, stdout=again, **args)
    figures = [re.search(r"netaware ([\d.]+) vs kube-scheduler's default profile ([\d.]+)", out.getvalue()).groups()
               for out in (waited, again)]
    assert figures[0] == figures[1], (waited.getvalue(), again.getvalue())
    assert float(figures[0][0]) > float(figures[0][1]) + 20, waited.getvalue()


def test_the_fresh_topology_wait_refuses_a_negative_time(transactional_db, fake_kube):
    with pytest.raises(CommandError, match="--wait-for-fresh-topology must be >= 0"):
        call_command("rollout", api=fake_kube.url, wait_for_fresh_topology=-1, stdout=io.StringIO())


def test_rollout_says_what_is_wrong(transactional_db, fake_kube, tmp_path):
    broken = tmp_path / "appgroup.yaml"
    broken.write_text("apiVersion: netaware.io/v1alpha1\nkind: AppGroup\nmetadata: {name: x}\nspec: {workloads: 3}\n")
    with pytest.raises(CommandError, match="workloads"):
        call_command("rollout", api=fake_kube.url, appgroup=str(broken), stdout=io.StringIO())
    with pytest.raises(CommandError, match="no Kubernetes API"):
        call_command("rollout", api="", stdout=io.StringIO())
