"""The scheduled jobs' side of :class:`~capsule.store.sqlite.SQLiteStore`: purging what was
forgotten, the backfill's queue and the embedding cache."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np

from ..core.clock import to_epoch
from ..core.records import MemoryRecord
from . import sqlite_governance_schema
from .sqlite_connection import SQLiteConnections
from .sqlite_rows import COLUMNS, decode_vector, encode_vector, row_to_record


class SQLiteJobs(SQLiteConnections):
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
                self._audit(
                    conn,
                    row["tenant"],
                    row["id"],
                    row["project"],
                    "purge",
                    "retention",
                    "forgotten longer than the recovery window",
                    when,
                )
            for tenant, project in {(row["tenant"], row["project"]) for row in rows}:
                # Purged rows leave no tombstone: a reader older than this must reload.
                version = self._bump(conn, tenant, project)
                conn.execute(
                    "UPDATE projects SET purged_version = ? WHERE tenant = ? AND name = ?", (version, tenant, project)
                )
            conn.execute(
                f"DELETE FROM memories WHERE deleted_at IS NOT NULL AND deleted_at < ? {kept}", (to_epoch(before),)
            )
            sqlite_governance_schema.drop_versions(conn, [(row["tenant"], row["id"]) for row in rows])
        return len(rows)

    def pending_embeddings(self, *, limit: int, model: str | None = None) -> list[MemoryRecord]:
        # Each branch one index range (memories_pending; memories_model, migration 13), merged by
        # seq: as one statement with ORs and ORDER BY seq LIMIT, SQLite walked the whole table in
        # seq order looking for them, and on a store with nothing pending read every row. Oldest
        # first within each branch (a model switch leaves one other model, in seq order).
        found = self._read(
            f"SELECT seq, {COLUMNS} FROM memories INDEXED BY memories_pending "
            "WHERE status != 'ready' AND deleted_at IS NULL ORDER BY seq LIMIT ?",
            (limit,),
        )
        if model is not None:  # in index order (model, then seq): no sort of a whole range
            for where, params in (("model IS NULL", ()), ("model < ?", (model,)), ("model > ?", (model,))):
                found += self._read(
                    f"SELECT seq, {COLUMNS} FROM memories INDEXED BY memories_model "
                    f"WHERE deleted_at IS NULL AND {where} ORDER BY model, seq LIMIT ?",
                    (*params, limit),
                )
        rows = sorted({row["seq"]: row for row in found}.values(), key=lambda row: row["seq"])[:limit]
        return [row_to_record(row) for row in rows]

    def cache_get(self, model: str, sha256s: Sequence[str], *, fresh_after: datetime) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        keys = list(dict.fromkeys(sha256s))
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
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
