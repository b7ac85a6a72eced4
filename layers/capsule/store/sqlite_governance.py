"""The governance contract (:mod:`capsule.store.governance`) on the embedded SQLite file.

Writes share the :class:`~capsule.store.sqlite.SQLiteStore`'s connections and its
``BEGIN IMMEDIATE`` transactions, and stamp the project's next version as every write does.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from ..core.clock import from_epoch, to_epoch
from ..core.errors import NotFound, PreconditionFailed
from ..core.records import AuditRecord, MemoryRecord
from ..governance import audit as actions
from ..search import terms
from ..search.index import pack_row, stable_key
from .governance import SAME_TIME_S, VersionRecord, version_of
from .sqlite import SQLiteStore
from .sqlite_governance_schema import drop_versions
from .sqlite_rows import encode_vector, facets

_VERSION_COLUMNS = (
    "tenant, memory_id, number, project, content, sha256, path, explanation, meta, retention, "
    "expires_at, pinned, created_at, replaced_at, actor, reason"
)
_REPLACE = (
    "UPDATE memories SET content = ?, sha256 = ?, embedding = ?, model = ?, status = ?, meta = ?, component = ?, "
    "category = ?, explanation = ?, retention = ?, expires_at = ?, visibility = ?, subject = ?, updated_at = ?, "
    "terms = ?, terms_version = ?, "
    "packed = ?, facets = ?, version = ? "
    "WHERE tenant = ? AND id = ? AND deleted_at IS NULL AND sha256 = ? AND updated_at BETWEEN ? AND ?"
)


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


def _version_params(v: VersionRecord) -> tuple[Any, ...]:
    return (
        v.tenant,
        v.memory_id,
        v.number,
        v.project,
        v.content,
        v.sha256,
        v.path,
        v.explanation,
        json.dumps(v.meta),
        v.retention,
        _epoch(v.expires_at),
        int(v.pinned),
        _epoch(v.created_at),
        _epoch(v.replaced_at),
        v.actor,
        v.reason,
    )


def _row_to_version(row: sqlite3.Row) -> VersionRecord:
    return VersionRecord(
        tenant=row["tenant"],
        memory_id=row["memory_id"],
        number=row["number"],
        project=row["project"],
        content=row["content"],
        sha256=row["sha256"],
        path=row["path"],
        explanation=row["explanation"],
        meta=json.loads(row["meta"]),
        retention=row["retention"],
        expires_at=from_epoch(row["expires_at"]),
        pinned=bool(row["pinned"]),
        created_at=from_epoch(row["created_at"]),
        replaced_at=from_epoch(row["replaced_at"]),
        actor=row["actor"],
        reason=row["reason"],
    )


def _replace_params(after: MemoryRecord, version: int, before: MemoryRecord) -> tuple[Any, ...]:
    key, occurred, created = stable_key(after.id), to_epoch(after.occurred_at), to_epoch(after.created_at)
    stamp = to_epoch(before.updated_at)
    return (
        after.content,
        after.sha256,
        encode_vector(after.embedding),
        after.model,
        after.status,
        json.dumps(after.meta),
        after.meta.get("component"),
        after.meta.get("category"),
        after.explanation,
        after.retention,
        _epoch(after.expires_at),
        after.visibility or "private",
        after.subject,
        to_epoch(after.updated_at),
        terms.encode_record(after),
        terms.TOKENIZER,
        pack_row(key, occurred, created, after.embedding),
        facets(after.meta),
        version,
        before.tenant,
        before.id,
        before.sha256,
        stamp - SAME_TIME_S,
        stamp + SAME_TIME_S,
    )


class SQLiteGovernanceStore:
    """Versions, supersession and expiry in the SQLite file of a :class:`SQLiteStore`."""

    def __init__(self, db: SQLiteStore) -> None:
        self._db = db

    def replace(
        self, before: MemoryRecord, after: MemoryRecord, *, action: str, actor: str, reason: str
    ) -> MemoryRecord:
        now = to_epoch(after.updated_at)
        with self._db._write() as conn:
            version = self._db._bump(conn, before.tenant, before.project)
            changed = conn.execute(_REPLACE, _replace_params(after, version, before)).rowcount
            if not changed:
                raise self._why_not(conn, before)
            number = conn.execute(
                "SELECT coalesce(max(number), 0) + 1 FROM memory_versions WHERE tenant = ? AND memory_id = ?",
                (before.tenant, before.id),
            ).fetchone()[0]
            kept = version_of(before, number, replaced_at=after.updated_at, actor=actor, reason=reason)
            conn.execute(
                f"INSERT INTO memory_versions ({_VERSION_COLUMNS}) VALUES ({', '.join('?' * 16)})",
                _version_params(kept),
            )
            self._db._audit(conn, before.tenant, before.id, before.project, action, actor, reason, now)
        return self._db.get(before.tenant, before.id)

    @staticmethod
    def _why_not(conn: sqlite3.Connection, before: MemoryRecord) -> NotFound | PreconditionFailed:
        live = conn.execute(
            "SELECT 1 FROM memories WHERE tenant = ? AND id = ? AND deleted_at IS NULL", (before.tenant, before.id)
        ).fetchone()
        if live:
            return PreconditionFailed(f"memory {before.id} changed since it was read; read it again and retry")
        return NotFound(f"no memory {before.id}")

    def versions(self, tenant: str, memory_id: str, *, limit: int) -> list[VersionRecord]:
        rows = self._db._read(
            f"SELECT {_VERSION_COLUMNS} FROM memory_versions WHERE tenant = ? AND memory_id = ? "
            "ORDER BY number DESC LIMIT ?",
            (tenant, memory_id, limit),
        )
        return [_row_to_version(row) for row in reversed(rows)]

    def supersede(
        self, tenant: str, old_id: str, new_id: str, *, at: datetime, actor: str, reason: str
    ) -> MemoryRecord:
        when = to_epoch(at)
        return self._db._change(
            tenant,
            old_id,
            "UPDATE memories SET deleted_at = ?, deleted_reason = 'superseded', superseded_by = ?, updated_at = ? "
            "WHERE tenant = ? AND id = ?",
            (when, new_id, when),
            audit=(actions.SUPERSEDE, actor, reason, when),
        )

    def expire(self, *, at: datetime, limit: int) -> list[AuditRecord]:
        when = to_epoch(at)
        with self._db._write() as conn:
            rows = conn.execute(
                "SELECT tenant, id, project, expires_at FROM memories INDEXED BY memories_expiry "
                "WHERE expires_at IS NOT NULL AND deleted_at IS NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?",
                (when, limit),
            ).fetchall()
            done = []
            for row in rows:
                reason = f"ephemeral: expired at {from_epoch(row['expires_at']).isoformat()}"
                self._db._audit(
                    conn, row["tenant"], row["id"], row["project"], actions.EXPIRE, "retention", reason, when
                )
                done.append(
                    AuditRecord(
                        tenant=row["tenant"],
                        memory_id=row["id"],
                        project=row["project"],
                        action=actions.EXPIRE,
                        actor="retention",
                        reason=reason,
                        at=at,
                    )
                )
            for tenant, project in {(row["tenant"], row["project"]) for row in rows}:
                # Purged rows leave no tombstone: a reader older than this must reload.
                version = self._db._bump(conn, tenant, project)
                conn.execute(
                    "UPDATE projects SET purged_version = ? WHERE tenant = ? AND name = ?", (version, tenant, project)
                )
            conn.executemany("DELETE FROM memories WHERE tenant = ? AND id = ?", [(r["tenant"], r["id"]) for r in rows])
            drop_versions(conn, [(row["tenant"], row["id"]) for row in rows])
        return done

    def set_project_ttl(self, tenant: str, project: str, ttl: int, *, at: datetime) -> None:
        with self._db._write() as conn:
            conn.execute(
                "INSERT INTO projects (tenant, name, ephemeral_ttl, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant, name) DO UPDATE SET ephemeral_ttl = excluded.ephemeral_ttl, "
                "updated_at = excluded.updated_at",
                (tenant, project, ttl, to_epoch(at), to_epoch(at)),
            )

    def project_ttl(self, tenant: str, project: str) -> int | None:
        rows = self._db._read("SELECT ephemeral_ttl FROM projects WHERE tenant = ? AND name = ?", (tenant, project))
        return rows[0]["ephemeral_ttl"] if rows else None

    def add_audit(self, record: AuditRecord) -> None:
        with self._db._write() as conn:
            self._db._audit(
                conn,
                record.tenant,
                record.memory_id,
                record.project,
                record.action,
                record.actor,
                record.reason,
                to_epoch(record.at),
            )

    def version_pages(self, tenant: str, project: str | None, *, page: int) -> Iterator[list[VersionRecord]]:
        scope, params = ("AND project = ?", [project]) if project is not None else ("", [])
        last = -1
        while rows := self._db._read(
            f"SELECT rowid, {_VERSION_COLUMNS} FROM memory_versions WHERE tenant = ? "
            f"{scope} AND rowid > ? ORDER BY rowid LIMIT ?",
            (tenant, *params, last, page),
        ):
            last = rows[-1]["rowid"]
            yield [_row_to_version(row) for row in rows]

    def put_versions(self, tenant: str, rows: Sequence[VersionRecord]) -> int:
        with self._db._write() as conn:
            before = conn.total_changes
            conn.executemany(
                f"INSERT OR IGNORE INTO memory_versions ({_VERSION_COLUMNS}) VALUES ({', '.join('?' * 16)})",
                [_version_params(v) for v in rows],
            )
            return conn.total_changes - before
