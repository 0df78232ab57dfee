"""The certificates of k8s/scheduler/make-certs.sh (used by the demo overlay and docs/deploy.md) do
what the extender's mutual TLS needs, proven with real TLS handshakes over loopback: a server with
the extender's certificate that requires client certificates from the CA (as ``run_extender
--client-ca`` does) accepts kube-scheduler's certificate and refuses a client without a
certificate, with a self-signed one or with the extender's own serving certificate; and the
scheduler side refuses a server whose certificate does not name the extender Service."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from tests.support.certs import SERVICE, make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    # A stranger: self-signed, clientAuth, same CN as the scheduler.
    return make_certs(tmp_path_factory.mktemp("certs"), strangers={"stranger": "netaware-scheduler"})


class MTLSServer:
    """Accepts one connection at a time, records the handshake outcome and the client's CN."""

    def __init__(self, certs: Path, *, cert: str = "extender"):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.context.load_cert_chain(certs / f"{cert}.crt", certs / f"{cert}.key")
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.context.load_verify_locations(certs / "ca.crt")
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.results: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    with self.context.wrap_socket(conn, server_side=True) as tls:
                        subject = dict(item[0] for item in tls.getpeercert()["subject"])
                        self.results.append(f"ok:{subject['commonName']}")
                        # Read the request before answering: closing with unread data sends a TCP
                        # reset that can destroy the answer before the client reads it.
                        tls.recv(4096)
                        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                except (ssl.SSLError, OSError) as exc:
                    self.results.append(f"refused:{type(exc).__name__}")

    def close(self) -> None:
        self.sock.close()


def client_context(certs: Path, cert: str | None) -> ssl.SSLContext:
    """What kube-scheduler's tlsConfig does: trust caFile, present certFile/keyFile."""
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    if cert:
        context.load_cert_chain(certs / f"{cert}.crt", certs / f"{cert}.key")
    return context


def connect(server: MTLSServer, context: ssl.SSLContext, server_name: str = SERVICE) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=server_name) as tls:
        tls.sendall(b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        answer = b""
        while chunk := tls.recv(1024):
            answer += chunk
        return answer


def test_the_scheduler_certificate_is_accepted(certs):
    server = MTLSServer(certs)
    try:
        assert connect(server, client_context(certs, "scheduler")).startswith(b"HTTP/1.1 200")
        assert server.results == ["ok:netaware-scheduler"]
    finally:
        server.close()


@pytest.mark.parametrize("cert", [None, "stranger", "extender"], ids=["no-certificate", "self-signed", "server-only"])
def test_other_clients_are_refused(certs, cert):
    server = MTLSServer(certs)
    try:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            # TLS 1.3 reports the server's refusal on the first read, not in the handshake.
            assert connect(server, client_context(certs, cert)) == b""
            raise ConnectionError("server closed the connection")
        server.thread.join(0.5)
        assert server.results and server.results[0].startswith("refused"), server.results
    finally:
        server.close()


def test_the_scheduler_refuses_a_server_with_the_wrong_name_or_issuer(certs):
    server = MTLSServer(certs)
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            connect(server, client_context(certs, "scheduler"), server_name="netaware-web.netaware-system.svc")
    finally:
        server.close()
    impostor = MTLSServer(certs, cert="scheduler")  # a certificate from the CA, but for clients only
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            connect(impostor, client_context(certs, "scheduler"))
    finally:
        impostor.close()


def test_certificate_properties(certs):
    text = subprocess.run(["openssl", "x509", "-in", str(certs / "extender.crt"), "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout
    assert f"DNS:{SERVICE}" in text and f"DNS:{SERVICE}.cluster.local" in text
    assert "TLS Web Server Authentication" in text and "TLS Web Client Authentication" not in text
    scheduler = subprocess.run(["openssl", "x509", "-in", str(certs / "scheduler.crt"), "-noout", "-text"],
                               capture_output=True, text=True, check=True).stdout
    assert "TLS Web Client Authentication" in scheduler and "TLS Web Server Authentication" not in scheduler
    for key in ("ca.key", "extender.key", "scheduler.key"):
        assert (certs / key).stat().st_mode & 0o077 == 0, f"{key} is readable by others"
