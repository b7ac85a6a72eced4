"""WAL checkpoints off the request's path: a thread of the store copies the WAL into the database.

SQLite's automatic checkpoint runs inside the COMMIT that crosses its threshold (1000 pages):
it copies the WAL into the database and fsyncs both, 20-150 ms on a busy disk, and that one
store waits for it while every other writer waits behind its write lock. The store's
connections turn it off (``wal_autocheckpoint = 0``) and count their commits instead; every
``every`` commits, or once ``every_rows`` rows were written (a bulk insert's commit of 10,000
rows writes tens of megabytes), this thread runs a PASSIVE checkpoint on its own connection,
which waits for no reader or writer, while requests go on (SQLite releases the GIL while it
copies and syncs). Counting commits alone, a 1M-memory import checkpointed once in its 100
commits and its WAL grew past the database itself (9.9 GB beside 5.7 GB).

A process that stops before the count is reached leaves the WAL to the next writer's
checkpoint, or to SQLite's own when the last connection closes; durability does not depend on
it (a committed transaction is in the WAL, and readers read it from there).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger("capsule.store")

EVERY = 64  # commits: ~1000 WAL pages of 8 KiB for single stores, as often as SQLite's own default
EVERY_ROWS = 2048  # rows: a bulk batch of 2,048 1024-d memories is about as much WAL (~16 MB)


class Checkpointer:
    def __init__(self, run: Callable[[], object], *, every: int = EVERY, every_rows: int = EVERY_ROWS) -> None:
        self._run, self._every, self._every_rows = run, every, every_rows
        self._count = self._rows = 0
        self._wake: threading.Event | None = None  # the running thread's; None: no thread
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.runs = 0  # checkpoints done (tests read it)

    def committed(self, rows: int = 1) -> None:
        """A write transaction of this process committed, writing about ``rows`` rows; every
        ``every``-th, or the one that brings the rows written to ``every_rows``, wakes the thread."""
        with self._lock:
            self._count += 1
            self._rows += rows
            if self._count < self._every and self._rows < self._every_rows:
                return
            self._count = self._rows = 0
            if self._thread is None:
                self._wake = threading.Event()
                self._thread = threading.Thread(
                    target=self._loop, args=(self._wake,), name="capsule-checkpoint", daemon=True
                )
                self._thread.start()
            wake = self._wake
        wake.set()  # type: ignore[union-attr]  # made with the thread, above

    def _loop(self, wake: threading.Event) -> None:
        while wake.wait() and self._wake is wake:
            wake.clear()
            try:
                self._run()
                self.runs += 1
            except Exception as exc:  # noqa: BLE001 - a checkpoint only saves space; the next one retries
                logger.warning("WAL checkpoint failed: %s", exc)

    def stop(self, timeout_s: float = 10.0) -> None:
        """End the thread after the checkpoint it is running, if any; a later commit starts another."""
        with self._lock:
            thread, wake = self._thread, self._wake
            self._thread = self._wake = None
        if thread is not None and wake is not None:
            wake.set()
            thread.join(timeout_s)
