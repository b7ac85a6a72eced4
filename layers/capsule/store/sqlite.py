"""The embedded store: one SQLite file in WAL mode, safe across threads and processes.

Each thread gets its own connection. Every write runs in ``BEGIN IMMEDIATE``, so two
processes storing into one project serialise on the database's write lock and the
retention check inside the transaction sees the other's rows: nobody evicts more than
needed; writers queue for it on an ``flock`` (:mod:`.sqlite_lock`), not in SQLite's busy
handler, and the WAL is checkpointed by a thread (:mod:`.sqlite_checkpoint`), not inside a
store's COMMIT (WRITES.md says why, with numbers). Embeddings are float32 BLOBs. The schema is
versioned with ``PRAGMA user_version`` (:mod:`.sqlite_schema`).

This module holds construction, migration and the insert path (dedupe, the retention limit);
the rest of the contract lives beside it, one part per module, sharing the connections of
:mod:`.sqlite_connection`: :mod:`.sqlite_reads`, :mod:`.sqlite_changes` (one memory's pin,
forget, restore, feedback), :mod:`.sqlite_index_columns` (what a warm index loads),
:mod:`.sqlite_projects` (projects and audit), :mod:`.sqlite_jobs`; rows are encoded by
:mod:`.sqlite_rows`.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.clock import from_epoch, to_epoch
from ..core.records import MemoryRecord, WriteOutcome
from ..core.retention import effective_class, eviction_reason
from . import guard_policies, sqlite_bulk, sqlite_counts, sqlite_governance_schema
from .sqlite_changes import SQLiteChanges
from .sqlite_index_columns import DEFER_VECTORS_FROM, SQLiteIndexColumns
from .sqlite_jobs import SQLiteJobs
from .sqlite_projects import SQLiteProjects
from .sqlite_reads import SQLiteReads
from .sqlite_rows import INSERT_MEMORY, record_params
from .sqlite_schema import CONTENT_KEY, MIGRATIONS, content_key

# The dedupe look-up: one range of ``memories_content`` (the rows sharing the hash's first 64
# bits), each row's whole hash, tenant, project and time checked on it. "+sha256", not
# "sha256": with a plain ``sha256 = ?`` beside it, SQLite's constant propagation (3.40, the
# Python 3.11-3.13 builds' SQLite) rewrites the indexed ``substr(sha256, 1, 16)`` into
# ``substr(?, 1, 16)``, which no longer names the index's expression, and the forced index was
# scanned whole: every active memory of every tenant, on every store (issue 32). The unary
# plus makes the column an expression the propagation leaves alone; the newest SQLite plans
# both spellings the same (tests/store/test_query_plans.py checks the plan of every statement).
DEDUPE_LOOKUP = (
    f"SELECT id FROM memories INDEXED BY memories_content WHERE {CONTENT_KEY} = ? AND deleted_at IS NULL "
    "AND +sha256 = ? AND tenant = ? AND project = ? AND created_at >= ? ORDER BY created_at LIMIT 1"
)


class SQLiteStore(SQLiteReads, SQLiteChanges, SQLiteIndexColumns, SQLiteProjects, SQLiteJobs):
    """The :class:`~capsule.store.base.MemoryStore` on one SQLite file."""

    def __init__(
        self, path: str | Path, *, busy_timeout_s: float = 30.0, defer_vectors_from: int = DEFER_VECTORS_FROM
    ) -> None:
        super().__init__(path, busy_timeout_s=busy_timeout_s)
        self.defer_vectors_from = defer_vectors_from

    def migrate(self) -> None:
        with self._write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                if callable(script):
                    script(conn)
                else:
                    for statement in filter(str.strip, script.split(";")):
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
            # Outside the numbered migrations (nothing depends on its order): a random id for
            # this database, so files derived from it (index snapshots) are never mixed up.
            conn.execute("CREATE TABLE IF NOT EXISTS store_info (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(guard_policies.SQLITE_TABLE)
            sqlite_counts.ensure(conn)
            conn.execute("INSERT OR IGNORE INTO store_info (name, value) VALUES ('identity', ?)", (uuid.uuid4().hex,))
        # One checkout, one project (capsule.core.project_identity): split names merged, once per database.
        self.settle_identity(at=datetime.now(UTC))

    def identity(self) -> str:
        """A random id made when this database was created (see :mod:`capsule.search.snapshot`)."""
        return self._read("SELECT value FROM store_info WHERE name = 'identity'")[0]["value"]

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
            self._insert_rows(conn, records, ((*record_params(r), version) for r in records), dedupe_after, outcome)
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

    def _insert_rows(
        self,
        conn: sqlite3.Connection,
        records: Sequence[MemoryRecord],
        params: Iterable[tuple],
        dedupe_after: datetime | None,
        outcome: WriteOutcome,
    ) -> None:
        """INSERT_MEMORY of each record but those a memory already says (since ``dedupe_after``),
        row by row: a match may be a row this very write made."""
        for record, values in zip(records, params):
            existing = self._find_duplicate(conn, record, dedupe_after)
            if existing:
                outcome.duplicates[record.id] = existing
                continue
            conn.execute(INSERT_MEMORY, values)
            outcome.inserted.append(record.id)

    def _settle_limit(
        self,
        conn: sqlite3.Connection,
        outcome: WriteOutcome,
        tenant: str,
        project: str,
        limit: int,
        now: float,
        actor: str,
        version: int,
    ) -> None:
        """Evict over the project's limit. The memories this write returns, new or existing, are
        never its own victims."""
        protected = [*outcome.inserted, *outcome.duplicates.values()]
        active = self._active_count(conn, tenant, project)
        outcome.evicted = self._evict_over_limit(
            conn, tenant, project, limit, now, actor, protected, version, active=active, classes=outcome.evicted_classes
        )
        outcome.active_after = active - len(outcome.evicted)

    def insert_bulk(
        self, records: Sequence[MemoryRecord], *, limit: int, dedupe_after: datetime | None, actor: str
    ) -> WriteOutcome:
        return sqlite_bulk.insert_bulk(self, records, limit=limit, dedupe_after=dedupe_after, actor=actor)

    def _find_duplicate(
        self, conn: sqlite3.Connection, record: MemoryRecord, dedupe_after: datetime | None
    ) -> str | None:
        if dedupe_after is None:
            return None
        row = conn.execute(
            DEDUPE_LOOKUP,
            (content_key(record.sha256), record.sha256, record.tenant, record.project, to_epoch(dedupe_after)),
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
        self,
        conn: sqlite3.Connection,
        tenant: str,
        project: str,
        limit: int,
        now: float,
        actor: str,
        protected: Sequence[str],
        version: int,
        *,
        active: int | None = None,
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
                "WHERE tenant = ? AND id = ?",
                (now, now, version, tenant, memory_id),
            )
            self._audit(conn, tenant, memory_id, project, "evict", actor, reason, now)
        return evicted

    @staticmethod
    def as_stored(record: MemoryRecord) -> MemoryRecord:
        """A record just inserted as :meth:`get` would read it back, without reading it: its
        times as stored (UTC, to the microsecond), everything else as written."""

        def stored(value: Any) -> Any:  # datetime -> datetime, None -> None
            return None if value is None else from_epoch(to_epoch(value))

        return replace(
            record,
            occurred_at=stored(record.occurred_at),
            created_at=stored(record.created_at),
            updated_at=stored(record.updated_at),
            expires_at=stored(record.expires_at),
            accessed_at=None,
            deleted_at=None,
            deleted_reason=None,
        )
