"""Per-state score memo: what one (pod, candidate tuple) resolves to against one ClusterState.

kube-scheduler sends filter and then prioritize (on the survivors) for the same pod; the second call
reuses the workload resolution, node positions and intermediate results of the first. A ScoreMemo belongs
to one immutable ClusterState (``state.score_memo``), so nothing it serves can be out of date: any change
makes a new state with an empty memo.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class ScoreMemo:
    """LRU bounded in entries and in the total number of candidate names held; thread-safe."""

    def __init__(self, max_entries: int = 256, max_names: int = 100_000) -> None:
        self.max_entries = max_entries
        self.max_names = max_names
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[int, Any]] = OrderedDict()
        self._names = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: Hashable, value: Any, *, size: int) -> None:
        if size > self.max_names:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._names -= old[0]
            self._entries[key] = (size, value)
            self._names += size
            while len(self._entries) > self.max_entries or self._names > self.max_names:
                _, (evicted, _) = self._entries.popitem(last=False)
                self._names -= evicted

    def __len__(self) -> int:
        return len(self._entries)
