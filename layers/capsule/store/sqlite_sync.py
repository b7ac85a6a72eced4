"""The sync contract (:mod:`capsule.store.sync`) on the embedded SQLite file: pages on the
``memories_version`` index; replaced rows are deleted and inserted again in one
``BEGIN IMMEDIATE`` write (so every derived column is computed as on any insert)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.clock import to_epoch
from ..core.records import MemoryRecord
from .sqlite import SQLiteStore
from .sqlite_rows import COLUMNS, row_to_record
from .sqlite_transfer import _INSERT, _params
from .sync import Position


class SQLiteSyncStore:
    def __init__(self, db: SQLiteStore) -> None:
        self._db = db

    def changed_page(
        self, tenant: str, project: str, *, after: Position | None, limit: int
    ) -> list[tuple[Position, MemoryRecord]]:
        version, seq = after or (0, 0)
        rows = self._db._read(
            f"SELECT version, seq, {COLUMNS} FROM memories WHERE tenant = ? AND project = ? "
            "AND (version > ? OR (version = ? AND seq > ?)) ORDER BY version, seq LIMIT ?",
            (tenant, project, version, version, seq, limit),
        )
        return [((row["version"], row["seq"]), row_to_record(row)) for row in rows]

    def current(self, tenant: str, ids: Sequence[str]) -> dict[str, tuple[Position, MemoryRecord]]:
        found: dict[str, tuple[Position, MemoryRecord]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            rows = self._db._read(
                f"SELECT version, seq, {COLUMNS} FROM memories WHERE tenant = ? "
                f"AND id IN ({', '.join('?' * len(part))})",
                (tenant, *part),
            )
            found.update((row["id"], ((row["version"], row["seq"]), row_to_record(row))) for row in rows)
        return found

    def replace_memories(
        self, tenant: str, project: str, records: Sequence[MemoryRecord], *, quiet_since: int | None = None
    ) -> tuple[int, bool]:
        with self._db._write() as conn:
            now = max((to_epoch(r.updated_at) for r in records), default=0.0)
            conn.execute(
                "INSERT INTO projects (tenant, name, created_at, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (tenant, name) DO NOTHING",
                (tenant, project, now, now),
            )
            before = conn.execute(
                "SELECT version FROM projects WHERE tenant = ? AND name = ?", (tenant, project)
            ).fetchone()[0]
            version = self._db._bump(conn, tenant, project)
            for record in records:
                conn.execute("DELETE FROM memories WHERE tenant = ? AND id = ?", (tenant, record.id))
            conn.executemany(_INSERT, [_params(r, version) for r in records])
            return version, quiet_since is not None and before == quiet_since
