"""CLI: load_nodes --scenario, import_topology FILE (errors name the field), rebuild_topology."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.topology.models import Node, TopologySnapshot

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper-testbed.yaml"

pytestmark = pytest.mark.django_db


def test_load_nodes_and_import_and_rebuild(tmp_path):
    out = StringIO()
    call_command("load_nodes", "--scenario", str(SCENARIO), stdout=out)
    assert "19 nodes" in out.getvalue() and Node.objects.count() == 19
    good = tmp_path / "topo.yaml"
    good.write_text("kind: NetworkTopology\nspec:\n  latency:\n    n1402: {n1407: 1.0}\n")
    call_command("import_topology", str(good), stdout=out)
    assert TopologySnapshot.objects.get().source == "imported"
    call_command("rebuild_topology", stdout=out)  # no samples: the import stays current
    assert TopologySnapshot.objects.count() == 1


def test_import_command_names_the_bad_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec:\n  bandwidth:\n    n1: {n2: -5}\n")
    with pytest.raises(CommandError, match=r"spec\.bandwidth\.n1\.n2: Invalid value: -5: should be greater than or equal to 0"):
        call_command("import_topology", str(bad))
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_topology", str(tmp_path / "missing.yaml"))
    assert TopologySnapshot.objects.count() == 0


def test_load_nodes_rejects_a_bad_scenario(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("name: x\nregions: 5\n")
    with pytest.raises(CommandError, match="regions"):
        call_command("load_nodes", "--scenario", str(bad))
