"""The extender server itself (``run_extender --certfile --keyfile --client-ca``, granian's TLS) speaks
mutual TLS with the certificates of k8s/scheduler/make-certs.sh: kube-scheduler's client certificate
gets answers; a client without a certificate, with a self-signed one or with a certificate from
another CA is refused by the TLS layer (the connection ends without an answer) — before any extender
code runs."""

from __future__ import annotations

import http.client
import socket
import ssl
from pathlib import Path

import orjson
import pytest

from tests.support.certs import SERVICE, make_certs
from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, load_testbed

pytestmark = pytest.mark.slow


class _Connection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1, verifying the server as the extender Service's name (as kube-scheduler does)."""

    def connect(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=SERVICE)


def call(port: int, ca: Path, cert: tuple[Path, Path] | None) -> tuple[int, dict]:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    conn = _Connection(SERVICE, port, timeout=10, context=context)
    pod = k8s_pod("web-1", labels={"app": "frontend"})
    conn.request("POST", "/scheduler/filter", body=orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["n1402"]}),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, orjson.loads(response.read())


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    # A self-signed client, and a CA of its own for another client.
    return make_certs(tmp_path_factory.mktemp("certs"), strangers={"stranger": "stranger", "other-ca": "other-ca"})


def test_only_the_schedulers_certificate_gets_an_answer(certs, transactional_db, fake_kube):
    load_testbed()
    args = ["--certfile", str(certs / "extender.crt"), "--keyfile", str(certs / "extender.key"),
            "--client-ca", str(certs / "ca.crt")]
    with extender_server(kube_url=fake_kube.url, args=args) as ext:
        port = int(ext.url.split(":")[2].split("/")[0])
        status, answer = call(port, certs / "ca.crt", (certs / "scheduler.crt", certs / "scheduler.key"))
        assert status == 200 and answer["Error"] == "" and answer["NodeNames"] == ["n1402"]
        refused = 0
        for cert in (None, (certs / "stranger.crt", certs / "stranger.key"),
                     (certs / "other-ca.crt", certs / "other-ca.key")):
            with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException, OSError)):
                call(port, certs / "ca.crt", cert)
            refused += 1
        assert refused == 3
        # A client that does not trust the extender's CA refuses the server in turn.
        with pytest.raises(ssl.SSLCertVerificationError):
            call(port, certs / "other-ca.crt", (certs / "scheduler.crt", certs / "scheduler.key"))
