"""Tenants' wrapped data keys and projects' ``encryption`` setting in the SQLite file
(capsule.crypto.keys.KeyStore); the tables come with migration 10 (:data:`MIGRATION`)."""

from __future__ import annotations

from datetime import datetime

from ..core.clock import from_epoch, to_epoch

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
        return [
            DataKeyRow(
                r["tenant"], r["kid"], r["version"], bytes(r["wrapped"]), r["wrapped_by"], from_epoch(r["created_at"])
            )
            for r in rows
        ]

    def add_data_key(self, row) -> bool:
        at = to_epoch(row.created_at)
        with self._db._write() as conn:
            done = conn.execute(
                "INSERT OR IGNORE INTO data_keys VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row.tenant, row.version, row.kid, row.wrapped, row.wrapped_by, at, at),
            ).rowcount
        return bool(done)

    def rewrap_data_key(self, tenant: str, version: int, wrapped: bytes, wrapped_by: str, *, was: str) -> bool:
        with self._db._write() as conn:
            done = conn.execute(
                "UPDATE data_keys SET wrapped = ?, wrapped_by = ? WHERE tenant = ? AND version = ? AND wrapped_by = ?",
                (wrapped, wrapped_by, tenant, version, was),
            ).rowcount
        return bool(done)

    def encryption_mode(self, tenant: str, project: str) -> str | None:
        rows = self._db._read("SELECT mode FROM project_encryption WHERE tenant = ? AND name = ?", (tenant, project))
        return rows[0]["mode"] if rows else None

    def set_encryption_mode(self, tenant: str, project: str, mode: str, *, at: datetime) -> None:
        with self._db._write() as conn:
            conn.execute(
                "INSERT INTO project_encryption VALUES (?, ?, ?, ?) ON CONFLICT (tenant, name)"
                " DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at",
                (tenant, project, mode, to_epoch(at)),
            )

    # ---- re-sealing (capsule.sealing.reseal) ------------------------------------------

    def stale_ids(self, tenant: str, current: str, *, all_projects: list[str], limit: int) -> list[str]:
        """Ids of the tenant's memories sealed under another data key than ``current`` (a
        ``kid.version``), and of unsealed ones in ``all_projects`` (set to encrypt every memory)."""
        sql = (
            "SELECT id FROM memories WHERE tenant = ? AND ((content LIKE 'cme1.%' AND content NOT LIKE ?)"
            f" OR (project IN ({', '.join('?' * len(all_projects))}) AND content NOT LIKE 'cme1.%'))"
            " ORDER BY seq LIMIT ?"
        )
        rows = self._db._read(sql, (tenant, f"cme1.{current}.%", *all_projects, limit))
        return [r["id"] for r in rows]

    def all_projects(self, tenant: str) -> list[str]:
        rows = self._db._read("SELECT name FROM project_encryption WHERE tenant = ? AND mode = 'all'", (tenant,))
        return [r["name"] for r in rows]

    def rewrite_sealed(self, record, was: str) -> bool:
        """Write a memory's sealed fields over its stored ones, if its content is still ``was``
        (the same memory, re-sealed: its version is not bumped, what it says is unchanged)."""
        import json

        from ..search import terms
        from .sqlite_rows import facets

        with self._db._write() as conn:
            done = conn.execute(
                "UPDATE memories SET content = ?, meta = ?, explanation = ?, terms = ?, terms_version = ?, facets = ?,"
                " component = NULL, category = NULL WHERE tenant = ? AND id = ? AND content = ?",
                (
                    record.content,
                    json.dumps(record.meta),
                    record.explanation,
                    terms.encode_record(record),
                    terms.TOKENIZER,
                    facets(record.meta),
                    record.tenant,
                    record.id,
                    was,
                ),
            ).rowcount
        return bool(done)
