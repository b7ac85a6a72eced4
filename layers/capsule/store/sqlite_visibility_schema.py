"""The visibility columns of the SQLite ``memories`` row, their migration (schema 9), and the
tenant's principal scopes (capsule.governance.visibility, functions.scopes).

Kept apart from :mod:`.sqlite` so the row's visibility part is in one place: the columns, how a
record's fields become parameters and back, and the SQL the store's list adds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ..core.records import MemoryRecord

MIGRATION = """
    ALTER TABLE memories ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private';
    ALTER TABLE memories ADD COLUMN subject TEXT;
    CREATE INDEX memories_visibility ON memories (tenant, project, visibility, deleted_at, created_at, id);
    CREATE INDEX memories_subject ON memories (tenant, project, subject, deleted_at, created_at, id)
        WHERE subject IS NOT NULL;
    CREATE TABLE principal_scopes (
        tenant TEXT PRIMARY KEY,
        rules TEXT NOT NULL,
        updated_at REAL NOT NULL
    )
"""

COLUMNS = "visibility, subject"


def params(r: MemoryRecord) -> tuple[Any, ...]:
    """The visibility columns' values, in :data:`COLUMNS` order."""
    return (r.visibility or "private", r.subject)


def fields(row: sqlite3.Row) -> dict[str, Any]:
    return {"visibility": row["visibility"], "subject": row["subject"]}


def list_filter(visibility: Sequence[str], subjects: Sequence[str]) -> tuple[str, list[Any]]:
    """A WHERE fragment (and its parameters) for memories of these visibilities and subjects."""
    sql, values = "", []
    if visibility:
        sql += f" AND visibility IN ({', '.join('?' * len(visibility))})"
        values += list(visibility)
    if subjects:
        sql += f" AND subject IN ({', '.join('?' * len(subjects))})"
        values += list(subjects)
    return sql, values
