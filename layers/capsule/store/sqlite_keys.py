"""Tenants' wrapped data keys and projects' ``encryption`` setting in the SQLite file
(capsule.crypto.keys.KeyStore); the tables come with migration 10 (:data:`MIGRATION`)."""

from __future__ import annotations

from datetime import datetime

from ..clock import from_epoch, to_epoch

MIGRATION = """
CREATE TABLE data_keys (
    tenant TEXT NOT NULL,
    version INTEGER NOT NULL,
    kid TEXT NOT NULL,
    wrapped BLOB NOT NULL,
    wrapped_by TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, version)
);
CREATE TABLE project_encryption (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    mode TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, name)
);
"""


class SQLiteKeyStore:
    def __init__(self, db) -> None:  # a capsule.store.sqlite.SQLiteStore
        self._db = db

    def data_keys(self, tenant: str) -> list:
        from ..crypto.keys import DataKeyRow  # cryptography loads only where keys are used

        rows = self._db._read("SELECT * FROM data_keys WHERE tenant = ? ORDER BY version", (tenant,))
        return [DataKeyRow(r["tenant"], r["kid"], r["version"], bytes(r["wrapped"]), r["wrapped_by"],
                           from_epoch(r["created_at"])) for r in rows]

    def add_data_key(self, row) -> bool:
        at = to_epoch(row.created_at)
        with self._db._write() as conn:
            done = conn.execute("INSERT OR IGNORE INTO data_keys VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (row.tenant, row.version, row.kid, row.wrapped, row.wrapped_by, at, at)).rowcount
        return bool(done)

    def rewrap_data_key(self, tenant: str, version: int, wrapped: bytes, wrapped_by: str, *, was: str) -> bool:
        with self._db._write() as conn:
            done = conn.execute("UPDATE data_keys SET wrapped = ?, wrapped_by = ? WHERE tenant = ? AND version = ?"
                                " AND wrapped_by = ?", (wrapped, wrapped_by, tenant, version, was)).rowcount
        return bool(done)

    def encryption_mode(self, tenant: str, project: str) -> str | None:
        rows = self._db._read("SELECT mode FROM project_encryption WHERE tenant = ? AND name = ?", (tenant, project))
        return rows[0]["mode"] if rows else None

    def set_encryption_mode(self, tenant: str, project: str, mode: str, *, at: datetime) -> None:
        with self._db._write() as conn:
            conn.execute("INSERT INTO project_encryption VALUES (?, ?, ?, ?) ON CONFLICT (tenant, name)"
                         " DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at",
                         (tenant, project, mode, to_epoch(at)))
