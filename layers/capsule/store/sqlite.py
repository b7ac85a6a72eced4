"""The embedded store: one SQLite file in WAL mode, safe across threads and processes.

Each thread gets its own connection. Every write runs in ``BEGIN IMMEDIATE``, so two
processes storing into one project serialise on the database's write lock and the
retention check inside the transaction sees the other's rows: nobody evicts more than
needed; writers queue for it on an ``flock`` (:mod:`.sqlite_lock`), not in SQLite's busy
handler, and the WAL is checkpointed by a thread (:mod:`.sqlite_checkpoint`), not inside a
store's COMMIT (WRITES.md says why, with numbers). Embeddings are float32 BLOBs. The schema is
versioned with ``PRAGMA user_version``.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..clock import from_epoch, to_epoch
from ..errors import Conflict, NotFound, Unavailable
from .. import terms
from ..index import pack_row, stable_key
from ..records import AuditRecord, ChangeSet, Filters, IndexColumns, MemoryRecord, ProjectStats, WriteOutcome
from . import guard_policies, sqlite_counts
from .base import Cursor
from . import sqlite_bulk, sqlite_governance_schema, sqlite_keys, sqlite_visibility_schema
from .sqlite_checkpoint import Checkpointer
from .sqlite_lock import WriteLock, lock_path
from ..governance.retention import effective_class, eviction_reason

MIGRATIONS: list[str] = [
    # 1: memories, projects, feedback, audit, embedding cache
    """
    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        project TEXT NOT NULL,
        content TEXT NOT NULL,
        path TEXT,
        chunk_index INTEGER,
        chunk_count INTEGER,
        embedding BLOB,
        model TEXT,
        sha256 TEXT NOT NULL,
        occurred_at REAL NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        accessed_at REAL,
        pinned INTEGER NOT NULL DEFAULT 0,
        explanation TEXT,
        meta TEXT NOT NULL DEFAULT '{}',
        component TEXT,
        category TEXT,
        helpful INTEGER NOT NULL DEFAULT 0,
        unhelpful INTEGER NOT NULL DEFAULT 0,
        deleted_at REAL,
        deleted_reason TEXT,
        status TEXT NOT NULL DEFAULT 'ready'
    );
    CREATE INDEX memories_recent ON memories (tenant, project, deleted_at, created_at, id);
    CREATE INDEX memories_sha ON memories (tenant, project, sha256);
    CREATE INDEX memories_pinned ON memories (tenant, project, pinned, deleted_at);
    CREATE INDEX memories_deleted ON memories (deleted_at) WHERE deleted_at IS NOT NULL;
    CREATE INDEX memories_pending ON memories (status) WHERE status != 'ready';
    CREATE TABLE projects (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        retention_limit INTEGER,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (tenant, name)
    );
    CREATE TABLE feedback (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        helpful INTEGER NOT NULL,
        context TEXT,
        at REAL NOT NULL
    );
    CREATE INDEX feedback_memory ON feedback (tenant, memory_id);
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        project TEXT NOT NULL,
        action TEXT NOT NULL,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX audit_memory ON audit (tenant, memory_id);
    CREATE TABLE embedding_cache (
        model TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        vector BLOB NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (model, sha256)
    );
    """,
    # 2: a per-project change counter, so a warm index reads only what changed
    """
    ALTER TABLE memories ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE projects ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE projects ADD COLUMN purged_version INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memories_version ON memories (tenant, project, version);
    """,
    # 3: solutions (fixpacks), their applications, patterns, pattern links and their evidence,
    #    job leases and resume points (capsule.store.sqlite_learning)
    """
    CREATE TABLE solutions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        title TEXT NOT NULL,
        category TEXT NOT NULL,
        body TEXT NOT NULL,
        embeddings BLOB,
        signatures INTEGER NOT NULL DEFAULT 0,
        model TEXT,
        success INTEGER NOT NULL DEFAULT 0,
        failure INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX solutions_recent ON solutions (tenant, created_at, id);
    CREATE INDEX solutions_title ON solutions (tenant, title, category);
    CREATE TABLE solution_applications (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        solution_id TEXT NOT NULL,
        success INTEGER NOT NULL,
        project TEXT,
        error TEXT,
        context TEXT,
        at REAL NOT NULL
    );
    CREATE INDEX applications_tenant ON solution_applications (tenant, at);
    CREATE INDEX applications_solution ON solution_applications (tenant, solution_id);
    CREATE TABLE patterns (
        tenant TEXT NOT NULL,
        tag TEXT NOT NULL,
        category TEXT NOT NULL,
        body TEXT NOT NULL,
        occurrences INTEGER NOT NULL,
        embedding BLOB,
        model TEXT,
        first_seen REAL,
        last_seen REAL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (tenant, tag, category)
    );
    CREATE TABLE pattern_links (
        tenant TEXT NOT NULL,
        tag TEXT NOT NULL,
        category TEXT NOT NULL,
        kind TEXT NOT NULL,
        target_id TEXT NOT NULL,
        success INTEGER NOT NULL DEFAULT 0,
        failure INTEGER NOT NULL DEFAULT 0,
        last_at REAL,
        PRIMARY KEY (tenant, tag, category, kind, target_id)
    );
    CREATE INDEX pattern_links_target ON pattern_links (tenant, kind, target_id);
    CREATE TABLE pattern_evidence (
        tenant TEXT NOT NULL,
        tag TEXT NOT NULL,
        category TEXT NOT NULL,
        kind TEXT NOT NULL,
        target_id TEXT NOT NULL,
        evidence TEXT NOT NULL,
        PRIMARY KEY (tenant, tag, category, kind, target_id, evidence)
    );
    CREATE TABLE job_leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE TABLE job_state (
        name TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
    # 4: the dedupe look-up reads one index range (it scanned the last 48 hours of the project)
    """
    DROP INDEX IF EXISTS memories_sha;
    CREATE INDEX memories_dedupe ON memories (tenant, project, sha256, created_at);
    """,
    # 5: what a search index loads, kept at write time (capsule.terms): each memory's keyword
    #    term hashes with the tokenizer version that made them, and its tie-break key; and an
    #    index that reads a project's active rows in order without sorting their vectors
    """
    ALTER TABLE memories ADD COLUMN terms BLOB;
    ALTER TABLE memories ADD COLUMN terms_version TEXT;
    ALTER TABLE memories ADD COLUMN sort_key INTEGER;
    CREATE INDEX memories_load ON memories (tenant, project, deleted_at, seq);
    """,
    # 6: the turn before a memory in its session (capsule.context) in one index probe
    """
    CREATE INDEX memories_session ON memories (tenant, project, json_extract(meta, '$.session'), occurred_at)
        WHERE deleted_at IS NULL;
    """,
    # 7: what an index loads of a row besides its terms and the fields that change, in one blob
    #    kept at write time (capsule.index.pack_row): its tie-break key, times, vector size and
    #    the vector's sign bits; the meta fields ranking reads ('' for none); and an index that
    #    holds all an index load reads, so a large project loads without reading its rows
    """
    ALTER TABLE memories ADD COLUMN packed BLOB;
    ALTER TABLE memories ADD COLUMN facets TEXT;
    CREATE INDEX memories_packed ON memories (tenant, project, deleted_at, seq, id, packed, model, terms_version,
                                              terms, helpful, unhelpful, facets);
    """,
    # 8: governance (capsule.governance): retention class, expiry, supersession, earlier versions
    #    (capsule.store.sqlite_governance)
    sqlite_governance_schema.MIGRATION,
    # 9: visibility and subject of each memory, the tenant's principal scopes
    #    (capsule.store.sqlite_visibility_schema)
    sqlite_visibility_schema.MIGRATION,
    # 10: tenants' wrapped data keys and projects' encryption setting (capsule.crypto)
    sqlite_keys.MIGRATION,
]

