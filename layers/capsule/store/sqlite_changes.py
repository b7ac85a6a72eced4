"""How :class:`~capsule.store.sqlite.SQLiteStore` changes one memory: pin, forget, restore,
feedback and a backfilled embedding, each under its project's next version."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..core.clock import to_epoch
from ..core.errors import Conflict, NotFound
from ..core.records import MemoryRecord
from ..search.index import pack_row, stable_key
from .sqlite_connection import SQLiteConnections
from .sqlite_rows import encode_vector


class SQLiteChanges(SQLiteConnections):
    get: Callable[..., MemoryRecord]  # SQLiteReads.get

    @staticmethod
    def _missing(conn: sqlite3.Connection, tenant: str, memory_id: str, forgotten: bool) -> NotFound | Conflict:
        """Restoring a memory that is there but not forgotten is a conflict, not a missing memory."""
        live = (
            forgotten
            and conn.execute(
                "SELECT 1 FROM memories WHERE tenant = ? AND id = ? AND deleted_at IS NULL", (tenant, memory_id)
            ).fetchone()
        )
        if live:
            return Conflict(f"memory {memory_id} is not forgotten; there is nothing to restore")
        return NotFound(f"no {'forgotten ' if forgotten else ''}memory {memory_id}")

    def _change(
        self,
        tenant: str,
        memory_id: str,
        sql: str,
        params: Sequence[Any],
        *,
        forgotten: bool = False,
        audit: tuple[str, str, str, float] | None = None,
        also: tuple[str, Sequence[Any]] | None = None,
    ) -> MemoryRecord:
        state = "IS NOT NULL" if forgotten else "IS NULL"
        with self._write() as conn:
            row = conn.execute(
                f"SELECT project FROM memories WHERE tenant = ? AND id = ? AND deleted_at {state}",
                (tenant, memory_id),
            ).fetchone()
            if row is None:
                raise self._missing(conn, tenant, memory_id, forgotten)
            conn.execute(sql, (*params, tenant, memory_id))
            conn.execute(
                "UPDATE memories SET version = ? WHERE tenant = ? AND id = ?",
                (self._bump(conn, tenant, row["project"]), tenant, memory_id),
            )
            if audit:
                self._audit(conn, tenant, memory_id, row["project"], *audit)
            if also:
                conn.execute(*also)
        # include_forgotten: after a forget the memory is forgotten, and forget returns it.
        return self.get(tenant, memory_id, include_forgotten=True)

    def set_pinned(self, tenant: str, memory_id: str, pinned: bool, *, at: datetime, actor: str) -> MemoryRecord:
        action = "pin" if pinned else "unpin"
        return self._change(
            tenant,
            memory_id,
            "UPDATE memories SET pinned = ?, updated_at = ? WHERE tenant = ? AND id = ?",
            (int(pinned), to_epoch(at)),
            audit=(action, actor, f"{action}ned by request", to_epoch(at)),
        )

    def forget(self, tenant: str, memory_id: str, *, at: datetime, actor: str, reason: str) -> MemoryRecord:
        return self._change(
            tenant,
            memory_id,
            "UPDATE memories SET deleted_at = ?, deleted_reason = 'forgotten', updated_at = ? "
            "WHERE tenant = ? AND id = ?",
            (to_epoch(at), to_epoch(at)),
            audit=("forget", actor, reason, to_epoch(at)),
        )

    def restore(self, tenant: str, memory_id: str, *, at: datetime, actor: str) -> MemoryRecord:
        return self._change(
            tenant,
            memory_id,
            "UPDATE memories SET deleted_at = NULL, deleted_reason = NULL, updated_at = ? WHERE tenant = ? AND id = ?",
            (to_epoch(at),),
            forgotten=True,
            audit=("restore", actor, "restored by request", to_epoch(at)),
        )

    def add_feedback(
        self, tenant: str, memory_id: str, *, helpful: bool, context: str | None, at: datetime
    ) -> MemoryRecord:
        column = "helpful" if helpful else "unhelpful"
        return self._change(
            tenant,
            memory_id,
            f"UPDATE memories SET {column} = {column} + 1, accessed_at = ? WHERE tenant = ? AND id = ?",
            (to_epoch(at),),
            also=(
                "INSERT INTO feedback (tenant, memory_id, helpful, context, at) VALUES (?, ?, ?, ?, ?)",
                (tenant, memory_id, int(helpful), context, to_epoch(at)),
            ),
        )

    def set_embedding(self, tenant: str, memory_id: str, embedding: np.ndarray, model: str) -> None:
        with self._write() as conn:
            row = conn.execute(
                "SELECT project, occurred_at, created_at FROM memories WHERE tenant = ? AND id = ?", (tenant, memory_id)
            ).fetchone()
            if row is None:
                raise NotFound(f"no memory {memory_id}")
            packed = pack_row(stable_key(memory_id), row["occurred_at"], row["created_at"], embedding)
            conn.execute(
                "UPDATE memories SET embedding = ?, packed = ?, model = ?, status = 'ready', version = ? "
                "WHERE tenant = ? AND id = ?",
                (encode_vector(embedding), packed, model, self._bump(conn, tenant, row["project"]), tenant, memory_id),
            )
