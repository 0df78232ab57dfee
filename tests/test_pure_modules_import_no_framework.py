"""Algorithms live in framework-free modules: importing them must not import Django or Celery.

That is what lets the evaluation harness and benchmarks reuse them and keeps their tests in
milliseconds. Each module is imported in a fresh interpreter so nothing else has loaded Django first.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE = [
    "apps.topology.topomath",
    "apps.topology.freshness",
    "apps.topology.documents",
    "apps.topology.snapshot_format",
    "apps.topology.scenario_topology",
    "apps.appgroups.graph",
    "apps.appgroups.toposort",
    "apps.appgroups.overlap",
    "apps.appgroups.documents",
    "apps.probes.scenario",
    "apps.probes.emulator",
    "apps.probes.agent",
    "apps.probes.agent_auth",
    "apps.probes.fanout",
    "apps.probes.usage",
    "apps.traffic.adapters",
    "apps.traffic.edges",
    "apps.traffic.learning",
    "apps.demo.mesh",
    "apps.scheduler.scoring.engine",
    "apps.scheduler.scoring.default_plugins",
    "apps.scheduler.evaluation",
    "apps.scheduler.evaluation.drift",
    "apps.scheduler.evaluation.replay",
    "netaware_core.yamlsafe",
    "netaware_core.fielderrors",
    "netaware_core.crdschema",
]


@pytest.mark.parametrize("module", PURE)
def test_module_imports_without_django(module):
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            "bad = sorted(m for m in ('django', 'celery', 'rest_framework') if m in sys.modules); "
            "print(','.join(bad))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"{module} imports {result.stdout.strip()}"