# The page size of a new database (see SQLiteStore._conn).
PAGE_SIZE = 8192

# Projects at least this large load their index with sign bits only; the vectors follow.
DEFER_VECTORS_FROM = 20_000

_COLUMNS = (
    "id, tenant, project, content, path, chunk_index, chunk_count, embedding, model, sha256, "
    "occurred_at, created_at, updated_at, accessed_at, pinned, explanation, meta, helpful, "
    "unhelpful, deleted_at, deleted_reason, status, " + sqlite_governance_schema.COLUMNS + ", "
    + sqlite_visibility_schema.COLUMNS
)
# The INSERT of a whole row (sqlite_transfer uses it too): _record_params's values, then the version.
INSERT_MEMORY = (f"INSERT INTO memories ({_COLUMNS}, component, category, terms, terms_version, sort_key, packed, "
                 f"facets, version) VALUES ({', '.join('?' * (len(_COLUMNS.split(',')) + 8))})")


# One probe of the memories_session index (a test checks the plan).
PREVIOUS_IN_SESSION = (
    "SELECT content FROM memories WHERE tenant = ? AND project = ? AND json_extract(meta, '$.session') = ? "
    "AND occurred_at < ? AND deleted_at IS NULL ORDER BY occurred_at DESC, seq DESC LIMIT 1"
)

_NO_VECTOR = _COLUMNS.replace("embedding,", "NULL AS embedding,")


def encode_vector(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype="<f4")


def _rollback(conn: sqlite3.Connection) -> None:
    """Undo the open transaction. SQLite may have rolled it back already (a full disk, an
    I/O error), and then ROLLBACK itself fails: that must not hide the error that caused it."""
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # nothing is committed without COMMIT, and the connection starts afresh next time


def _row_to_record(row: sqlite3.Row) -> MemoryRecord:
    return MemoryRecord(
        id=row["id"],
        tenant=row["tenant"],
        project=row["project"],
        content=row["content"],
        path=row["path"],
        chunk_index=row["chunk_index"],
        chunk_count=row["chunk_count"],
        embedding=decode_vector(row["embedding"]),
        model=row["model"],
        sha256=row["sha256"],
        occurred_at=from_epoch(row["occurred_at"]),
        created_at=from_epoch(row["created_at"]),
        updated_at=from_epoch(row["updated_at"]),
        accessed_at=from_epoch(row["accessed_at"]),
        pinned=bool(row["pinned"]),
        explanation=row["explanation"],
        meta=json.loads(row["meta"]),
        helpful=row["helpful"],
        unhelpful=row["unhelpful"],
        deleted_at=from_epoch(row["deleted_at"]),
        deleted_reason=row["deleted_reason"],
        status=row["status"],
        **sqlite_governance_schema.fields(row),
        **sqlite_visibility_schema.fields(row),
    )


