"""The extender's mutual-TLS certificates, made by the script the deployment uses (k8s/scheduler/make-certs.sh)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
# The name kube-scheduler verifies the extender's certificate against.
SERVICE = "netaware-extender.netaware-system.svc"


def make_certs(out: Path, *, strangers: dict[str, str]) -> Path:
    """The CA, extender and scheduler certificates in ``out``, plus, per ``file: common name`` in
    ``strangers``, a self-signed clientAuth certificate ``file.crt``/``file.key`` the extender must refuse."""
    assert shutil.which("openssl"), "openssl makes the certificates (Debian's openssl package)"
    subprocess.run(["bash", str(ROOT / "k8s" / "scheduler" / "make-certs.sh"), str(out), "netaware-system"],
                   check=True, capture_output=True, text=True, timeout=120)
    for name, common_name in strangers.items():
        subprocess.run(["openssl", "req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048", "-days", "1",
                        "-subj", f"/CN={common_name}", "-keyout", str(out / f"{name}.key"),
                        "-out", str(out / f"{name}.crt"), "-addext", "extendedKeyUsage=clientAuth"],
                       check=True, capture_output=True, timeout=120)
    return out
