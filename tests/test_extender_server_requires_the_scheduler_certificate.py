"""The extender server itself (``run_extender --certfile --keyfile --client-ca``, granian's TLS) speaks
mutual TLS with the certificates of k8s/scheduler/make-certs.sh: kube-scheduler's client certificate
gets answers; a client without a certificate, with a self-signed one or with a certificate from
another CA is refused by the TLS layer (the connection ends without an answer) — before any extender
code runs."""

from __future__ import annotations

import http.client
import ssl
from pathlib import Path

import orjson
import pytest

from tests.support.certs import make_certs, mtls_args, mtls_post
from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, load_testbed

pytestmark = pytest.mark.slow


def call(port: int, certs: Path, client: str, ca: str = "ca") -> tuple[int, dict]:
    pod = k8s_pod("web-1", labels={"app": "frontend"})
    status, _, body = mtls_post(port, certs, "/scheduler/filter",
                                orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["n1402"]}), client=client, ca=ca)
    return status, orjson.loads(body)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    # A self-signed client, and a CA of its own for another client.
    return make_certs(tmp_path_factory.mktemp("certs"), strangers={"stranger": "stranger", "other-ca": "other-ca"})


def test_only_the_schedulers_certificate_gets_an_answer(certs, transactional_db, fake_kube):
    load_testbed()
    with extender_server(kube_url=fake_kube.url, args=mtls_args(certs)) as ext:
        port = ext.port
        status, answer = call(port, certs, "scheduler")
        assert status == 200 and answer["Error"] == "" and answer["NodeNames"] == ["n1402"]
        refused = 0
        for client in ("", "stranger", "other-ca"):
            with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException, OSError)):
                call(port, certs, client)
            refused += 1
        assert refused == 3
        # A client that does not trust the extender's CA refuses the server in turn.
        with pytest.raises(ssl.SSLCertVerificationError):
            call(port, certs, "scheduler", ca="other-ca")
