"""The capture queue (:mod:`capsule.store.capture`) in the embedded SQLite file.

Its tables are created with ``IF NOT EXISTS`` by :meth:`migrate` (not a numbered migration
of the memory schema, which other features extend), and share the memory store's
per-thread connections and ``BEGIN IMMEDIATE`` transactions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..core.clock import from_epoch, to_epoch
from ..core.errors import Conflict, NotFound
from .capture import CandidateRecord
from .sqlite import SQLiteStore
from .sqlite_connection import create_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS capture_candidates (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    project TEXT NOT NULL,
    key TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (tenant, project, key)
);
CREATE INDEX IF NOT EXISTS capture_candidates_recent ON capture_candidates (tenant, project, status, created_at, id);
CREATE INDEX IF NOT EXISTS capture_candidates_tenant ON capture_candidates (tenant, created_at, id);
CREATE TABLE IF NOT EXISTS capture_settings (
    tenant TEXT NOT NULL,
    project TEXT NOT NULL,
    threshold REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, project)
);
"""

_BODY = (
    "text",
    "score",
    "reason",
    "kind",
    "tags",
    "role",
    "session",
    "occurred_at",
    "decided_at",
    "memory_id",
    "note",
    "extra",
)


def _when(value: float | None) -> datetime | None:
    return None if value is None else from_epoch(value)


def _body(record: CandidateRecord) -> str:
    plain: dict[str, Any] = {name: getattr(record, name) for name in _BODY}
    for name in ("occurred_at", "decided_at"):
        plain[name] = None if plain[name] is None else to_epoch(plain[name])
    return json.dumps(plain, ensure_ascii=False)


def _record(row: sqlite3.Row) -> CandidateRecord:
    body = json.loads(row["body"])
    body["occurred_at"], body["decided_at"] = _when(body["occurred_at"]), _when(body["decided_at"])
    return CandidateRecord(
        id=row["id"],
        tenant=row["tenant"],
        project=row["project"],
        key=row["key"],
        status=row["status"],
        created_at=from_epoch(row["created_at"]),
        **body,
    )


class SQLiteCandidateStore:
    def __init__(self, db: SQLiteStore) -> None:
        self._db = db

    def migrate(self) -> None:
        with self._db._write() as conn:
            create_schema(conn, SCHEMA)

    def add(self, records: Sequence[CandidateRecord]) -> dict[str, str]:
        held: dict[str, str] = {}
        with self._db._write() as conn:
            for r in records:
                row = conn.execute(
                    "SELECT status FROM capture_candidates WHERE tenant = ? AND project = ? AND key = ?",
                    (r.tenant, r.project, r.key),
                ).fetchone()
                if row is not None:
                    held[r.key] = row["status"]
                    continue
                conn.execute(
                    "INSERT INTO capture_candidates (id, tenant, project, key, body, status, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (r.id, r.tenant, r.project, r.key, _body(r), r.status, to_epoch(r.created_at)),
                )
        return held

    def statuses(self, tenant: str, project: str, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        keys = list(keys)
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self._db._read(
                f"SELECT key, status FROM capture_candidates WHERE tenant = ? AND project = ? "
                f"AND key IN ({', '.join('?' * len(part))})",
                (tenant, project, *part),
            )
            found.update((r["key"], r["status"]) for r in rows)
        return found

    def get(self, tenant: str, candidate_id: str) -> CandidateRecord:
        rows = self._db._read("SELECT * FROM capture_candidates WHERE tenant = ? AND id = ?", (tenant, candidate_id))
        if not rows:
            raise NotFound(
                f"no candidate {candidate_id!r}",
                details=[{"field": "id", "message": "no such candidate for this tenant"}],
            )
        return _record(rows[0])

    def list(
        self, tenant: str, project: str | None, status: str | None, *, before: tuple[datetime, str] | None, limit: int
    ) -> list[CandidateRecord]:
        where: list[str] = ["tenant = ?"]
        params: list[Any] = [tenant]
        if project is not None:
            where.append("project = ?")
            params.append(project)
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if before is not None:
            where.append("(created_at, id) < (?, ?)")  # a row value: SQLite jumps to the cursor
            params += [to_epoch(before[0]), before[1]]
        rows = self._db._read(
            f"SELECT * FROM capture_candidates WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?",
            (*params, limit),
        )
        return [_record(r) for r in rows]

    def _update(self, conn: sqlite3.Connection, record: CandidateRecord) -> None:
        conn.execute(
            "UPDATE capture_candidates SET body = ?, status = ? WHERE tenant = ? AND id = ?",
            (_body(record), record.status, record.tenant, record.id),
        )

    def _locked(self, conn: sqlite3.Connection, tenant: str, candidate_id: str) -> CandidateRecord:
        row = conn.execute(
            "SELECT * FROM capture_candidates WHERE tenant = ? AND id = ?", (tenant, candidate_id)
        ).fetchone()
        if row is None:
            raise NotFound(
                f"no candidate {candidate_id!r}",
                details=[{"field": "id", "message": "no such candidate for this tenant"}],
            )
        return _record(row)

    def decide(
        self,
        tenant: str,
        candidate_id: str,
        status: str,
        *,
        at: datetime,
        text: str | None = None,
        note: str | None = None,
    ) -> CandidateRecord:
        with self._db._write() as conn:
            record = self._locked(conn, tenant, candidate_id)
            if record.status != "pending":
                raise Conflict(
                    f"candidate {candidate_id} is already {record.status}",
                    details=[{"field": "id", "message": f"already {record.status}"}],
                )
            record.status, record.decided_at, record.note = status, at, note
            record.text = text if text is not None else record.text
            self._update(conn, record)
        return record

    def undo(self, tenant: str, candidate_id: str) -> None:
        with self._db._write() as conn:
            record = self._locked(conn, tenant, candidate_id)
            record.status, record.decided_at = "pending", None
            self._update(conn, record)

    def link(self, tenant: str, candidate_id: str, memory_id: str) -> CandidateRecord:
        with self._db._write() as conn:
            record = self._locked(conn, tenant, candidate_id)
            record.memory_id = memory_id
            self._update(conn, record)
        return record

    def threshold(self, tenant: str, project: str) -> float | None:
        rows = self._db._read(
            "SELECT threshold FROM capture_settings WHERE tenant = ? AND project = ?", (tenant, project)
        )
        return rows[0]["threshold"] if rows else None

    def set_threshold(self, tenant: str, project: str, threshold: float, *, at: datetime) -> None:
        with self._db._write() as conn:
            conn.execute(
                "INSERT INTO capture_settings (tenant, project, threshold, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (tenant, project) DO UPDATE SET threshold = excluded.threshold, "
                "updated_at = excluded.updated_at",
                (tenant, project, threshold, to_epoch(at)),
            )
