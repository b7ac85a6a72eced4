"""Counting requests without a round trip per request, unless a rate limit needs one.

With no limit, a count is added to a buffer in this process, and the buffer is written
(:meth:`UsageStore.add`: one transaction, or one upsert per tenant-hour) once its oldest count
is ``flush_s`` seconds old, at the next request (a Lambda container runs nothing between
invocations), and when the process stops (:meth:`Meter.flush`). A container reclaimed by Lambda loses at most ``flush_s`` seconds of
its counts: they are usage figures, not bills. With a limit, every request is one atomic
write that answers the tenant's count in the minute (:meth:`UsageStore.count`), which the
caller compares with the limit.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

from ..core.errors import Unavailable
from ..store.usage import UsageStore, hour_of


class Meter:
    def __init__(
        self, store: UsageStore, *, limit: int = 0, flush_s: float = 60.0, clock: Callable[[], float] = time.time
    ) -> None:
        self.store, self.limit, self.flush_s, self._clock = store, limit, flush_s, clock
        self._pending: Counter[tuple[str, int, str]] = Counter()
        self._oldest: float | None = None  # when the oldest buffered count was taken
        self._lock = threading.Lock()

    @property
    def buffering(self) -> bool:
        return not self.limit

    def now(self) -> float:
        return self._clock()

    def count(self, tenant: str, operation: str, at: float | None = None) -> int | None:
        """Count one request: with a limit, written now, and the tenant's requests in this
        minute are returned; without, buffered (None), and the buffer written when due."""
        at = self._clock() if at is None else at
        if self.limit:
            return self.store.count(tenant, operation, at)
        with self._lock:
            self._pending[(tenant, hour_of(at), operation)] += 1
            if self._oldest is None:
                self._oldest = at
            due = at - self._oldest >= self.flush_s
        if due:
            self.flush()
        return None

    def pending(self) -> int:
        """Requests counted but not yet written."""
        with self._lock:
            return sum(self._pending.values())

    def flush(self) -> int:
        """Write the buffered counts (:meth:`UsageStore.add`); how many requests they were. When the store
        cannot take them they stay buffered for the next flush, and Unavailable is raised."""
        with self._lock:
            pending = self._pending
            self._pending, self._oldest = Counter(), None
        if not pending:
            return 0
        try:
            self.store.add(pending)
        except Unavailable:
            with self._lock:
                self._pending.update(pending)
                # tried again a whole interval later, not at every request while the store is down
                self._oldest = self._clock()
            raise
        return sum(pending.values())
