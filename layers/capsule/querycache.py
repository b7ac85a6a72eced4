"""The query cache: a search's result, reused for 5 minutes while nothing in its projects changes.

Each entry is keyed on the request *and* the change markers (per-project versions, see
:meth:`MemoryStore.change_markers`) of the projects it searched. Any write to one of those
projects, by this process or any other, moves its marker, so the next identical search
misses; the cache needs no invalidation messages and stays right with several processes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime, timedelta
from typing import Generic, Hashable, TypeVar

from . import limits

T = TypeVar("T")


class QueryCache(Generic[T]):
    def __init__(self, *, ttl_seconds: float = limits.QUERY_CACHE_SECONDS, max_entries: int = 1024) -> None:
        self.ttl = timedelta(seconds=ttl_seconds)
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[datetime, T]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, now: datetime) -> T | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or now - entry[0] >= self.ttl or now < entry[0]:
                self._entries.pop(key, None)
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: Hashable, value: T, now: datetime) -> None:
        if self.max_entries <= 0:
            return
        with self._lock:
            self._entries[key] = (now, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
