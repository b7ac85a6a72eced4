"""The embedded store's connections and transactions, and the write primitives its parts share.

Each thread gets its own connection. Every write runs in ``BEGIN IMMEDIATE`` behind an ``flock``
queue (:mod:`.sqlite_lock`); the WAL is checkpointed by a thread (:mod:`.sqlite_checkpoint`), not
inside a store's COMMIT (store/WRITES.md says why, with numbers). SQLite's errors become ours here.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.errors import Conflict, Unavailable
from .sqlite_checkpoint import Checkpointer
from .sqlite_lock import WriteLock, lock_path

# The page size of a new database (see SQLiteStore._conn).
PAGE_SIZE = 8192
WAL_KEEP_BYTES = 64 << 20  # the WAL file kept on disk once it starts over (PRAGMA journal_size_limit)
# Past this, the checkpointer truncates the WAL (see _checkpoint): under writers that never pause,
# a PASSIVE checkpoint copies frames but the WAL never starts over, and grew to 1.33 GB beside an
# 82 MB database in 180 s of 16 writers. With this bound it stays under about twice this size
# (scripts/wal_growth.py), and a restart replays at most that much.
WAL_TRUNCATE_BYTES = 64 << 20
TRUNCATE_WAIT_S = 2.0  # the longest the truncating checkpoint waits for readers (writers wait behind it)
TRUNCATE_QUEUE_S = 10.0  # how long it waits for its turn in the write queue (writers go on meanwhile)


def _rollback(conn: sqlite3.Connection) -> None:
    """Undo the open transaction. SQLite may have rolled it back already (a full disk, an
    I/O error), and then ROLLBACK itself fails: that must not hide the error that caused it."""
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # nothing is committed without COMMIT, and the connection starts afresh next time


def _create_private(path: str) -> None:
    """Create a new database file readable by its owner only. SQLite gives its journal, WAL
    and shared-memory files the database file's mode, so they are 0600 too."""
    if path == ":memory:" or path.startswith("file:"):
        return
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


