"""Asynchronous jobs (:mod:`capsule.store.async_jobs`) in the embedded SQLite file: one table,
created with ``IF NOT EXISTS``, written in the memory store's ``BEGIN IMMEDIATE`` transactions (so
a claim is atomic across the gateway's worker processes)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .async_jobs import DONE, QUEUED, RUNNING, Job
from .sqlite import SQLiteStore
from .sqlite_connection import create_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS async_jobs (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    principal TEXT NOT NULL,
    operation TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    response TEXT,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX IF NOT EXISTS async_jobs_expiry ON async_jobs (expires_at);
CREATE INDEX IF NOT EXISTS async_jobs_status ON async_jobs (status, lease_until);
"""

_COLUMNS = (
    "tenant, id, principal, operation, request, status, created_at, expires_at, started_at, finished_at, "
    "lease_until, attempts, response"
)


def _job(row: sqlite3.Row) -> Job:
    return Job(
        id=row["id"],
        tenant=row["tenant"],
        principal=row["principal"],
        operation=row["operation"],
        request=json.loads(row["request"]),
        status=row["status"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        lease_until=row["lease_until"],
        attempts=row["attempts"],
        response=json.loads(row["response"]) if row["response"] is not None else None,
    )


class SQLiteJobStore:
    def __init__(self, db: SQLiteStore) -> None:
        self._db = db

    def migrate(self) -> None:
        with self._db._write() as conn:
            create_schema(conn, SCHEMA)

    def create(self, job: Job) -> None:
        with self._db._write() as conn:
            conn.execute(
                f"INSERT INTO async_jobs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.tenant,
                    job.id,
                    job.principal,
                    job.operation,
                    json.dumps(job.request, ensure_ascii=False),
                    job.status,
                    job.created_at,
                    job.expires_at,
                    job.started_at,
                    job.finished_at,
                    job.lease_until,
                    job.attempts,
                    None if job.response is None else json.dumps(job.response, ensure_ascii=False),
                ),
            )

    def get(self, tenant: str, job_id: str, *, now: float) -> Job | None:
        rows = self._db._read(
            f"SELECT {_COLUMNS} FROM async_jobs WHERE tenant = ? AND id = ? AND expires_at > ?", (tenant, job_id, now)
        )
        return _job(rows[0]) if rows else None

    def claim(self, tenant: str, job_id: str, *, now: float, lease_s: float) -> Job | None:
        with self._db._write() as conn:
            claimed = conn.execute(
                "UPDATE async_jobs SET status = ?, started_at = ?, lease_until = ?, attempts = attempts + 1 "
                "WHERE tenant = ? AND id = ? AND expires_at > ? "
                "AND (status = ? OR (status = ? AND lease_until <= ?))",
                (RUNNING, now, now + lease_s, tenant, job_id, now, QUEUED, RUNNING, now),
            ).rowcount
            if not claimed:
                return None
            row = conn.execute(f"SELECT {_COLUMNS} FROM async_jobs WHERE tenant = ? AND id = ?", (tenant, job_id))
            return _job(row.fetchone())

    def finish(self, tenant: str, job_id: str, *, status: str, response: dict[str, Any], now: float) -> bool:
        assert status in DONE, status
        with self._db._write() as conn:
            return bool(
                conn.execute(
                    "UPDATE async_jobs SET status = ?, finished_at = ?, lease_until = NULL, response = ? "
                    "WHERE tenant = ? AND id = ? AND status IN (?, ?)",
                    (status, now, json.dumps(response, ensure_ascii=False), tenant, job_id, QUEUED, RUNNING),
                ).rowcount
            )

    def pending(self, *, now: float, limit: int) -> list[tuple[str, str]]:
        rows = self._db._read(
            "SELECT tenant, id FROM async_jobs WHERE expires_at > ? "
            "AND (status = ? OR (status = ? AND lease_until <= ?)) ORDER BY created_at LIMIT ?",
            (now, QUEUED, RUNNING, now, limit),
        )
        return [(row["tenant"], row["id"]) for row in rows]

    def purge(self, now: float) -> int:
        with self._db._write() as conn:
            return conn.execute("DELETE FROM async_jobs WHERE expires_at <= ?", (now,)).rowcount
