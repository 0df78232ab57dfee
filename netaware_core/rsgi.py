"""A WSGI app served through granian's RSGI interface, so slow clients cost no request thread.

Granian's own WSGI interface calls the app as soon as the headers are in, and ``wsgi.input.read``
then blocks a request thread for as long as the client takes to send its body: 32 connections that
declare a body and send nothing stall every thread (issue 21). Here granian parses headers in Rust
(bounded by its ``header_read_timeout``), this adapter reads the body on the event loop within
``body_timeout`` seconds and at most ``max_body`` bytes (chunked bodies too: the app then sees a
``CONTENT_LENGTH``), and only a complete request reaches a thread of the pool, which runs the
unchanged WSGI app. A body that does not arrive in time reaches the app as a ``wsgi.input`` whose
read raises :class:`BodyTimeout`, so the app decides how to answer (the extender: a 200 with the
reason; the web: ``refuse_unreadable``, 408 or 413 without reaching Django). Responses are collected and sent in one piece (no streaming responses here).

``inline``: requests it accepts (path, body length) run on the event loop's own thread instead. For
short CPU-bound handlers whose client waits on each answer before sending the next request
(kube-scheduler's filter and prioritize): the hand-off to a pool thread and back costs two thread
wake-ups and GIL hand-overs per request, which on a busy machine were as long as the handler itself.
Anything that waits on I/O (a bind waits on the Kubernetes API) must stay on the pool.

Framework-free on purpose: both servers (``run_extender``, ``run_web``) use it.
"""

from __future__ import annotations

import asyncio
import io
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _wsgi_str(value: str) -> str:
    return value.encode("utf-8", "surrogateescape").decode("latin-1")


class BodyTimeout(OSError):
    """The client did not send its declared body within the deadline."""


class BodyTooLarge(OSError):
    """The body is larger than the server's bound (only raised for bodies without a Content-Length)."""


class _Unreadable(io.RawIOBase):
    """``wsgi.input`` of a request whose body did not arrive (or was too large): any read says why."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def readable(self) -> bool:
        return True

    def readinto(self, _buffer: Any) -> int:
        raise self.error

    def read(self, size: int = -1) -> bytes:
        raise self.error

    def readline(self, size: int | None = -1) -> bytes:
        raise self.error


class Stats:
    """What the pool is doing, for readiness: requests in a thread now, and waiting for one."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.running = 0
        self.waiting = 0
        self.lock = threading.Lock()

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {"threads": self.threads, "running": self.running, "waiting": self.waiting}


class BufferedWSGI:
    """RSGI application (``__rsgi__``) running ``app`` on ``threads`` threads once the body is in."""

    def __init__(self, app: WSGIApp, *, threads: int, body_timeout: float, max_body: int,
                 script_name: str = "", refuse_unreadable: bool = False,
                 inline: Callable[[str, int], bool] | None = None) -> None:
        self.app = app
        self.inline = inline
        # True: a body that did not arrive (408) or is too large (413) is answered here, the app never
        # sees the request; False: the app gets a wsgi.input that raises, and answers itself.
        self.refuse_unreadable = refuse_unreadable
        self.body_timeout = body_timeout
        self.max_body = max_body
        self.script_name = script_name
        self.stats = Stats(threads)
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="request")

    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        pass

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def _body(self, scope: Any, protocol: Any) -> tuple[bytes, int | None, OSError | None]:
        """(body, declared length or None, why it is unreadable or None)."""
        if scope.method in ("GET", "HEAD", "OPTIONS", "DELETE") and "content-length" not in scope.headers \
                and "transfer-encoding" not in scope.headers:
            return b"", None, None
        declared_text = scope.headers.get("content-length")
        declared: int | None = None
        if declared_text is not None:
            try:
                declared = int(declared_text)
            except ValueError:
                declared = None
            if declared is not None and declared > self.max_body:
                return b"", declared, None  # the app refuses it by its Content-Length; nothing is read

        async def collect() -> bytes:
            if declared is not None:  # bounded above; granian reads exactly that many bytes
                data: bytes = await protocol()
                return data
            chunks: list[bytes] = []
            size = 0
            async for chunk in protocol:
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_body:
                    raise BodyTooLarge(f"body: more than {self.max_body} bytes")
            return b"".join(chunks)

        try:
            async with asyncio.timeout(self.body_timeout):  # no task per request, unlike wait_for
                body = await collect()
        except TimeoutError:
            return b"", declared, BodyTimeout(
                f"body: not received within {self.body_timeout:g} s (declared {declared_text or 'chunked'})")
        except BodyTooLarge as exc:
            return b"", declared, exc
        except Exception as exc:  # the client went away mid-body
            return b"", declared, BodyTimeout(f"body: connection ended before the body: {type(exc).__name__}")
        return body, len(body), None

    def _environ(self, scope: Any, body: bytes, length: int | None, error: OSError | None) -> dict[str, Any]:
        host, _, port = scope.server.rpartition(":")
        client_host, _, client_port = scope.client.rpartition(":")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": scope.method,
            "SCRIPT_NAME": self.script_name,
            # WSGI (PEP 3333) wants the path's bytes as a latin-1 str; granian gives it decoded as UTF-8.
            "PATH_INFO": _wsgi_str(scope.path),
            "QUERY_STRING": _wsgi_str(scope.query_string),
            "SERVER_NAME": host,
            "SERVER_PORT": port,
            "SERVER_PROTOCOL": f"HTTP/{scope.http_version}",
            "REMOTE_ADDR": client_host,
            "REMOTE_PORT": client_port,
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": scope.scheme,
            "wsgi.input": io.BytesIO(body) if error is None else _Unreadable(error),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        if length is not None:
            environ["CONTENT_LENGTH"] = str(length)
        for name, value in scope.headers.items():
            if name == "content-length" or name == "transfer-encoding":
                continue
            if name == "content-type":
                environ["CONTENT_TYPE"] = value
                continue
            key = "HTTP_" + name.upper().replace("-", "_")
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ

    def _run(self, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        with self.stats.lock:
            self.stats.waiting -= 1
            self.stats.running += 1
        try:
            seen: dict[str, Any] = {}

            def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
                seen["status"], seen["headers"] = status, headers

            try:
                result = self.app(environ, start_response)
                try:
                    data = b"".join(result)
                finally:
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
            except Exception:  # the app's own error handling failed: a bare 500, as a WSGI server does
                traceback.print_exc(file=sys.stderr)
                return 500, [("Content-Type", "text/plain")], b"internal server error"
            return int(seen["status"].split(" ", 1)[0]), list(seen["headers"]), data
        finally:
            with self.stats.lock:
                self.stats.running -= 1

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto != "http":
            return
        body, length, error = await self._body(scope, protocol)
        if error is not None and self.refuse_unreadable:
            status = 413 if isinstance(error, BodyTooLarge) else 408
            protocol.response_bytes(status, [("Content-Type", "text/plain; charset=utf-8"), ("Connection", "close")],
                                    str(error).encode())
            return
        environ = self._environ(scope, body, length, error)
        with self.stats.lock:
            self.stats.waiting += 1
        if error is None and self.inline is not None and self.inline(scope.path, len(body)):
            status, headers, data = self._run(environ)
        else:
            status, headers, data = await asyncio.get_running_loop().run_in_executor(self.pool, self._run, environ)
        protocol.response_bytes(status, headers, data)