def _record_params(r: MemoryRecord, packed: bytes | None = None) -> tuple[Any, ...]:
    """INSERT_MEMORY's values but the version; ``packed`` is the row's index bytes when the
    caller made them already (sqlite_bulk packs a batch's rows in one pass)."""
    key, occurred, created = stable_key(r.id), to_epoch(r.occurred_at), to_epoch(r.created_at)
    return (
        r.id, r.tenant, r.project, r.content, r.path, r.chunk_index, r.chunk_count,
        encode_vector(r.embedding), r.model, r.sha256, occurred,
        created, to_epoch(r.updated_at), None, int(r.pinned), r.explanation,
        json.dumps(r.meta), r.helpful, r.unhelpful, None, None, r.status,
        *sqlite_governance_schema.params(r),
        *sqlite_visibility_schema.params(r), r.meta.get("component"), r.meta.get("category"),
        terms.encode_record(r), terms.TOKENIZER, key,
        pack_row(key, occurred, created, r.embedding) if packed is None else packed, facets(r.meta),
    )


FACETS = ("session", "author", "outcome_status")  # what an index reads of a memory's meta


def facets(meta: dict[str, Any]) -> str:
    """The meta fields a search index reads, as JSON ('' when there are none)."""
    picked = {name: meta[name] for name in FACETS if name in meta}
    return json.dumps(picked, separators=(",", ":")) if picked else ""


def _create_private(path: str) -> None:
    """Create a new database file readable by its owner only. SQLite gives its journal, WAL
    and shared-memory files the database file's mode, so they are 0600 too."""
    if path == ":memory:" or path.startswith("file:"):
        return
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


