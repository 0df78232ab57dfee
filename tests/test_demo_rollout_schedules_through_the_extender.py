"""The demo: an AppGroup's pods scheduled into the demo cluster through the real extender server by
the rollout driver (``manage.py rollout``), with a network score well above kube-scheduler's default
profile for the same arrival order; the demo cluster answers kubectl like an API server."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.demo.cluster import node_objects
from apps.probes.scenario import load_scenario
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


def test_rollout_says_what_is_wrong(transactional_db, fake_kube, tmp_path):
    broken = tmp_path / "appgroup.yaml"
    broken.write_text("apiVersion: netaware.io/v1alpha1\nkind: AppGroup\nmetadata: {name: x}\nspec: {workloads: 3}\n")
    with pytest.raises(CommandError, match="workloads"):
        call_command("rollout", api=fake_kube.url, appgroup=str(broken), stdout=io.StringIO())
    with pytest.raises(CommandError, match="no Kubernetes API"):
        call_command("rollout", api="", stdout=io.StringIO())
