"""The extender's mutual-TLS certificates, made by the script the deployment uses (k8s/scheduler/make-certs.sh)."""

from __future__ import annotations

import http.client
import shutil
import socket
import ssl
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


class _ServiceConnection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1, verifying the server as the extender Service's name (as kube-scheduler does)."""

    def connect(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=SERVICE)


def mtls_post(port: int, certs: Path, path: str, body: bytes, *, client: str = "scheduler",
              ca: str = "ca", timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """POST ``body`` to the extender on 127.0.0.1:``port`` over mutual TLS with ``certs/<client>.crt``
    (kube-scheduler's by default; ``client=""``: no certificate), trusting ``certs/<ca>.crt``.
    Returns (status, headers, body)."""
    context = ssl.create_default_context(cafile=str(certs / f"{ca}.crt"))
    if client:
        context.load_cert_chain(str(certs / f"{client}.crt"), str(certs / f"{client}.key"))
    conn = _ServiceConnection(SERVICE, port, timeout=timeout, context=context)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def mtls_args(certs: Path) -> list[str]:
    """``run_extender`` flags for mutual TLS with the certificates in ``certs``."""
    return ["--certfile", str(certs / "extender.crt"), "--keyfile", str(certs / "extender.key"),
            "--client-ca", str(certs / "ca.crt")]
