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
            sql += " AND (created_at < ? OR (created_at = ? AND id < ?))"
            params += [after[0], after[0], after[1]]
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        return [row_to_record(row) for row in self._read(sql, [*params, limit])]

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
