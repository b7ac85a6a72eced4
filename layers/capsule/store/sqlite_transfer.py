"""The transfer contract (:mod:`capsule.store.transfer`) on the embedded SQLite file.

Pages follow the rowid (``seq`` / ``id``), so each page is one index range, however large
the tenant. Writes share the :class:`~capsule.store.sqlite.SQLiteStore`'s connections and
``BEGIN IMMEDIATE`` transactions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ..core.clock import from_epoch, to_epoch
from ..core.errors import InvalidInput
from ..core.learning_records import ApplicationRecord, LinkRecord
from ..core.records import AuditRecord, MemoryRecord
from .audit_rows import audit_record
from .sqlite import SQLiteStore
from .sqlite_bulk import bulk_params
from .sqlite_rows import COLUMNS, INSERT_MEMORY, record_params, row_to_record
from .sqlite_schema import CONTENT_KEY, content_key
from .transfer import EvidenceRow, FeedbackRow, Written

_INSERT = INSERT_MEMORY
_ACCESSED, _DELETED, _REASON = 13, 19, 20  # positions in sqlite.record_params


def _epoch(value: Any) -> float | None:
    return None if value is None else to_epoch(value)


def _params(record: MemoryRecord, version: int, made: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
    """INSERT_MEMORY's values for an imported row; ``made``: its ``record_params`` already
    made (for a whole batch at once by ``sqlite_bulk.bulk_params``)."""
    params = list(record_params(record) if made is None else made)
    params[_ACCESSED], params[_DELETED] = _epoch(record.accessed_at), _epoch(record.deleted_at)
    params[_REASON] = record.deleted_reason
    return (*params, version)


def _rowid(after: str | None) -> int:
    if after is None:
        return -1
    if not after.isdigit() or len(after) > 19:
        raise InvalidInput(f"not a position in this store: {after!r}", field="cursor")
    return int(after)


def _chunks(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SQLiteTransferStore:
    """Every row of a tenant out of, and back into, one SQLite file."""

    def __init__(self, db: SQLiteStore) -> None:
        self._db = db

    def _pages(self, sql: str, params: Sequence[Any], page: int, after: str | None) -> Iterator[list[sqlite3.Row]]:
        """Keyset pages on the rowid, which ``sql`` (a WHERE clause to extend) selects first."""
        last = _rowid(after)
        while rows := self._db._read(sql + " AND rowid > ? ORDER BY rowid LIMIT ?", (*params, last, page)):
            yield rows
            last = rows[-1][0]

    # ---- memories, feedback, audit ---------------------------------------------------

    def memory_pages(
        self, tenant: str, project: str | None, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, MemoryRecord]]]:
        # A project's page is one range of memories_rows (tenant, project, then the rowid;
        # migration 13); without it the page walked the file by rowid from its cursor, reading
        # every other project's rows on the way. A tenant's pages walk the rowid, filtering by
        # tenant: reads grow with the other tenants' share of the file, not with the tenant.
        if project is not None:
            sql = f"SELECT rowid, {COLUMNS} FROM memories INDEXED BY memories_rows WHERE tenant = ? AND project = ?"
            params: tuple[Any, ...] = (tenant, project)
        else:
            sql, params = f"SELECT rowid, {COLUMNS} FROM memories WHERE tenant = ?", (tenant,)
        for rows in self._pages(sql, params, page, after):
            yield [(str(row[0]), row_to_record(row)) for row in rows]

    def feedback_of(self, tenant: str, memory_ids: Sequence[str]) -> list[FeedbackRow]:
        found: list[FeedbackRow] = []
        for part in _chunks(list(memory_ids)):
            rows = self._db._read(
                f"SELECT memory_id, helpful, context, at FROM feedback WHERE tenant = ? "
                f"AND memory_id IN ({', '.join('?' * len(part))}) ORDER BY id",
                (tenant, *part),
            )
            found += [FeedbackRow(r["memory_id"], bool(r["helpful"]), r["context"], from_epoch(r["at"])) for r in rows]
        return found

    def audit_pages(
        self, tenant: str, project: str | None, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, AuditRecord]]]:
        scope, params = ("AND project = ?", (tenant, project)) if project is not None else ("", (tenant,))
        sql = f"SELECT rowid, * FROM audit WHERE tenant = ? {scope}"
        for rows in self._pages(sql, params, page, after):
            yield [
                (
                    str(r[0]),
                    audit_record(r),
                )
                for r in rows
            ]

    def existing_memories(self, tenant: str, ids: Sequence[str]) -> dict[str, bool]:
        found: dict[str, bool] = {}
        for part in _chunks(list(ids)):
            # Ids are unique per tenant (migration 14): another tenant's equal id is no obstacle.
            rows = self._db._read(
                f"SELECT id FROM memories WHERE tenant = ? AND id IN ({', '.join('?' * len(part))})", (tenant, *part)
            )
            found.update((r["id"], True) for r in rows)
        return found

    def existing_content(self, tenant: str, project: str, sha256s: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in _chunks(list(sha256s)):
            marks = ", ".join("?" * len(part))
            rows = self._db._read(
                f"SELECT sha256 FROM memories INDEXED BY memories_content WHERE {CONTENT_KEY} IN ({marks}) "
                f"AND deleted_at IS NULL AND sha256 IN ({marks}) AND tenant = ? AND project = ?",
                (*map(content_key, part), *part, tenant, project),
            )
            found.update(r["sha256"] for r in rows)
        return found

    def put_memories(self, tenant: str, project: str, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        made = bulk_params(records)  # the batch's values at once, before the write lock is taken
        with self._db._write() as conn:
            now = max(to_epoch(r.updated_at) for r in records)
            conn.execute(
                "INSERT INTO projects (tenant, name, created_at, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (tenant, name) DO NOTHING",
                (tenant, project, now, now),
            )
            version = self._db._bump(conn, tenant, project)
            conn.executemany(_INSERT, [_params(r, version, m) for r, m in zip(records, made)])

    def put_feedback(self, tenant: str, rows: Sequence[FeedbackRow]) -> Written:
        out = Written(refused={})
        with self._db._write() as conn:
            for i, row in enumerate(rows):
                if (
                    conn.execute(
                        "SELECT 1 FROM memories WHERE tenant = ? AND id = ?", (tenant, row.memory_id)
                    ).fetchone()
                    is None
                ):
                    out.refused[i] = f"memory_id: no memory {row.memory_id} in this tenant"  # type: ignore[index]
                    continue
                key = (tenant, row.memory_id, int(row.helpful), row.context, to_epoch(row.at))
                if conn.execute(
                    "SELECT 1 FROM feedback WHERE tenant = ? AND memory_id = ? AND helpful = ? "
                    "AND context IS ? AND at = ?",
                    key,
                ).fetchone():
                    out.present += 1
                    continue
                conn.execute(
                    "INSERT INTO feedback (tenant, memory_id, helpful, context, at) VALUES (?, ?, ?, ?, ?)", key
                )
                out.written += 1
        return out

    def put_audit(self, tenant: str, rows: Sequence[AuditRecord]) -> Written:
        out = Written()
        with self._db._write() as conn:
            for r in rows:
                key = (tenant, r.memory_id, r.project, r.action, r.actor, r.reason, to_epoch(r.at))
                if conn.execute(
                    "SELECT 1 FROM audit WHERE tenant = ? AND memory_id = ? AND project = ? "
                    "AND action = ? AND actor = ? AND reason = ? AND at = ?",
                    key,
                ).fetchone():
                    out.present += 1
                    continue
                conn.execute(
                    "INSERT INTO audit (tenant, memory_id, project, action, actor, reason, at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    key,
                )
                out.written += 1
        return out

    # ---- learning rows the learning contract cannot write as they are ------------------

    def application_pages(
        self, tenant: str, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, ApplicationRecord]]]:
        sql = "SELECT rowid, * FROM solution_applications WHERE tenant = ?"
        for rows in self._pages(sql, (tenant,), page, after):
            yield [
                (
                    str(r[0]),
                    ApplicationRecord(
                        id=r["id"],
                        tenant=r["tenant"],
                        solution_id=r["solution_id"],
                        success=bool(r["success"]),
                        at=from_epoch(r["at"]),
                        project=r["project"],
                        error=r["error"],
                        context=r["context"],
                    ),
                )
                for r in rows
            ]

    def put_applications(self, tenant: str, rows: Sequence[ApplicationRecord]) -> Written:
        return self._insert_each(
            "INSERT INTO solution_applications (id, tenant, solution_id, success, project, error, context, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, id) DO NOTHING",
            [
                (a.id, tenant, a.solution_id, int(a.success), a.project, a.error, a.context, to_epoch(a.at))
                for a in rows
            ],
        )

    def _insert_each(self, sql: str, params: Sequence[tuple]) -> Written:
        """Insert each row in one transaction (the statement ignores a conflict): written or already there."""
        out = Written()
        with self._db._write() as conn:
            for values in params:
                written = conn.execute(sql, values).rowcount
                out.written += written
                out.present += 1 - written
        return out

    def put_link(self, link: LinkRecord) -> bool:
        with self._db._write() as conn:
            return (
                conn.execute(
                    "INSERT INTO pattern_links (tenant, tag, category, kind, target_id, success, failure, last_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (
                        link.tenant,
                        link.tag,
                        link.category,
                        link.kind,
                        link.target_id,
                        link.success,
                        link.failure,
                        _epoch(link.last_at),
                    ),
                ).rowcount
                == 1
            )

    def evidence_pages(
        self, tenant: str, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, EvidenceRow]]]:
        sql = "SELECT rowid, * FROM pattern_evidence WHERE tenant = ?"
        for rows in self._pages(sql, (tenant,), page, after):
            yield [
                (str(r[0]), EvidenceRow(r["tag"], r["category"], r["kind"], r["target_id"], r["evidence"]))
                for r in rows
            ]

    def put_evidence(self, tenant: str, rows: Sequence[EvidenceRow]) -> Written:
        return self._insert_each(
            "INSERT INTO pattern_evidence (tenant, tag, category, kind, target_id, evidence) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(tenant, e.tag, e.category, e.kind, e.target_id, e.evidence) for e in rows],
        )
