"""The governance columns of the SQLite ``memories`` row and their migration (schema 8).

Kept apart from :mod:`.sqlite` so the row's governance part is in one place: the columns,
how a record's fields become parameters and back, and the SQL tests the store's queries use.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..core.clock import from_epoch, to_epoch
from ..core.records import MemoryRecord
from ..core.retention import NEVER_EVICTED

MIGRATION = """
    ALTER TABLE memories ADD COLUMN retention TEXT NOT NULL DEFAULT 'auto';
    ALTER TABLE memories ADD COLUMN expires_at REAL;
    ALTER TABLE memories ADD COLUMN supersedes TEXT;
    ALTER TABLE memories ADD COLUMN superseded_by TEXT;
    CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL AND deleted_at IS NULL;
    ALTER TABLE projects ADD COLUMN ephemeral_ttl INTEGER;
    CREATE INDEX memories_class ON memories (tenant, project, retention, pinned, deleted_at, created_at, id);
    CREATE TABLE memory_versions (
        tenant TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        number INTEGER NOT NULL,
        project TEXT NOT NULL,
        content TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        path TEXT,
        explanation TEXT,
        meta TEXT NOT NULL,
        retention TEXT NOT NULL,
        expires_at REAL,
        pinned INTEGER NOT NULL,
        created_at REAL NOT NULL,
        replaced_at REAL NOT NULL,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (tenant, memory_id, number)
    )
"""

COLUMNS = "retention, expires_at, supersedes, superseded_by"

# Not evicted by the rolling limit whatever its pin (auto and pinned is excluded by pinned = 0).
EVICTABLE = f"retention NOT IN ({', '.join(repr(c) for c in NEVER_EVICTED)})"

# A memory's effective class as SQL (capsule.core.retention.effective_class).
EFFECTIVE_SQL = (
    "CASE WHEN retention = 'auto' THEN CASE WHEN pinned = 1 THEN 'irreplaceable' "
    "ELSE 'replaceable' END ELSE retention END"
)


def params(r: MemoryRecord) -> tuple[Any, ...]:
    """The governance columns' values, in :data:`COLUMNS` order."""
    return (
        r.retention or "auto",
        None if r.expires_at is None else to_epoch(r.expires_at),
        r.supersedes,
        r.superseded_by,
    )


def fields(row: sqlite3.Row) -> dict[str, Any]:
    """The governance fields of a record read with :data:`COLUMNS`."""
    return {
        "retention": row["retention"],
        "expires_at": from_epoch(row["expires_at"]),
        "supersedes": row["supersedes"],
        "superseded_by": row["superseded_by"],
    }


def class_filter(retention: str | None) -> tuple[str, list[Any]]:
    """A WHERE fragment (and its parameters) for memories of an effective class."""
    if retention is None:
        return "", []
    if retention in ("irreplaceable", "replaceable"):
        pinned = 1 if retention == "irreplaceable" else 0
        return " AND (retention = ? OR (retention = 'auto' AND pinned = ?))", [retention, pinned]
    return " AND retention = ?", [retention]


def drop_versions(conn: sqlite3.Connection, memories: list[tuple[str, str]]) -> None:
    """Delete the earlier versions of memories purged for good (nothing of them stays)."""
    conn.executemany("DELETE FROM memory_versions WHERE tenant = ? AND memory_id = ?", memories)
