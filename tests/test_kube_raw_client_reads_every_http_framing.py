"""The raw Kubernetes API client (``netaware_core.kube``: the extender's Binding POST, the leader's
Lease, pod reads) reads every HTTP/1.1 framing a Go API server may use and keeps the error and retry
contract of the generated client.

The API server here is a scripted one speaking HTTP on a socket: each answer is written byte for byte,
so chunked framing, ``Connection: close`` and a kept-alive connection dropped between requests can
be produced on purpose (the fake of apps/demo/kubeapi.py always sends Content-Length).
"""

from __future__ import annotations

import socket
import threading

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from netaware_core import kube


class ScriptedApi:
    """Accepts connections and answers each request with the next scripted reply (bytes, or None:
    close the connection without answering). Records the requests it read."""

    def __init__(self, replies: list[bytes | None]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, bytes]] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.replies:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                buf = b""
                while self.replies:
                    while b"\r\n\r\n" not in buf:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        buf += chunk
                    if b"\r\n\r\n" not in buf:
                        break
                    head, _, buf = buf.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    while len(buf) < length:
                        buf += conn.recv(65536)
                    body, buf = buf[:length], buf[length:]
                    self.requests.append((head.split(b"\r\n")[0].decode(), body))
                    reply = self.replies.pop(0)
                    if reply is None:
                        break  # drop the connection, unanswered
                    conn.sendall(reply)
                    if b"Connection: close" in reply:
                        break

    def close(self) -> None:
        self.sock.close()


def _reply(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", *headers]
    if not any(h.lower().startswith(("transfer-encoding", "connection: close")) for h in headers):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _chunked(body: bytes, size: int) -> bytes:
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n"
    return out + b"0\r\nX-Trailer: done\r\n\r\n"


@pytest.fixture
def scripted(settings):
    servers: list[ScriptedApi] = []

    def start(replies: list[bytes | None]) -> ScriptedApi:
        server = ScriptedApi(replies)
        servers.append(server)
        settings.NETAWARE = {**settings.NETAWARE, "KUBE_API_URL": f"http://127.0.0.1:{server.port}",
                             "KUBE_TOKEN": "t0ken", "KUBE_CA_FILE": ""}
        kube.reset_clients()
        kube._connections.by_key.clear()
        return server

    yield start
    for server in servers:
        server.close()
    kube.reset_clients()
    kube._connections.by_key.clear()


def test_chunked_answer_is_reassembled_and_the_connection_kept(scripted):
    listed = orjson.dumps({"kind": "PodList", "items": [{"metadata": {"name": f"p{i}"}} for i in range(200)]})
    server = scripted([_reply("200 OK", _chunked(listed, 777), "Transfer-Encoding: chunked"),
                       _reply("200 OK", b'{"kind":"Pod","metadata":{"name":"p1"}}')])
    assert kube.get_json("/api/v1/pods", query={"limit": "500"}) == orjson.loads(listed)
    assert kube.get_pod(namespace="default", name="p1")["metadata"]["name"] == "p1"
    assert server.connections == 1  # the trailer was consumed: the second answer parsed on the same socket
    assert server.requests[0][0] == "GET /api/v1/pods?limit=500 HTTP/1.1"


def test_binding_post_carries_token_and_body_and_a_refusal_is_an_api_exception(scripted):
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409,
              "message": 'pod p is already assigned to node "n2"'}
    server = scripted([_reply("201 Created", b'{"kind":"Status","status":"Success","code":201}'),
                       _reply("409 Conflict", orjson.dumps(status))])
    kube.create_binding(namespace="default", pod="p", node="n1", uid="u-1", timeout=2.0)
    line, body = server.requests[0]
    assert line == "POST /api/v1/namespaces/default/pods/p/binding HTTP/1.1"
    assert orjson.loads(body)["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert orjson.loads(body)["metadata"]["uid"] == "u-1"
    with pytest.raises(ApiException) as refused:
        kube.create_binding(namespace="default", pod="p", node="n1", timeout=2.0)
    assert refused.value.status == 409
    assert kube.status_body(refused.value)["reason"] == "Conflict"
    assert "already assigned" in kube.describe(refused.value)


def test_answer_ended_by_close_is_read_whole_and_the_next_call_reconnects(scripted):
    server = scripted([_reply("200 OK", b'{"a": 1}', "Connection: close"), _reply("200 OK", b'{"b": 2}')])
    assert kube.get_json("/x") == {"a": 1}
    assert kube.get_json("/y") == {"b": 2}
    assert server.connections == 2


def test_kept_alive_connection_dropped_by_the_server_is_retried_once(scripted):
    server = scripted([_reply("200 OK", b'{"a": 1}'), None, _reply("200 OK", b'{"b": 2}')])
    assert kube.get_json("/x") == {"a": 1}
    assert kube.get_json("/y") == {"b": 2}  # first attempt: the server hung up; second: a fresh connection
    assert server.connections == 2
    assert [line for line, _ in server.requests] == ["GET /x HTTP/1.1", "GET /y HTTP/1.1", "GET /y HTTP/1.1"]


def test_a_server_that_never_answers_times_out_without_a_retry(scripted):
    server = scripted([])  # listens (the kernel accepts) but never reads or answers
    with pytest.raises(TimeoutError):
        kube.post_json("/api/v1/namespaces/default/pods/p/binding", b"{}", timeout=0.3)
    assert server.connections == 0


def test_a_list_of_many_megabytes_arrives_whole(scripted):
    listed = orjson.dumps({"kind": "NodeList", "items": [{"metadata": {"name": f"node-{i:05d}", "labels": {
        "topology.kubernetes.io/zone": f"z{i % 50}"}}} for i in range(60000)]})
    assert len(listed) > 4 * 2**20
    scripted([_reply("200 OK", listed)])
    got = kube.get_json("/api/v1/nodes")
    assert len(got["items"]) == 60000 and got["items"][-1]["metadata"]["name"] == "node-59999"
