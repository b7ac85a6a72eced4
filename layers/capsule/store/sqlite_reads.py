"""What :class:`~capsule.store.sqlite.SQLiteStore` reads: memories by id, pages, the turn
before, and the candidates of a search read whole."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..core.clock import to_epoch
from ..core.errors import NotFound
from ..core.records import Filters, MemoryRecord
from . import sqlite_governance_schema, sqlite_visibility_schema
from .base import Cursor
from .sqlite_connection import SQLiteConnections
from .sqlite_rows import COLUMNS, NO_VECTOR, row_to_record

PREVIOUS_IN_SESSION = (
    "SELECT content FROM memories WHERE tenant = ? AND project = ? AND json_extract(meta, '$.session') = ? "
    "AND occurred_at < ? AND deleted_at IS NULL ORDER BY occurred_at DESC, seq DESC LIMIT 1"
)


class SQLiteReads(SQLiteConnections):
    def get(self, tenant: str, memory_id: str, *, include_forgotten: bool = False) -> MemoryRecord:
        rows = self._read(f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND id = ?", (tenant, memory_id))
        if not rows or (rows[0]["deleted_at"] is not None and not include_forgotten):
            raise NotFound(f"no memory {memory_id}")
        return row_to_record(rows[0])

    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> list[str]:
        # A range on the unique key (tenant, id) (LIKE would fold case and read '_' as a wildcard).
        rows = self._read(
            "SELECT id FROM memories WHERE tenant = ? AND id >= ? AND id < ? ORDER BY id LIMIT ?",
            (tenant, prefix, prefix + "\U0010ffff", limit),
        )
        return [row["id"] for row in rows if row["id"].startswith(prefix)]

    def get_many(self, tenant: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """The memories with these ids, forgotten ones included, without their vectors; unknown ids are left out."""
        found: list[MemoryRecord] = []
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            # One probe each of the unique key (tenant, id) (migration 14).
            rows = self._read(
                f"SELECT {NO_VECTOR} FROM memories WHERE tenant = ? AND id IN ({', '.join('?' * len(part))})",
                (tenant, *part),
            )
            found.extend(row_to_record(row) for row in rows)
        return found

    def list(
        self,
        tenant: str,
        project: str,
        *,
        pinned_only: bool,
        after: Cursor | None,
        limit: int,
        retention: str | None = None,
        forgotten: bool = False,
        visibility: Sequence[str] = (),
        subjects: Sequence[str] = (),
    ) -> list[MemoryRecord]:
        state = "IS NOT NULL" if forgotten else "IS NULL"  # memories_recent serves both
        sql = f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND project = ? AND deleted_at {state}"
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
            # A row value, not ``created_at < ? OR (created_at = ? AND id < ?)`` (the same rows):
            # SQLite seeks memories_recent to the cursor only for the row value, and scanned the
            # project's index from its newest row to the cursor for the OR, so a walk of every
            # page (mining, issue 32) grew with the square of the project: a page 250,000 rows
            # deep read 41 ms CPU instead of 4.5 (SQLite 3.40.1, EXPLAIN QUERY PLAN shows the
            # (created_at,id)<(?,?) range).
            sql += " AND (created_at, id) < (?, ?)"
            params += [after[0], after[1]]
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        return [row_to_record(row) for row in self._read(sql, [*params, limit])]

    def outcome_page(
        self, tenant: str, project: str, *, after: Cursor | None, limit: int
    ) -> tuple[builtins.list[MemoryRecord], int, Cursor | None]:
        """One page of :meth:`list` (``pinned_only=False``), for mining (capsule.learning.mining_pages):
        the page's memories whose meta names an outcome (``outcome_status`` failure or success,
        ``type`` error), as :meth:`list` reads them and in its order; how many the page held;
        and the cursor after its last one. Only those few are made records: the page itself is
        read as ids, times and two meta fields (issue 32: making every memory of a tenant a
        record was most of a mining run's CPU)."""
        sql = (
            "SELECT id, created_at, (json_extract(meta, '$.outcome_status') IN ('failure', 'success') "
            "OR json_extract(meta, '$.type') = 'error') AS wanted "
            "FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL"
        )
        params: list[Any] = [tenant, project]
        if after is not None:
            sql += " AND (created_at, id) < (?, ?)"  # a seek on memories_recent (see list)
            params += [after[0], after[1]]
        rows = self._read(sql + " ORDER BY created_at DESC, id DESC LIMIT ?", [*params, limit])
        if not rows:
            return [], 0, None
        wanted = [row["id"] for row in rows if row["wanted"]]
        found: dict[str, MemoryRecord] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            full = self._read(
                f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND id IN ({', '.join('?' * len(part))})",
                (tenant, *part),
            )
            found.update((row["id"], row_to_record(row)) for row in full)
        records = [found[i] for i in wanted if i in found]
        return records, len(rows), (rows[-1]["created_at"], rows[-1]["id"])

    def previous_in_session(self, tenant: str, project: str, session: str | int, *, before: datetime) -> str | None:
        rows = self._read(PREVIOUS_IN_SESSION, (tenant, project, session, to_epoch(before)))
        return rows[0]["content"] if rows else None

    def candidates(self, tenant: str, projects: Sequence[str] | None, filters: Filters) -> builtins.list[MemoryRecord]:
        sql = f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND deleted_at IS NULL"
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
        return [row_to_record(row) for row in self._read(sql, params)]