class SQLiteConnections:
    """Connections, transactions and shared write steps of one SQLite file."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0) -> None:
        self.path = str(path)
        self._busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._write_locks: list[WriteLock] = []
        self._lock = threading.Lock()
        self._checkpointer = Checkpointer(self._checkpoint)
        self.truncations = 0  # TRUNCATE checkpoints that emptied the WAL (tests and scripts read it)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                _create_private(self.path)
                conn = sqlite3.connect(
                    self.path, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False
                )
                conn.row_factory = sqlite3.Row
                # 8 KiB pages for a new database (an existing one keeps its own): a row with a
                # 1024-d (or 1536-d) vector fits on its page instead of an overflow page, and a
                # store, which writes a page of every index it touches to the WAL, writes 4 times
                # less than with 32 KiB pages (a store's SQL: 0.7 ms CPU instead of 1.5 ms; a
                # cold load of 10k memories: 125 ms instead of 95 ms; store/WRITES.md).
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                self._use_wal(conn)
                # Durable against a crashed or killed process (a commit is in the WAL before
                # COMMIT returns) and never corrupted by a power loss, which may lose the last
                # commits before the WAL's next sync: the trade a memory service wants, as an
                # fsync per store would cost more than the store itself (store/WRITES.md).
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA foreign_keys=ON")
                # A statement's undo journal (a store's INSERT touches a page of each of the
                # memories' indexes: ~70 KB) in memory: on disk it was a temp file created,
                # written and deleted by every store.
                conn.execute("PRAGMA temp_store = MEMORY")
                # SQLite's default page cache (2 MB) and no mmap, on purpose: at 1M memories in
                # one project (issue 32, bench-results/bench-ops-1k-1m.json) a single operation
                # reads 3-17 pages its cache lacks (a get 3, a forget 17: the leaves of a B-tree
                # one level deeper, at random places), ~3 us of CPU each as a pread of the OS's
                # page cache. A 64 MB cache_size read the same pages (the interior pages already
                # fit in 2 MB; the leaves are cold at any size); mmap_size (capped at 2 GiB by
                # this build) took the preads away but not measurably the CPU, and turns an I/O
                # error into a signal. Every single operation measured within 1.3x of its 1k cost.
                queue = lock_path(self.path)
                write_lock = queue and WriteLock(queue)
                if queue:  # checkpoints run in the checkpointer's thread (.sqlite_checkpoint)
                    conn.execute("PRAGMA wal_autocheckpoint = 0")
                # A WAL a large import grew is cut back to this when it next starts over, not
                # kept at its largest size on disk.
                conn.execute(f"PRAGMA journal_size_limit = {WAL_KEEP_BYTES}")
            except (sqlite3.Error, OSError) as exc:
                raise Unavailable(f"cannot open the database at {self.path}: {exc}") from exc
            self._local.conn, self._local.write_lock = conn, write_lock
            with self._lock:
                self._all.append(conn)
                if write_lock:
                    self._write_locks.append(write_lock)
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL, waiting as for any lock: SQLite answers "locked" at once, without its
        busy wait, when connections (the workers of ``capsule serve``) create one new file together."""
        deadline = time.monotonic() + self._busy_timeout_s
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @contextmanager
    def _write(self, wait_s: float | None = None, *, rows: int = 1) -> Iterator[sqlite3.Connection]:
        """One write transaction, queued behind the other writers' (:mod:`.sqlite_lock`);
        ``rows``: about how many rows it writes (a bulk insert's), for the checkpointer."""
        conn = self._conn()
        queue: WriteLock | None = self._local.write_lock
        try:
            if queue and not queue.acquire(self._busy_timeout_s if wait_s is None else wait_s):
                raise Unavailable("the database is busy: another writer held it too long")
        except OSError as exc:
            raise Unavailable(f"the database's write lock could not be taken: {exc}") from exc
        try:
            yield from self._transaction(conn)
        finally:
            if queue:
                queue.release()
        if queue:
            self._checkpointer.committed(rows)

    def _checkpoint(self) -> None:
        """Copy the WAL into the database without waiting for anyone (the checkpointer's thread);
        and when the WAL has grown past :data:`WAL_TRUNCATE_BYTES`, start it over: holding the
        write queue (writers wait, at most the checkpoint plus :data:`TRUNCATE_WAIT_S`), a
        TRUNCATE checkpoint waits for the readers of old frames, copies the rest and empties the
        file. If a reader holds on longer it gives up, and the next round tries again."""
        conn = self._conn()
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        if self.wal_bytes() > WAL_TRUNCATE_BYTES:
            self.truncate_wal()

    def wal_bytes(self) -> int:
        try:
            return os.path.getsize(self.path + "-wal")
        except OSError:
            return 0

    def truncate_wal(self, wait_s: float = TRUNCATE_WAIT_S) -> bool:
        """A TRUNCATE checkpoint behind the write queue; True when the WAL was emptied."""
        conn = self._conn()
        queue: WriteLock | None = self._local.write_lock
        if queue and not queue.acquire(TRUNCATE_QUEUE_S):
            return False
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
            if queue:
                queue.release()
        self.truncations += not busy
        return not busy

    @staticmethod
    def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise Unavailable(f"the database is busy or unavailable: {exc}") from exc
        try:
            yield conn
        except sqlite3.IntegrityError as exc:
            _rollback(conn)
            raise Conflict(f"the write conflicts with stored data: {exc}") from exc
        except sqlite3.Error as exc:
            _rollback(conn)
            raise Unavailable(f"the database write failed: {exc}") from exc
        except BaseException:
            _rollback(conn)
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise Unavailable(f"the write could not be committed: {exc}") from exc

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads that see one committed state (WAL readers get a snapshot)."""
        conn = self._conn()
        try:
            conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise Unavailable(f"the database could not be read: {exc}") from exc
        try:
            yield conn
        except sqlite3.OperationalError as exc:
            raise Unavailable(f"the database could not be read: {exc}") from exc
        finally:
            try:
                conn.execute("COMMIT")  # a read-only transaction: ending it cannot lose anything
            except sqlite3.Error:
                _rollback(conn)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise Unavailable(f"the database could not be read: {exc}") from exc

    def close(self) -> None:
        self._checkpointer.stop()
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
            for write_lock in self._write_locks:
                write_lock.close()
            self._write_locks.clear()
        self._local = threading.local()

    @staticmethod
    def _bump(conn: sqlite3.Connection, tenant: str, project: str) -> int:
        """The project's next version, taken inside the caller's write transaction."""
        conn.execute(
            "INSERT INTO projects (tenant, name, created_at, updated_at) VALUES (?, ?, 0, 0) "
            "ON CONFLICT (tenant, name) DO NOTHING",
            (tenant, project),
        )
        return conn.execute(
            "UPDATE projects SET version = version + 1 WHERE tenant = ? AND name = ? RETURNING version",
            (tenant, project),
        ).fetchone()[0]

    @staticmethod
    def _audit(conn, tenant, memory_id, project, action, actor, reason, at) -> None:
        conn.execute(
            "INSERT INTO audit (tenant, memory_id, project, action, actor, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (tenant, memory_id, project, action, actor, reason, at),
        )


def create_schema(conn: sqlite3.Connection, script: str) -> None:
    """Run ``script``'s ``;``-separated statements (CREATE ... IF NOT EXISTS) in the caller's
    transaction: ``executescript`` would commit it first. No statement may hold a ``;`` itself."""
    for statement in filter(str.strip, script.split(";")):
        conn.execute(statement)
