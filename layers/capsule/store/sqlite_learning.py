"""The learning store on the embedded SQLite file, beside the memories (schema migration 2).

It shares the :class:`~capsule.store.sqlite.SQLiteStore`'s per-thread connections and its
``BEGIN IMMEDIATE`` transactions, so counters and evidence are updated atomically even when
two processes (``capsule serve`` and a ``capsule jobs run``) write at once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..core import limits
from ..core.clock import from_epoch, to_epoch
from ..core.errors import Conflict, NotFound
from ..core.learning_records import ApplicationRecord, LinkRecord, PatternRecord, SolutionRecord
from .base import Cursor
from .sqlite import SQLiteStore
from .sqlite_rows import decode_vector, encode_vector

_SOLUTION = (
    "id, tenant, title, category, body, embeddings, signatures, model, success, failure, created_at, "
    "updated_at, last_applied_at, verified_on"
)
# Search candidates for a component: those naming it and those naming none (COMPAT.md §1.7).
_COMPONENT = " AND (json_extract(body, '$.component') IS NULL OR json_extract(body, '$.component') = ?)"


def _matrix(blob: bytes | None, rows: int) -> np.ndarray | None:
    vector = decode_vector(blob)
    return None if vector is None or rows == 0 else vector.reshape(rows, -1)


def _solution(row: sqlite3.Row, *, with_embeddings: bool = True) -> SolutionRecord:
    return SolutionRecord(
        id=row["id"],
        tenant=row["tenant"],
        title=row["title"],
        category=row["category"],
        body=json.loads(row["body"]),
        created_at=from_epoch(row["created_at"]),
        updated_at=from_epoch(row["updated_at"]),
        success=row["success"],
        failure=row["failure"],
        embeddings=_matrix(row["embeddings"], row["signatures"]) if with_embeddings else None,
        model=row["model"],
        last_applied_at=from_epoch(row["last_applied_at"]),
        verified_on=from_epoch(row["verified_on"]),
    )


def _pattern(row: sqlite3.Row) -> PatternRecord:
    body = json.loads(row["body"])
    return PatternRecord(
        tenant=row["tenant"],
        tag=row["tag"],
        category=row["category"],
        terms=body["terms"],
        occurrences=row["occurrences"],
        projects=body["projects"],
        examples=body["examples"],
        description=body["description"],
        created_at=from_epoch(row["created_at"]),
        updated_at=from_epoch(row["updated_at"]),
        first_seen=from_epoch(row["first_seen"]),
        last_seen=from_epoch(row["last_seen"]),
        embedding=decode_vector(row["embedding"]),
        model=row["model"],
    )


def _link(row: sqlite3.Row) -> LinkRecord:
    return LinkRecord(
        tenant=row["tenant"],
        tag=row["tag"],
        category=row["category"],
        kind=row["kind"],
        target_id=row["target_id"],
        success=row["success"],
        failure=row["failure"],
        last_at=from_epoch(row["last_at"]),
    )


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


class SQLiteLearningStore:
    """The :class:`~capsule.store.learning.LearningStore` in the memories' SQLite file."""

    def __init__(self, db: SQLiteStore) -> None:
        self._db = db

    def migrate(self) -> None:
        self._db.migrate()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self._db._read(sql, params)

    def tenants(self) -> list[str]:
        rows = self._read("SELECT tenant FROM solutions UNION SELECT tenant FROM patterns ORDER BY tenant")
        return [row["tenant"] for row in rows]

    # ---- solutions --------------------------------------------------------

    def insert_solution(self, record: SolutionRecord) -> None:
        rows = 0 if record.embeddings is None else len(record.embeddings)
        with self._db._write() as conn:
            try:
                conn.execute(
                    f"INSERT INTO solutions ({_SOLUTION}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.id,
                        record.tenant,
                        record.title,
                        record.category,
                        json.dumps(record.body),
                        encode_vector(record.embeddings),
                        rows,
                        record.model,
                        record.success,
                        record.failure,
                        to_epoch(record.created_at),
                        to_epoch(record.updated_at),
                        _epoch(record.last_applied_at),
                        _epoch(record.verified_on),
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise Conflict(f"solution {record.id} already exists") from exc

    def get_solution(self, tenant: str, solution_id: str) -> SolutionRecord:
        rows = self._read(f"SELECT {_SOLUTION} FROM solutions WHERE tenant = ? AND id = ?", (tenant, solution_id))
        if not rows:
            raise NotFound(f"no solution {solution_id}")
        return _solution(rows[0])

    def find_solution(self, tenant: str, title: str, category: str) -> SolutionRecord | None:
        rows = self._read(
            f"SELECT {_SOLUTION} FROM solutions WHERE tenant = ? AND title = ? AND category = ? ORDER BY seq LIMIT 1",
            (tenant, title, category),
        )
        return _solution(rows[0]) if rows else None

    def list_solutions(
        self, tenant: str, *, category: str | None, after: Cursor | None, limit: int
    ) -> list[SolutionRecord]:
        sql = f"SELECT {_SOLUTION} FROM solutions WHERE tenant = ?"
        params: list[Any] = [tenant]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        if after is not None:
            sql += " AND (created_at, id) < (?, ?)"  # a row value: SQLite jumps to the cursor
            params += [after[0], after[1]]
        rows = self._read(sql + " ORDER BY created_at DESC, id DESC LIMIT ?", [*params, limit])
        return [_solution(row, with_embeddings=False) for row in rows]

    def solutions(
        self, tenant: str, *, category: str | None, limit: int, component: str | None = None
    ) -> list[SolutionRecord]:
        sql, params = f"SELECT {_SOLUTION} FROM solutions WHERE tenant = ?", [tenant]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        if component is not None:
            sql += _COMPONENT
            params.append(component)
        rows = self._read(sql + " ORDER BY created_at DESC, id DESC LIMIT ?", [*params, limit])
        return [_solution(row) for row in rows]

    def replace_solution(self, record: SolutionRecord) -> None:
        rows = 0 if record.embeddings is None else len(record.embeddings)
        with self._db._write() as conn:
            changed = conn.execute(
                "UPDATE solutions SET title = ?, category = ?, body = ?, embeddings = ?, signatures = ?, "
                "model = ?, updated_at = ? WHERE tenant = ? AND id = ?",
                (
                    record.title,
                    record.category,
                    json.dumps(record.body),
                    encode_vector(record.embeddings),
                    rows,
                    record.model,
                    to_epoch(record.updated_at),
                    record.tenant,
                    record.id,
                ),
            ).rowcount
            if not changed:
                raise NotFound(f"no solution {record.id}")

    def set_solution_embeddings(self, tenant: str, solution_id: str, embeddings: np.ndarray, model: str) -> None:
        with self._db._write() as conn:
            conn.execute(
                "UPDATE solutions SET embeddings = ?, signatures = ?, model = ? WHERE tenant = ? AND id = ?",
                (encode_vector(embeddings), len(embeddings), model, tenant, solution_id),
            )

    def delete_solution(self, tenant: str, solution_id: str) -> None:
        with self._db._write() as conn:
            if not conn.execute("DELETE FROM solutions WHERE tenant = ? AND id = ?", (tenant, solution_id)).rowcount:
                raise NotFound(f"no solution {solution_id}")
            conn.execute(
                "DELETE FROM solution_applications WHERE tenant = ? AND solution_id = ?", (tenant, solution_id)
            )
            for table in ("pattern_links", "pattern_evidence"):
                conn.execute(
                    f"DELETE FROM {table} WHERE tenant = ? AND kind = 'solution' AND target_id = ?",
                    (tenant, solution_id),
                )

    def record_application(self, application: ApplicationRecord) -> SolutionRecord:
        a = application
        column = "success" if a.success else "failure"
        # A success also verifies the solution (verified_on); either outcome is its last application.
        verified = ", verified_on = ?" if a.success else ""
        at = (to_epoch(a.at),) * (2 if a.success else 1)
        with self._db._write() as conn:
            changed = conn.execute(
                # Saturating: a count at the limit stays there, so it always reads back as valid.
                f"UPDATE solutions SET {column} = min({column} + 1, ?), last_applied_at = ?{verified} "
                "WHERE tenant = ? AND id = ?",
                (limits.MAX_COUNT, *at, a.tenant, a.solution_id),
            ).rowcount
            if not changed:
                raise NotFound(f"no solution {a.solution_id}")
            conn.execute(
                "INSERT INTO solution_applications (id, tenant, solution_id, success, project, error, context, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (a.id, a.tenant, a.solution_id, int(a.success), a.project, a.error, a.context, to_epoch(a.at)),
            )
            row = conn.execute(
                f"SELECT {_SOLUTION} FROM solutions WHERE tenant = ? AND id = ?", (a.tenant, a.solution_id)
            ).fetchone()
        return _solution(row)

    def applications(self, tenant: str, *, limit: int) -> list[ApplicationRecord]:
        rows = self._read(
            "SELECT * FROM solution_applications WHERE tenant = ? ORDER BY at DESC, seq DESC LIMIT ?", (tenant, limit)
        )
        return [
            ApplicationRecord(
                id=r["id"],
                tenant=r["tenant"],
                solution_id=r["solution_id"],
                success=bool(r["success"]),
                at=from_epoch(r["at"]),
                project=r["project"],
                error=r["error"],
                context=r["context"],
            )
            for r in rows
        ]

    # ---- patterns ---------------------------------------------------------

    def upsert_pattern(self, record: PatternRecord) -> None:
        r = record
        body = json.dumps(
            {"terms": r.terms, "projects": r.projects, "examples": r.examples, "description": r.description}
        )
        with self._db._write() as conn:
            conn.execute(
                "INSERT INTO patterns (tenant, tag, category, body, occurrences, embedding, model, first_seen, "
                "last_seen, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant, tag, category) DO UPDATE SET body = excluded.body, "
                "occurrences = excluded.occurrences, embedding = excluded.embedding, model = excluded.model, "
                "first_seen = excluded.first_seen, last_seen = excluded.last_seen, updated_at = excluded.updated_at",
                (
                    r.tenant,
                    r.tag,
                    r.category,
                    body,
                    r.occurrences,
                    encode_vector(r.embedding),
                    r.model,
                    _epoch(r.first_seen),
                    _epoch(r.last_seen),
                    to_epoch(r.created_at),
                    to_epoch(r.updated_at),
                ),
            )

    def get_pattern(self, tenant: str, tag: str, category: str) -> PatternRecord:
        rows = self._read(
            "SELECT * FROM patterns WHERE tenant = ? AND tag = ? AND category = ?", (tenant, tag, category)
        )
        if not rows:
            raise NotFound(f"no pattern '{tag}' in category '{category}'")
        return _pattern(rows[0])

    def patterns(self, tenant: str, *, category: str | None, min_occurrences: int, limit: int) -> list[PatternRecord]:
        sql, params = "SELECT * FROM patterns WHERE tenant = ? AND occurrences >= ?", [tenant, min_occurrences]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        rows = self._read(sql + " ORDER BY occurrences DESC, last_seen DESC, tag LIMIT ?", [*params, limit])
        return [_pattern(row) for row in rows]

    def link(
        self,
        tenant: str,
        tag: str,
        category: str,
        kind: str,
        target_id: str,
        *,
        success: bool,
        at: datetime,
        evidence: str | None,
    ) -> tuple[LinkRecord, bool]:
        key = (tenant, tag, category, kind, target_id)
        column = "success" if success else "failure"
        with self._db._write() as conn:
            counted = True
            if evidence is not None:
                counted = (
                    conn.execute(
                        "INSERT OR IGNORE INTO pattern_evidence (tenant, tag, category, kind, target_id, evidence) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (*key, evidence),
                    ).rowcount
                    == 1
                )
            if counted:
                conn.execute(
                    f"INSERT INTO pattern_links (tenant, tag, category, kind, target_id, {column}, last_at) "
                    f"VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (tenant, tag, category, kind, target_id) "
                    f"DO UPDATE SET {column} = min({column} + 1, ?), last_at = excluded.last_at",
                    (*key, to_epoch(at), limits.MAX_COUNT),
                )
            else:
                conn.execute(
                    "INSERT OR IGNORE INTO pattern_links (tenant, tag, category, kind, target_id) VALUES (?, ?, ?, ?, ?)",
                    key,
                )
            row = conn.execute(
                "SELECT * FROM pattern_links WHERE tenant = ? AND tag = ? AND category = ? AND kind = ? "
                "AND target_id = ?",
                key,
            ).fetchone()
        return _link(row), counted

    def links(
        self,
        tenant: str,
        *,
        tag: str | None = None,
        category: str | None = None,
        kind: str | None = None,
        min_success: int = 0,
        limit: int = 100,
    ) -> list[LinkRecord]:
        sql, params = "SELECT * FROM pattern_links WHERE tenant = ? AND success >= ?", [tenant, min_success]
        for column, value in (("tag", tag), ("category", category), ("kind", kind)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        rows = self._read(sql + " ORDER BY success DESC, failure, target_id LIMIT ?", [*params, limit])
        return [_link(row) for row in rows]

    # ---- jobs -------------------------------------------------------------

    def acquire_lease(self, name: str, holder: str, *, now: datetime, until: datetime) -> bool:
        with self._db._write() as conn:
            row = conn.execute("SELECT holder, expires_at FROM job_leases WHERE name = ?", (name,)).fetchone()
            if row and row["holder"] != holder and row["expires_at"] > to_epoch(now):
                return False
            conn.execute(
                "INSERT INTO job_leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) "
                "DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
                (name, holder, to_epoch(until)),
            )
        return True

    def release_lease(self, name: str, holder: str) -> None:
        with self._db._write() as conn:
            conn.execute("DELETE FROM job_leases WHERE name = ? AND holder = ?", (name, holder))

    def job_state(self, name: str) -> dict[str, Any]:
        rows = self._read("SELECT state FROM job_state WHERE name = ?", (name,))
        return json.loads(rows[0]["state"]) if rows else {}

    def save_job_state(self, name: str, state: dict[str, Any], *, at: datetime) -> None:
        with self._db._write() as conn:
            conn.execute(
                "INSERT INTO job_state (name, state, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) "
                "DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
                (name, json.dumps(state), to_epoch(at)),
            )