class SQLiteStore:
    """The :class:`~capsule.store.base.MemoryStore` on one SQLite file."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0,
                 defer_vectors_from: int = DEFER_VECTORS_FROM) -> None:
        self.path = str(path)
        self.defer_vectors_from = defer_vectors_from
        self._busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._write_locks: list[WriteLock] = []
        self._lock = threading.Lock()
        self._checkpointer = Checkpointer(self._checkpoint)

    # ---- connections and transactions ---------------------------------

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
                queue = lock_path(self.path)
                write_lock = queue and WriteLock(queue)
                if queue:  # checkpoints run in the checkpointer's thread (.sqlite_checkpoint)
                    conn.execute("PRAGMA wal_autocheckpoint = 0")
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
    def _write(self, wait_s: float | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction, queued behind the other writers' (:mod:`.sqlite_lock`)."""
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
            self._checkpointer.committed()

    def _checkpoint(self) -> None:
        """Copy the WAL into the database without waiting for anyone (the checkpointer's thread)."""
        self._conn().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

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

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise Unavailable(f"the database could not be read: {exc}") from exc

    def migrate(self) -> None:
        with self._write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
            # Outside the numbered migrations (nothing depends on its order): a random id for
            # this database, so files derived from it (index snapshots) are never mixed up.
            conn.execute("CREATE TABLE IF NOT EXISTS store_info (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(guard_policies.SQLITE_TABLE)
            sqlite_counts.ensure(conn)
            conn.execute("INSERT OR IGNORE INTO store_info (name, value) VALUES ('identity', ?)",
                         (uuid.uuid4().hex,))

    def identity(self) -> str:
        """A random id made when this database was created (see :mod:`capsule.snapshot`)."""
        return self._read("SELECT value FROM store_info WHERE name = 'identity'")[0]["value"]

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

    # ---- memories ------------------------------------------------------

    def insert(
        self, records: Sequence[MemoryRecord], *, limit: int, dedupe_after: datetime | None, actor: str
    ) -> WriteOutcome:
        outcome = WriteOutcome(limit=limit)
        if not records:
            return outcome
        tenant, project = records[0].tenant, records[0].project
        now = to_epoch(records[0].created_at)
        with self._write() as conn:
            version = self._next_version(conn, tenant, project, now)
            self._insert_rows(conn, records, ((*_record_params(r), version) for r in records), dedupe_after, outcome)
            self._settle_limit(conn, outcome, tenant, project, limit, now, actor, version)
        return outcome

    @staticmethod
    def _next_version(conn: sqlite3.Connection, tenant: str, project: str, now: float) -> int:
        """The project's row made or touched and its next version taken, in one statement."""
        return conn.execute(
            "INSERT INTO projects (tenant, name, created_at, updated_at, version) VALUES (?, ?, ?, ?, 1) "
            "ON CONFLICT (tenant, name) DO UPDATE SET updated_at = excluded.updated_at, version = version + 1 "
            "RETURNING version",
            (tenant, project, now, now),
        ).fetchone()[0]

    def _insert_rows(self, conn: sqlite3.Connection, records: Sequence[MemoryRecord], params: Iterable[tuple],
                     dedupe_after: datetime | None, outcome: WriteOutcome) -> None:
        """INSERT_MEMORY of each record but those a memory already says (since ``dedupe_after``),
        row by row: a match may be a row this very write made."""
        for record, values in zip(records, params):
            existing = self._find_duplicate(conn, record, dedupe_after)
            if existing:
                outcome.duplicates[record.id] = existing
                continue
            conn.execute(INSERT_MEMORY, values)
            outcome.inserted.append(record.id)

    def _settle_limit(self, conn: sqlite3.Connection, outcome: WriteOutcome, tenant: str, project: str, limit: int,
                      now: float, actor: str, version: int) -> None:
        """Evict over the project's limit. The memories this write returns, new or existing, are
        never its own victims."""
        protected = [*outcome.inserted, *outcome.duplicates.values()]
        active = self._active_count(conn, tenant, project)
        outcome.evicted = self._evict_over_limit(conn, tenant, project, limit, now, actor, protected, version,
                                                 active=active, classes=outcome.evicted_classes)
        outcome.active_after = active - len(outcome.evicted)

    def insert_bulk(
        self, records: Sequence[MemoryRecord], *, limit: int, dedupe_after: datetime | None, actor: str
    ) -> WriteOutcome:
        return sqlite_bulk.insert_bulk(self, records, limit=limit, dedupe_after=dedupe_after, actor=actor)

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

    def _find_duplicate(
        self, conn: sqlite3.Connection, record: MemoryRecord, dedupe_after: datetime | None
    ) -> str | None:
        if dedupe_after is None:
            return None
        row = conn.execute(
            "SELECT id FROM memories WHERE tenant = ? AND project = ? AND sha256 = ? "
            "AND deleted_at IS NULL AND created_at >= ? ORDER BY created_at LIMIT 1",
            (record.tenant, record.project, record.sha256, to_epoch(dedupe_after)),
        ).fetchone()
        return row["id"] if row else None

    @staticmethod
    def _active_count(conn: sqlite3.Connection, tenant: str, project: str) -> int:
        return sqlite_counts.active(conn, tenant, project)  # kept by triggers: one probe, no count(*)

    def enforce_limit(self, tenant: str, project: str, *, limit: int, at: datetime, actor: str) -> list[str]:
        with self._write() as conn:
            if self._active_count(conn, tenant, project) <= limit:
                return []
            version = self._bump(conn, tenant, project)
            return self._evict_over_limit(conn, tenant, project, limit, to_epoch(at), actor, [], version)

    def _evict_over_limit(
        self, conn: sqlite3.Connection, tenant: str, project: str, limit: int, now: float,
        actor: str, protected: Sequence[str], version: int, *, active: int | None = None,
        classes: dict[str, str] | None = None,
    ) -> list[str]:
        if active is None:
            active = self._active_count(conn, tenant, project)
        excess = active - limit
        if excess <= 0:
            return []
        marks = ", ".join("?" * len(protected))
        rows = conn.execute(
            "SELECT id, retention FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL "
            f"AND pinned = 0 AND {sqlite_governance_schema.EVICTABLE} AND id NOT IN ({marks}) "
            "ORDER BY created_at, seq LIMIT ?",
            (tenant, project, *protected, excess),
        ).fetchall()
        evicted = [row["id"] for row in rows]
        for row in rows:
            memory_id, klass = row["id"], effective_class(row["retention"], False)
            if classes is not None:
                classes[memory_id] = klass
            reason = "evicted: " + eviction_reason(limit, klass)
            conn.execute(
                "UPDATE memories SET deleted_at = ?, deleted_reason = 'evicted', updated_at = ?, version = ? "
                "WHERE id = ?",
                (now, now, version, memory_id),
            )
            self._audit(conn, tenant, memory_id, project, "evict", actor, reason, now)
        return evicted

    @staticmethod
    def _audit(conn, tenant, memory_id, project, action, actor, reason, at) -> None:
        conn.execute(
            "INSERT INTO audit (tenant, memory_id, project, action, actor, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (tenant, memory_id, project, action, actor, reason, at),
        )

    @staticmethod
    def as_stored(record: MemoryRecord) -> MemoryRecord:
        """A record just inserted as :meth:`get` would read it back, without reading it: its
        times as stored (UTC, to the microsecond), everything else as written."""
        def stored(value: datetime | None) -> datetime | None:
            return None if value is None else from_epoch(to_epoch(value))

        return replace(record, occurred_at=stored(record.occurred_at), created_at=stored(record.created_at),
                       updated_at=stored(record.updated_at), expires_at=stored(record.expires_at),
                       accessed_at=None, deleted_at=None, deleted_reason=None)

    def get(self, tenant: str, memory_id: str, *, include_forgotten: bool = False) -> MemoryRecord:
        rows = self._read(f"SELECT {_COLUMNS} FROM memories WHERE tenant = ? AND id = ?", (tenant, memory_id))
        if not rows or (rows[0]["deleted_at"] is not None and not include_forgotten):
            raise NotFound(f"no memory {memory_id}")
        return _row_to_record(rows[0])

    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> list[str]:
        # A range on the id index (LIKE would fold case and read '_' as a wildcard).
        rows = self._read("SELECT id FROM memories WHERE +tenant = ? AND id >= ? AND id < ? ORDER BY id LIMIT ?",
                          (tenant, prefix, prefix + "\U0010ffff", limit))
        return [row["id"] for row in rows if row["id"].startswith(prefix)]

    def get_many(self, tenant: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """The memories with these ids, forgotten ones included, without their vectors; unknown ids are left out."""
        found: list[MemoryRecord] = []
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            part = unique[start:start + 500]
            # "+tenant": look the ids up by their unique index, not the tenant's whole range.
            rows = self._read(f"SELECT {_NO_VECTOR} FROM memories WHERE +tenant = ? "
                              f"AND id IN ({', '.join('?' * len(part))})", (tenant, *part))
            found.extend(_row_to_record(row) for row in rows)
        return found

    def list(
        self, tenant: str, project: str, *, pinned_only: bool, after: Cursor | None, limit: int,
        retention: str | None = None,
        forgotten: bool = False,
        visibility: Sequence[str] = (), subjects: Sequence[str] = (),
    ) -> list[MemoryRecord]:
        state = "IS NOT NULL" if forgotten else "IS NULL"  # memories_recent serves both
        sql = f"SELECT {_COLUMNS} FROM memories WHERE tenant = ? AND project = ? AND deleted_at {state}"
        params: list[Any] = [tenant, project]
        if pinned_only:
            sql += " AND pinned = 1"
        by_class, class_params = sqlite_governance_schema.class_filter(retention)
        sql += by_class
        params += class_params
        seen, seen_params = sqlite_visibility_schema.list_filter(visibility, subjects)
        sql += seen
        params += seen_params
        if after is not None:
            sql += " AND (created_at < ? OR (created_at = ? AND id < ?))"
            params += [after[0], after[0], after[1]]
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        return [_row_to_record(row) for row in self._read(sql, [*params, limit])]

    def previous_in_session(self, tenant: str, project: str, session: str | int, *, before: datetime) -> str | None:
        rows = self._read(PREVIOUS_IN_SESSION, (tenant, project, session, to_epoch(before)))
        return rows[0]["content"] if rows else None

    @staticmethod
    def _missing(conn: sqlite3.Connection, tenant: str, memory_id: str, forgotten: bool) -> NotFound | Conflict:
        """Restoring a memory that is there but not forgotten is a conflict, not a missing memory."""
        live = forgotten and conn.execute("SELECT 1 FROM memories WHERE tenant = ? AND id = ? AND deleted_at IS NULL",
                                          (tenant, memory_id)).fetchone()
        if live:
            return Conflict(f"memory {memory_id} is not forgotten; there is nothing to restore")
        return NotFound(f"no {'forgotten ' if forgotten else ''}memory {memory_id}")

    def _change(self, tenant: str, memory_id: str, sql: str, params: Sequence[Any], *,
                forgotten: bool = False, audit: tuple[str, str, str, float] | None = None,
                also: tuple[str, Sequence[Any]] | None = None) -> MemoryRecord:
        state = "IS NOT NULL" if forgotten else "IS NULL"
        with self._write() as conn:
            row = conn.execute(
                f"SELECT project FROM memories WHERE tenant = ? AND id = ? AND deleted_at {state}",
                (tenant, memory_id),
            ).fetchone()
            if row is None:
                raise self._missing(conn, tenant, memory_id, forgotten)
            conn.execute(sql, (*params, tenant, memory_id))
            conn.execute("UPDATE memories SET version = ? WHERE tenant = ? AND id = ?",
                         (self._bump(conn, tenant, row["project"]), tenant, memory_id))
            if audit:
                self._audit(conn, tenant, memory_id, row["project"], *audit)
            if also:
                conn.execute(*also)
        # include_forgotten: after a forget the memory is forgotten, and forget returns it.
        return self.get(tenant, memory_id, include_forgotten=True)

    def set_pinned(self, tenant: str, memory_id: str, pinned: bool, *, at: datetime, actor: str) -> MemoryRecord:
        action = "pin" if pinned else "unpin"
        return self._change(
            tenant, memory_id,
            "UPDATE memories SET pinned = ?, updated_at = ? WHERE tenant = ? AND id = ?",
            (int(pinned), to_epoch(at)),
            audit=(action, actor, f"{action}ned by request", to_epoch(at)),
        )

    def forget(self, tenant: str, memory_id: str, *, at: datetime, actor: str, reason: str) -> MemoryRecord:
        return self._change(
            tenant, memory_id,
            "UPDATE memories SET deleted_at = ?, deleted_reason = 'forgotten', updated_at = ? "
            "WHERE tenant = ? AND id = ?",
            (to_epoch(at), to_epoch(at)),
            audit=("forget", actor, reason, to_epoch(at)),
        )

    def restore(self, tenant: str, memory_id: str, *, at: datetime, actor: str) -> MemoryRecord:
        return self._change(
            tenant, memory_id,
            "UPDATE memories SET deleted_at = NULL, deleted_reason = NULL, updated_at = ? "
            "WHERE tenant = ? AND id = ?",
            (to_epoch(at),),
            forgotten=True,
            audit=("restore", actor, "restored by request", to_epoch(at)),
        )

    def add_feedback(
        self, tenant: str, memory_id: str, *, helpful: bool, context: str | None, at: datetime
    ) -> MemoryRecord:
        column = "helpful" if helpful else "unhelpful"
        return self._change(
            tenant, memory_id,
            f"UPDATE memories SET {column} = {column} + 1, accessed_at = ? WHERE tenant = ? AND id = ?",
            (to_epoch(at),),
            also=(
                "INSERT INTO feedback (tenant, memory_id, helpful, context, at) VALUES (?, ?, ?, ?, ?)",
                (tenant, memory_id, int(helpful), context, to_epoch(at)),
            ),
        )

    def candidates(self, tenant: str, projects: Sequence[str] | None, filters: Filters) -> list[MemoryRecord]:
        sql = f"SELECT {_COLUMNS} FROM memories WHERE tenant = ? AND deleted_at IS NULL"
        params: list[Any] = [tenant]
        if projects is not None:
            sql += f" AND project IN ({', '.join('?' * len(projects))})"
            params += list(projects)
        if filters.component:
            sql += " AND component = ?"
            params.append(filters.component)
        if filters.category:
            sql += " AND category = ?"
            params.append(filters.category)
        for tag in filters.tags:
            sql += " AND EXISTS (SELECT 1 FROM json_each(meta, '$.tags') WHERE value = ?)"
            params.append(tag)
        if filters.path_prefix:
            sql += " AND substr(path, 1, ?) = ?"
            params += [len(filters.path_prefix), filters.path_prefix]
        if filters.since:
            sql += " AND occurred_at >= ?"
            params.append(to_epoch(filters.since))
        if filters.until:
            sql += " AND occurred_at < ?"
            params.append(to_epoch(filters.until))
        return [_row_to_record(row) for row in self._read(sql, params)]

    # ---- change tracking (the warm index) -------------------------------

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

    def change_markers(self, tenant: str, projects: Sequence[str] | None) -> dict[str, int]:
        sql, params = "SELECT name, version FROM projects WHERE tenant = ?", [tenant]
        if projects is not None:
            sql += f" AND name IN ({', '.join('?' * len(projects))})"
            params += list(projects)
        return {row["name"]: row["version"] for row in self._read(sql, params)}

    def changes_since(self, tenant: str, project: str, since: int, *, columns: bool = False) -> ChangeSet:
        with self._snapshot() as conn:
            row = conn.execute("SELECT version, purged_version FROM projects WHERE tenant = ? AND name = ?",
                               (tenant, project)).fetchone()
            if row is None:
                return ChangeSet(version=0, reset=True)
            if since <= 0 or since < row["purged_version"] or since > row["version"]:
                if columns:
                    loaded, stale = self._index_columns(conn, tenant, project)
                else:
                    rows = conn.execute(
                        f"SELECT {_COLUMNS} FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL "
                        "ORDER BY seq", (tenant, project)).fetchall()
                    return ChangeSet(version=row["version"], changed=[_row_to_record(r) for r in rows], reset=True)
            else:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE tenant = ? AND project = ? AND version > ? ORDER BY seq",
                    (tenant, project, since)).fetchall()
                loaded = None
        if loaded is not None:
            self._store_derived(stale)
            return ChangeSet(version=row["version"], columns=loaded, reset=True)
        changes = ChangeSet(version=row["version"])
        for r in rows:
            if r["deleted_at"] is None:
                changes.changed.append(_row_to_record(r))
            else:
                changes.removed.append(r["id"])
        return changes

    def _index_columns(self, conn: sqlite3.Connection, tenant: str, project: str
                       ) -> tuple[IndexColumns, list[tuple[str, tuple]]]:
        """Every active row of the project as the columns an index needs, in one read.

        A project of at least ``defer_vectors_from`` rows comes as packed rows (key, times,
        vector size, sign bits: :func:`capsule.index.pack_row`) without its vectors, which
        ``IndexColumns.deferred`` reads later: reading and placing 4 KB per row is most of the
        time a full load takes, and a first search needs only the sign bits and its
        candidates' vectors. A smaller one comes with its vectors, read in chunks, each
        chunk's vectors appended to one buffer, so they are held once.

        Derived data a row lacks or holds from an older version (term hashes made by another
        tokenizer version, the packed row of a row written before it was kept) is recomputed
        and returned as updates, to be stored for next time.
        """
        where = "WHERE tenant = ? AND project = ? AND deleted_at IS NULL"
        count = conn.execute(f"SELECT count(*) FROM memories INDEXED BY memories_load {where}",
                             (tenant, project)).fetchone()[0]
        defer = count >= self.defer_vectors_from
        cursor = conn.cursor()
        cursor.row_factory = None  # plain tuples: a Row per memory costs more than the read
        if defer:
            # Everything from the index memories_packed: the rows themselves (4 KB of vector
            # each) are read only for what a row lacks (content for stale term hashes, meta
            # where its facets were never kept), which SQLite looks up only when asked.
            columns = "id, packed"
            meta = "CASE WHEN facets IS NULL THEN '!' || meta ELSE nullif(facets, '') END"
            source = "FROM memories INDEXED BY memories_packed"
        else:
            columns = "id, sort_key, embedding, occurred_at, created_at"
            meta = "CASE WHEN meta = '{}' THEN NULL ELSE meta END"
            source = "FROM memories"
        cursor.execute(
            f"SELECT {columns}, model, CASE WHEN terms_version = ? THEN terms END, "
            f"CASE WHEN terms_version IS ? THEN NULL ELSE content END, helpful, unhelpful, {meta} "
            f"{source} {where} ORDER BY seq", (terms.TOKENIZER, terms.TOKENIZER, tenant, project))
        out = IndexColumns([], [], bytearray(), [], [], [], [], [], [], [], [])
        packed: list[bytes | None] = []
        stale: list[tuple[str, tuple]] = []
        collecting = gc.isenabled()
        gc.disable()  # a collection every few hundred row tuples would scan them all again and again
        try:
            while chunk := cursor.fetchmany(4096):
                if defer:
                    ids, rows, *rest = zip(*chunk)
                    packed += rows
                    keys = None
                else:
                    ids, keys, blobs, occurred, created, *rest = zip(*chunk)
                    out.vectors += bytearray().join(b for b in blobs if b is not None)
                    out.vector_sizes += [0 if b is None else len(b) for b in blobs]
                    out.occurred += occurred
                    out.created += created
                models, hashed, contents, helpful, unhelpful, metas = rest
                hashed = list(hashed)
                if contents.count(None) != len(contents) or (keys is not None and None in keys):
                    keys = list(keys or [stable_key(i) for i in ids])
                    self._refresh(ids, keys, hashed, contents, stale)
                out.ids += ids
                if not defer:
                    out.keys += keys
                out.models += models
                out.terms += hashed
                out.helpful += helpful
                out.unhelpful += unhelpful
                if defer and metas.count(None) != len(metas) and any(m is not None and m[0] == "!" for m in metas):
                    metas = self._refacet(ids, metas, stale)
                out.metas += [None if meta is None else json.loads(meta) for meta in metas]
            if defer:
                self._repack(conn, tenant, out.ids, packed, stale)
                out.packed = bytearray().join(packed)
                out.packed_lengths = list(map(len, packed))
                out.deferred = _DeferredVectors(self, tenant, project)
        finally:
            if collecting:
                gc.enable()
        return out, stale

    @staticmethod
    def _refacet(ids: Sequence[str], metas: Sequence[str | None], stale: list[tuple[str, tuple]]) -> list[str | None]:
        """Facets for rows written before they were kept (their whole meta came, marked "!")."""
        out: list[str | None] = []
        for memory_id, meta in zip(ids, metas):
            if meta is not None and meta[0] == "!":
                meta = facets(json.loads(meta[1:]))
                stale.append(("UPDATE memories SET facets = ? WHERE id = ? AND facets IS NULL", (meta, memory_id)))
            out.append(meta or None)
        return out

    @staticmethod
    def _repack(conn: sqlite3.Connection, tenant: str, ids: list[str], packed: list[bytes | None],
                stale: list[tuple[str, tuple]]) -> None:
        """Packed rows for the rows that lack one (written before they were kept)."""
        missing = [i for i, row in enumerate(packed) if row is None] if None in packed else []
        for start in range(0, len(missing), 500):
            part = missing[start:start + 500]
            found = {row[0]: row[1:] for row in conn.execute(
                "SELECT id, sort_key, occurred_at, created_at, embedding FROM memories WHERE +tenant = ? "
                f"AND id IN ({', '.join('?' * len(part))})", (tenant, *[ids[i] for i in part]))}
            for i in part:
                key, occurred, created, blob = found[ids[i]]
                vector = None if blob is None else np.frombuffer(blob, dtype="<f4")
                packed[i] = pack_row(stable_key(ids[i]) if key is None else key, occurred, created, vector)
                # Only where still missing: a vector set meanwhile came with its own packed row.
                stale.append(("UPDATE memories SET packed = ? WHERE id = ? AND packed IS NULL", (packed[i], ids[i])))

    @staticmethod
    def _refresh(ids: Sequence[str], keys: list[int | None], hashed: list[bytes | None],
                 contents: Sequence[str | None], stale: list[tuple[str, tuple]]) -> None:
        """Tie-break keys and term hashes for rows that lack them or hold another tokenizer's."""
        for i, content in enumerate(contents):
            if keys[i] is None:
                keys[i] = stable_key(ids[i])
            if content is not None:
                hashed[i] = terms.encode(content)
                stale.append(("UPDATE memories SET terms = ?, terms_version = ?, sort_key = ? WHERE id = ?",
                              (hashed[i], terms.TOKENIZER, keys[i], ids[i])))

    def _store_derived(self, stale: list[tuple[str, tuple]]) -> None:
        """Keep recomputed term hashes and sign bits; derived data, so no version bump, and a
        busy database only means they are recomputed next time."""
        if not stale:
            return
        conn = self._conn()
        conn.execute("PRAGMA busy_timeout = 200")  # a search does not wait on another writer for this
        try:
            by_statement: dict[str, list[tuple]] = {}
            for sql, params in stale:
                by_statement.setdefault(sql, []).append(params)
            with self._write(wait_s=0.2) as conn:
                for sql, rows in by_statement.items():
                    conn.executemany(sql, rows)
        except Unavailable:
            pass
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")

    # ---- projects and audit --------------------------------------------

    def tenants(self) -> list[str]:
        return [row["tenant"] for row in self._read("SELECT DISTINCT tenant FROM projects ORDER BY tenant")]

    def projects(self, tenant: str) -> list[ProjectStats]:
        rows = self._read(
            """
            SELECT p.name AS project, p.retention_limit AS retention_limit,
                   count(m.id) FILTER (WHERE m.deleted_at IS NULL) AS memories,
                   count(m.id) FILTER (WHERE m.deleted_at IS NULL AND m.pinned = 1) AS pinned,
                   count(m.id) FILTER (WHERE m.deleted_at IS NOT NULL) AS forgotten,
                   max(coalesce(max(m.updated_at), p.updated_at), p.updated_at) AS last_activity
            FROM projects p LEFT JOIN memories m ON m.tenant = p.tenant AND m.project = p.name
            WHERE p.tenant = ? GROUP BY p.name ORDER BY last_activity DESC
            """,
            (tenant,),
        )
        return [
            ProjectStats(
                project=row["project"], memories=row["memories"], pinned=row["pinned"],
                forgotten=row["forgotten"], retention_limit=row["retention_limit"],
                last_activity=from_epoch(row["last_activity"]),
            )
            for row in rows
        ]

    def set_retention_limit(self, tenant: str, project: str, limit: int, *, at: datetime) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO projects (tenant, name, retention_limit, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant, name) DO UPDATE SET retention_limit = excluded.retention_limit, "
                "updated_at = excluded.updated_at",
                (tenant, project, limit, to_epoch(at), to_epoch(at)),
            )

    def retention_limit(self, tenant: str, project: str) -> int | None:
        rows = self._read("SELECT retention_limit FROM projects WHERE tenant = ? AND name = ?", (tenant, project))
        return rows[0]["retention_limit"] if rows else None

    def set_guard_policies(self, tenant: str, project: str, values: dict[str, str], *, at: datetime) -> None:
        with self._write() as conn:
            guard_policies.sqlite_set(conn, tenant, project, values, to_epoch(at))

    def guard_policies(self, tenant: str, project: str) -> dict[str, str | None]:
        rows = self._read(guard_policies.SQLITE_GET, (tenant, project))
        return guard_policies.from_row(rows[0] if rows else None)

    def audit_log(self, tenant: str, *, memory_id: str | None = None, limit: int = 100) -> list[AuditRecord]:
        sql, params = "SELECT * FROM audit WHERE tenant = ?", [tenant]
        if memory_id:
            sql += " AND memory_id = ?"
            params.append(memory_id)
        rows = self._read(sql + " ORDER BY id DESC LIMIT ?", [*params, limit])
        return [
            AuditRecord(
                tenant=r["tenant"], memory_id=r["memory_id"], project=r["project"], action=r["action"],
                actor=r["actor"], reason=r["reason"], at=from_epoch(r["at"]),
            )
            for r in rows
        ]

    # ---- jobs ------------------------------------------------------------

    def purge_forgotten(self, *, before: datetime, at: datetime | None = None) -> int:
        when = to_epoch(at or before)
        with self._write() as conn:
            # Superseded memories are kept (history), not purged as forgotten ones.
            kept = "AND deleted_reason IS NOT 'superseded'"
            rows = conn.execute(
                f"SELECT tenant, id, project FROM memories WHERE deleted_at IS NOT NULL AND deleted_at < ? {kept}",
                (to_epoch(before),),
            ).fetchall()
            for row in rows:
                self._audit(conn, row["tenant"], row["id"], row["project"], "purge", "retention",
                            "forgotten longer than the recovery window", when)
            for tenant, project in {(row["tenant"], row["project"]) for row in rows}:
                # Purged rows leave no tombstone: a reader older than this must reload.
                version = self._bump(conn, tenant, project)
                conn.execute("UPDATE projects SET purged_version = ? WHERE tenant = ? AND name = ?",
                             (version, tenant, project))
            conn.execute(f"DELETE FROM memories WHERE deleted_at IS NOT NULL AND deleted_at < ? {kept}",
                         (to_epoch(before),))
            sqlite_governance_schema.drop_versions(conn, [(row["tenant"], row["id"]) for row in rows])
        return len(rows)

    def pending_embeddings(self, *, limit: int, model: str | None = None) -> list[MemoryRecord]:
        sql = f"SELECT {_COLUMNS} FROM memories WHERE deleted_at IS NULL AND (status = 'pending_embedding'"
        params: list[Any] = []
        if model is not None:
            sql += " OR model IS NULL OR model != ?"
            params.append(model)
        rows = self._read(sql + ") ORDER BY seq LIMIT ?", (*params, limit))
        return [_row_to_record(row) for row in rows]

    def set_embedding(self, tenant: str, memory_id: str, embedding: np.ndarray, model: str) -> None:
        with self._write() as conn:
            row = conn.execute("SELECT project, occurred_at, created_at FROM memories WHERE tenant = ? AND id = ?",
                               (tenant, memory_id)).fetchone()
            if row is None:
                raise NotFound(f"no memory {memory_id}")
            packed = pack_row(stable_key(memory_id), row["occurred_at"], row["created_at"], embedding)
            conn.execute(
                "UPDATE memories SET embedding = ?, packed = ?, model = ?, status = 'ready', version = ? "
                "WHERE tenant = ? AND id = ?",
                (encode_vector(embedding), packed, model, self._bump(conn, tenant, row["project"]),
                 tenant, memory_id),
            )

    def cache_get(self, model: str, sha256s: Sequence[str], *, fresh_after: datetime) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        keys = list(dict.fromkeys(sha256s))
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            rows = self._read(
                f"SELECT sha256, vector FROM embedding_cache WHERE model = ? AND created_at >= ? "
                f"AND sha256 IN ({', '.join('?' * len(part))})",
                (model, to_epoch(fresh_after), *part),
            )
            found.update({row["sha256"]: decode_vector(row["vector"]) for row in rows})
        return found

    def cache_put(self, model: str, vectors: dict[str, np.ndarray], *, at: datetime) -> None:
        if not vectors:
            return
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache (model, sha256, vector, created_at) VALUES (?, ?, ?, ?)",
                [(model, sha, encode_vector(vec), to_epoch(at)) for sha, vec in vectors.items()],
            )

    def cache_purge(self, *, before: datetime) -> int:
        with self._write() as conn:
            return conn.execute("DELETE FROM embedding_cache WHERE created_at < ?", (to_epoch(before),)).rowcount


