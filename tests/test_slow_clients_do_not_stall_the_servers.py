"""Slow clients (slowloris: headers a byte at a time, a declared body that never comes, idle
connections) hold no request thread: with 100 of them open, the extender still answers its verbs and
/readyz, and the web server (``manage.py run_web``, as scripts/up.sh starts it) /healthz and its
pages, within kube-scheduler's httpTimeout (a bound the product promises; how fast they answer is a
benchmark's business, not an assertion's)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import time

import orjson
import pytest

from tests.support.extender_server import extender_server
from tests.support.extender_wire import k8s_pod, kube_scheduler_http_timeout, load_testbed
from tests.support.web_server import web_server

pytestmark = pytest.mark.slow

SLOW_CLIENTS = 100


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    return host, int(port)


@contextlib.contextmanager
def slow_clients(url: str, kind: str, count: int = SLOW_CLIENTS):
    """``count`` connections that started a request and then stall: ``headers`` sent part of the
    request line, ``body`` sent full headers declaring 100,000 bytes and a few of them, ``idle`` nothing."""
    host, port = _host_port(url)
    socks = []
    try:
        for _ in range(count):
            sock = socket.create_connection((host, port), timeout=5)
            if kind == "headers":
                sock.sendall(b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nX-a: ")
            elif kind == "headers-drip":  # what gunicorn's threads waited on: one byte, then nothing
                sock.sendall(b"G")
            elif kind == "body":
                sock.sendall(b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100000\r\n\r\n{\"Pod\":")
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def _post(url: str, path: str, body: bytes, timeout: float) -> tuple[int, bytes, float]:
    host, port = _host_port(url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    started = time.monotonic()
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read(), time.monotonic() - started
    finally:
        conn.close()


def test_extender_answers_while_slow_clients_hold_connections(transactional_db, fake_kube):
    load_testbed()
    timeout = kube_scheduler_http_timeout()
    body = orjson.dumps({"Pod": k8s_pod("web-1", labels={"app": "frontend"}), "Nodes": None, "NodeNames": ["n1402"]})
    with extender_server(kube_url=fake_kube.url) as ext:
        for kind in ("headers", "headers-drip", "body", "idle"):
            with slow_clients(ext.url, kind):
                time.sleep(0.5)
                for _ in range(3):
                    status, answer, _took = _post(ext.url, "/scheduler/filter", body, timeout)
                    assert status == 200 and orjson.loads(answer)["NodeNames"] == ["n1402"], kind
                status, _ = ext.get("/readyz")
                assert status == 200, kind


def test_extender_answers_a_body_that_never_comes_with_the_reason_and_reads_chunked_bodies(
        transactional_db, fake_kube):
    load_testbed()
    body = orjson.dumps({"Pod": k8s_pod("web-1", labels={"app": "frontend"}), "Nodes": None, "NodeNames": ["n1402"]})
    with extender_server(kube_url=fake_kube.url) as ext:
        with slow_clients(ext.url, "body", count=1) as (sock,):
            sock.settimeout(kube_scheduler_http_timeout())
            answer = sock.recv(65536)
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert "not received within" in orjson.loads(payload)["Error"]
        host, port = _host_port(ext.url)
        conn = http.client.HTTPConnection(host, port, timeout=kube_scheduler_http_timeout())
        conn.request("POST", "/scheduler/filter", body=iter([body[:100], body[100:]]),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        resp = conn.getresponse()
        assert resp.status == 200 and orjson.loads(resp.read()) == {
            "Nodes": None, "NodeNames": ["n1402"], "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}


def test_web_answers_healthz_and_pages_while_slow_clients_hold_connections(transactional_db):
    with web_server() as web:
        for kind in ("headers", "headers-drip", "body", "idle"):
            with slow_clients(web.url + "/", kind):
                time.sleep(0.5)
                for _ in range(3):
                    status, body = web.get("/healthz", timeout=kube_scheduler_http_timeout())
                    assert status == 200, (kind, body)
                    status, _ = web.get("/login", timeout=kube_scheduler_http_timeout())
                    assert status == 200, kind


def test_web_answers_a_body_that_never_comes_with_408(transactional_db):
    with web_server(args=["--body-timeout", "1"]) as web, slow_clients(web.url + "/", "body", count=1) as (sock,):
        sock.settimeout(10)
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 408") and b"not received within 1 s" in answer
