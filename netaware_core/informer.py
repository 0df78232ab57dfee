"""List + watch of one Kubernetes resource, the informer pattern every netaware loop shares.

Level-triggered: a list replaces what the consumer holds (deletions missed while away included),
then a watch from the list's resourceVersion delivers deltas; a broken stream resumes from the last
version seen, a 410 Gone (version compacted away) re-lists, errors back off with full jitter, and a
periodic re-list (``resync_seconds``) reconciles anything missed. Objects are read raw (orjson):
the generated client's model deserialization costs more than the consumers' whole work.

Consumers implement ``on_list(items, version)`` and ``on_event(type, object)``; ``on_error`` gets a
one-line reason (the caller records staleness), ``on_note`` hears of re-lists after a 410.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from . import kube

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class Gone(Exception):
    """The watch's resourceVersion is too old (410): re-list."""


class ListWatch:
    def __init__(
        self,
        path: str,
        *,
        on_list: Callable[[list[Obj], str], None] | None = None,
        on_event: Callable[[str, Obj], None],
        list_with: Callable[[], str] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_note: Callable[[str], None] | None = None,
        on_round: Callable[[], None] | None = None,
        stop: threading.Event | None = None,
        watch_timeout: int = 300,
        resync_seconds: float = 600.0,
        label_selector: str = "",
        field_selector: str = "",
        max_backoff: float = 30.0,
    ) -> None:
        if (on_list is None) == (list_with is None):
            raise ValueError("give on_list (the informer lists) or list_with (the caller lists), not both")
        self.path = path
        self.on_list = on_list
        # A caller that does its own listing (a full reconciliation pass) returns the version to watch from.
        self.list_with = list_with
        self.on_event = on_event
        self.on_error = on_error or (lambda message: None)
        self.on_note = on_note or (lambda message: None)
        # Called at the start of every list/watch round (a liveness heartbeat, netaware_core/heartbeat.py).
        self.on_round = on_round or (lambda: None)
        self.stop = stop or threading.Event()
        self.watch_timeout = watch_timeout
        self.resync_seconds = resync_seconds
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.max_backoff = max_backoff
        self.version = ""
        self.listed_at = 0.0

    # --- one list, one watch -------------------------------------------------------------------

    def _query(self) -> dict[str, str]:
        query: dict[str, str] = {}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        return query

    def list_once(self) -> str:
        if self.list_with is not None:
            version = self.list_with()
            self.version = version
            self.listed_at = time.monotonic()
            return version
        data = kube.retry(lambda: kube.get_json(self.path, query=self._query()), attempts=3)
        items = data.get("items") or []
        version = str((data.get("metadata") or {}).get("resourceVersion") or "")
        assert self.on_list is not None
        self.on_list(items, version)
        self.version = version
        self.listed_at = time.monotonic()
        return version

    def events(self, version: str) -> Iterator[Obj]:
        query = {**self._query(), "watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": str(self.watch_timeout)}
        try:
            resp = kube.stream(self.path, query=query, read_timeout=self.watch_timeout + 10.0)
        except Exception as exc:
            if kube.status_of(exc) == 410:
                raise Gone(str(exc)) from exc
            raise
        buffer = b""
        try:
            for chunk in resp.stream(64 * 1024, decode_content=True):
                if self.stop.is_set():
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield orjson.loads(line)
            if buffer.strip():
                yield orjson.loads(buffer)
        finally:
            resp.release_conn()

    def watch_once(self) -> None:
        for event in self.events(self.version):
            etype = event.get("type") or ""
            obj = event.get("object") or {}
            if etype == "ERROR":
                if obj.get("code") == 410:
                    raise Gone(obj.get("message") or "expired")
                raise RuntimeError(f"watch error: {obj.get('message') or obj}")
            new_version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if etype != "BOOKMARK":
                self.on_event(etype, obj)
            if new_version:
                self.version = new_version

    # --- the loop ------------------------------------------------------------------------------

    def run(self, *, once: bool = False) -> None:
        """List then watch until ``stop`` is set (``once``: a single list, errors raised)."""
        attempt = 0
        while not self.stop.is_set():
            self.on_round()
            try:
                if self.version and time.monotonic() - self.listed_at >= self.resync_seconds:
                    self.version = ""  # periodic full reconciliation (an informer's resync)
                if not self.version:
                    self.list_once()
                    if once:
                        return
                self.watch_once()
                attempt = 0
            except Gone as exc:
                log.info("%s: watch expired (%s); re-listing", self.path, exc)
                self.on_note(f"watch expired ({exc}); re-listing")
                self.version = ""
            except Exception as exc:
                if once:
                    raise
                if self.stop.is_set():
                    return
                delay = kube.backoff_delay(attempt, base_delay=0.5, max_delay=self.max_backoff)
                attempt += 1
                message = f"{self.path}: {kube.describe(exc)}; retrying in {delay:.1f}s"
                log.warning("%s", message)
                self.on_error(message)
                self.stop.wait(delay)

    def start(self, name: str) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=name, daemon=True)
        thread.start()
        return thread
