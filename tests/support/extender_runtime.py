"""The extender inside the test process, as production runs it: the process's runtime (informers or
database source, the loader thread swapping ``CacheView``s, the placement writer, the decision log's
shipper to the Redis queue) behind the WSGI app the extender server serves
(``apps.scheduler.extender_views.application``).

The runtime's threads use their own database connections, which see committed rows only: tests use the
``start_extender`` fixture (tests/conftest.py), which brings ``transactional_db`` and stops the runtime
before the database is flushed. Instead of reading on the request thread, a test waits for
what production waits for: ``settle`` until the loader has loaded what the database holds (its own
fingerprint says so), ``drain_decisions`` until the decisions left the process and the drain task
(``scheduler.drain_decisions``) moved them into Postgres.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from apps.scheduler import extender_views, selectors, tasks
from apps.scheduler.runtime import ExtenderRuntime, process_runtime, reset_runtime

# How long a test waits for the runtime's threads. Generous: the product promises no bound here (the
# loader polls every STATE_DB_CHECK_SECONDS), and a busy machine must not fail a correct test.
WAIT_SECONDS = 60.0


@dataclass
class Answer:
    """One WSGI answer, read like a Django test client response."""

    status_code: int
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes = b""

    def __getitem__(self, name: str) -> str:
        return self.headers[name]

    def json(self) -> Any:
        return orjson.loads(self.content)


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.01)


class InProcessExtender:
    def __init__(self, rt: ExtenderRuntime) -> None:
        self.runtime = rt

    # --- requests -------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: bytes | None = None, *, content_length: bool = True) -> Answer:
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
            "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "testserver", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body or b""),
            "wsgi.errors": io.StringIO(), "wsgi.multithread": True, "wsgi.multiprocess": False,
            "wsgi.run_once": False, "wsgi.version": (1, 0),
        }
        if body is not None:
            environ["CONTENT_TYPE"] = "application/json"
            if content_length:
                environ["CONTENT_LENGTH"] = str(len(body))
        seen: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            seen["status"], seen["headers"] = status, headers

        data = b"".join(extender_views.application(environ, start_response))
        return Answer(int(seen["status"].split()[0]), dict(seen["headers"]), data)

    def post(self, path: str, body: object, *, settle: bool = True) -> Answer:
        """POST ``body`` (bytes as they are, anything else as JSON), once the loader caught up with
        what the test wrote (``settle=False``: answer from whatever the cache holds now)."""
        if settle:
            self.settle()
        return self.request("POST", path, body if isinstance(body, bytes) else orjson.dumps(body))

    def get(self, path: str) -> Answer:
        return self.request("GET", path)

    # --- waiting for the runtime's threads ------------------------------------------------------------

    def settle(self, timeout: float = WAIT_SECONDS) -> None:
        """Wait until the loader thread has swapped in what the database holds now, by the loader's own
        fingerprint (``selectors.state_stamps``), and its last round found every part healthy. The
        wake is what a change notification does."""
        loader = self.runtime.loader

        def caught_up() -> bool:
            self.runtime.wake.set()
            fresh = selectors.state_stamps()
            sources = self.runtime.cache.view().sources
            return all(loader.stamps.get(part) == fresh.get(part) and sources[part].ok for part in loader.parts)

        wait_until(caught_up, "the extender's loader loads what the database holds", timeout)

    def drain_decisions(self, timeout: float = WAIT_SECONDS) -> int:
        """Wait until every decision recorded so far left the process (Redis queue, or Postgres while
        Redis is away), then run the drain task as beat does. Returns how many the drain moved."""
        log = self.runtime.decisions
        wait_until(lambda: log.recorded == log.logged + log.dropped,
                   "the decision log ships every recorded decision", timeout)
        return int(tasks.drain_decisions.apply().get())


def start_extender(settings: Any, *, synced: bool = True, **overrides: Any) -> InProcessExtender:
    """This process's extender runtime, started afresh with ``overrides`` of settings.NETAWARE, once
    its first load is complete (every source synced; ``synced=False``: without waiting for it).
    Through the ``start_extender`` fixture."""
    settings.NETAWARE = {**settings.NETAWARE, **overrides}
    reset_runtime()
    rt = process_runtime()
    if synced:
        wait_until(lambda: rt.cache.view().synced, "the extender's first load (every source synced)")
    return InProcessExtender(rt)
