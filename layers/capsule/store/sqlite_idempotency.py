"""Idempotency keys (:mod:`capsule.store.idempotency`) in the embedded SQLite file: one table,
created with ``IF NOT EXISTS``, written in the memory store's ``BEGIN IMMEDIATE`` transactions
(so a claim is atomic across processes)."""

from __future__ import annotations

import json
from typing import Any

from .idempotency import COMPLETED, IN_PROGRESS, IdempotencyRecord
from .sqlite import SQLiteStore
from .sqlite_connection import create_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS idempotency_keys (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL,
    expires_at REAL NOT NULL,
    response TEXT,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_at);
"""


class SQLiteIdempotencyStore:
    def __init__(self, db: SQLiteStore) -> None:
        self._db = db

    def migrate(self) -> None:
        with self._db._write() as conn:
            create_schema(conn, SCHEMA)

    def claim(self, tenant: str, key: str, fingerprint: str, *, now: float, lease_s: float) -> IdempotencyRecord | None:
        with self._db._write() as conn:
            row = conn.execute(
                "SELECT fingerprint, status, expires_at, response FROM idempotency_keys WHERE tenant = ? AND key = ?",
                (tenant, key),
            ).fetchone()
            if row is not None and row["expires_at"] > now:
                response = json.loads(row["response"]) if row["response"] is not None else None
                return IdempotencyRecord(tenant, key, row["fingerprint"], row["status"], row["expires_at"], response)
            conn.execute(
                "INSERT OR REPLACE INTO idempotency_keys (tenant, key, fingerprint, status, expires_at, response) "
                "VALUES (?, ?, ?, ?, ?, NULL)",
                (tenant, key, fingerprint, IN_PROGRESS, now + lease_s),
            )
        return None

    def complete(
        self, tenant: str, key: str, fingerprint: str, response: dict[str, Any], *, now: float, ttl_s: float
    ) -> None:
        with self._db._write() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET status = ?, expires_at = ?, response = ? "
                "WHERE tenant = ? AND key = ? AND fingerprint = ?",
                (COMPLETED, now + ttl_s, json.dumps(response, ensure_ascii=False), tenant, key, fingerprint),
            )

    def release(self, tenant: str, key: str, fingerprint: str) -> None:
        with self._db._write() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE tenant = ? AND key = ? AND fingerprint = ? AND status = ?",
                (tenant, key, fingerprint, IN_PROGRESS),
            )

    def purge(self, now: float) -> int:
        with self._db._write() as conn:
            return conn.execute("DELETE FROM idempotency_keys WHERE expires_at <= ?", (now,)).rowcount