class _DeferredVectors:
    """The vectors of one project, read when an index loaded with sign bits asks for them."""

    def __init__(self, store: SQLiteStore, tenant: str, project: str) -> None:
        self.store, self.tenant, self.project = store, tenant, project

    def some(self, ids: Sequence[str], model: str | None) -> dict[str, bytes]:
        # Forgotten rows too: an index may still hold one whose forgetting it has not read yet.
        found: dict[str, bytes] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start:start + 500])
            rows = self.store._read(
                # "+": look the ids up by their unique index, not the tenant's whole range.
                f"SELECT id, embedding FROM memories WHERE +tenant = ? AND +model IS ? AND embedding IS NOT NULL "
                f"AND id IN ({', '.join('?' * len(part))})", (self.tenant, model, *part))
            found.update((row[0], row[1]) for row in rows)
        return found

    def chunks(self, model: str | None) -> Iterator[list[tuple[str, bytes]]]:
        try:
            cursor = self.store._conn().cursor()
            cursor.row_factory = None
            cursor.execute(
                "SELECT id, embedding FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL "
                "AND model IS ? AND embedding IS NOT NULL ORDER BY seq", (self.tenant, self.project, model))
            while chunk := cursor.fetchmany(2048):
                yield chunk
        except sqlite3.Error as exc:
            raise Unavailable(f"the database could not be read: {exc}") from exc
