"""The queue in front of SQLite's write lock: an ``flock`` on a file beside the database.

Two processes (the workers of ``capsule serve``) writing one SQLite file contend for its write
lock, and a connection that finds it taken is put to sleep by SQLite's busy handler in steps of
1, 2, 5, 10, 15, 20, 25, 50 and 100 ms, whenever the holder finishes: a store of 1 ms then
waits 5-100 ms behind another. Every write transaction of :class:`~.sqlite.SQLiteStore` first
takes an exclusive ``flock`` on ``<database>-writelock``, and the kernel wakes the next waiter
the moment the holder lets go; ``BEGIN IMMEDIATE`` then finds the database free. The kernel
drops the lock of a process that dies (kill -9), so a crash never leaves it taken.

It only orders the writers that take it: SQLite's own lock stays the lock (a process that does
not take this one, an older version or the ``sqlite3`` shell, still waits in the busy handler
and is waited for). Each connection has its own open file, so the threads of one process queue
as processes do. A wait is bounded like SQLite's own: a blocking ``flock`` cannot time out, so
a contended one waits in a helper thread and the caller gives up after the deadline.
"""

from __future__ import annotations

import fcntl
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _waiters() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="capsule-writelock")
        return _pool


def lock_path(database: str) -> str | None:
    """The lock file of a database file; None for an in-memory or URI database (one process)."""
    if database == ":memory:" or database.startswith("file:"):
        return None
    return database + "-writelock"


class WriteLock:
    """An exclusive ``flock`` on one open file of the lock file (one per connection)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.waits = 0  # acquisitions that found the lock taken (tests read it)

    def acquire(self, timeout_s: float) -> bool:
        """Take the lock, waiting at most ``timeout_s``; False if it stayed taken that long."""
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        self.waits += 1
        waiting: Future = _waiters().submit(fcntl.flock, self._fd, fcntl.LOCK_EX)
        try:
            waiting.result(timeout=timeout_s)
            return True
        except FutureTimeout:
            # Given up: when the wait ends after all, the lock is let go at once.
            waiting.add_done_callback(lambda done: None if done.exception() is not None else self.release())
            return False

    def release(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        except OSError:
            pass  # closed meanwhile: closing let the lock go

    def close(self) -> None:
        try:
            os.close(self._fd)
        except OSError:
            pass
