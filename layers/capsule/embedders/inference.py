"""One inference at a time on a local model, a query's before any document's.

A local model runs one batch at a time (one at a time keeps memory flat, and two would share the
same two cores anyway). A plain lock is not fair: a thread embedding many documents (a backfill
after a switch of embedder, a large ingest) takes it again the moment it lets it go, and a
search waited behind its whole call: measured 2.3-3.5 s for a query during a backfill of mpnet
int8. Here a waiting query goes first; a query then waits at most for the one batch running,
which the embedders keep short (about 0.5 s of long texts).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class InferenceLock:
    def __init__(self) -> None:
        self._state = threading.Condition()
        self._busy = False
        self._queries = 0  # queries waiting for their turn
        self.waiting = 0  # batches waiting, queries or not (read by tests)

    @contextmanager
    def turn(self, *, query: bool) -> Iterator[None]:
        """Hold the model for one batch; ``query``: goes before every document batch waiting."""
        with self._state:
            self._queries += query
            self.waiting += 1
            try:
                while self._busy or (not query and self._queries):
                    self._state.wait()
            finally:
                self._queries -= query
                self.waiting -= 1
            self._busy = True
        try:
            yield
        finally:
            with self._state:
                self._busy = False
                self._state.notify_all()
