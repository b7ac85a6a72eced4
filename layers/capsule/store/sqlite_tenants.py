"""Moving one tenant's data into another in the SQLite store (:class:`capsule.store.tenants.TenantMover`).

One source tenant moves in one ``BEGIN IMMEDIATE`` transaction: all of it or none. Every
project the source holds gets the target project's next version, and its memories carry
that version, so a warm index of the target project picks them up as changes. A table with
a ``tenant`` column that this module does not know stops the move (nothing changes) rather
than leaving that table's rows behind.
"""

from __future__ import annotations

import sqlite3

from ..core.errors import Conflict, Unavailable
from .sqlite import SQLiteStore

# Tables whose rows simply change tenant (their keys do not include the tenant).
RETAGGED = ("feedback", "audit", "solutions", "solution_applications", "memory_versions")
# Tables keyed by tenant, combined with what the target already holds.
COMBINED = (
    "projects",
    "memories",
    "patterns",
    "pattern_links",
    "pattern_evidence",
    "project_policies",
    "project_encryption",
    "principal_scopes",
)
# Encryption at rest (capsule.crypto): a tenant's sealed memories are bound to it and to its data
# keys, so a tenant that has data keys is not moved (its memories would no longer open).
SEALING = ("data_keys",)
# Tables whose ids are unique per (tenant, id), and what their rows are called.
ID_KEYED = (("memories", "memory"), ("solutions", "solution"), ("solution_applications", "application"))
# Tables SQLite keeps from the memories by triggers (capsule.store.sqlite_counts): they follow the move.
DERIVED = ("project_counts",)
# A pattern both hold keeps the one seen more often (the mining job re-derives it from the
# memories, now all in the target); a link's counters add up; evidence is a set.
_PATTERNS = """
    INSERT INTO patterns (tenant, tag, category, body, occurrences, embedding, model, first_seen, last_seen,
                          created_at, updated_at)
    SELECT ?, tag, category, body, occurrences, embedding, model, first_seen, last_seen, created_at, updated_at
    FROM patterns WHERE tenant = ?
    ON CONFLICT (tenant, tag, category) DO UPDATE SET
        body = CASE WHEN excluded.occurrences > occurrences THEN excluded.body ELSE body END,
        embedding = CASE WHEN excluded.occurrences > occurrences THEN excluded.embedding ELSE embedding END,
        model = CASE WHEN excluded.occurrences > occurrences THEN excluded.model ELSE model END,
        occurrences = max(occurrences, excluded.occurrences),
        first_seen = min(coalesce(first_seen, excluded.first_seen), coalesce(excluded.first_seen, first_seen)),
        last_seen = max(coalesce(last_seen, excluded.last_seen), coalesce(excluded.last_seen, last_seen)),
        created_at = min(created_at, excluded.created_at), updated_at = max(updated_at, excluded.updated_at)
"""
_LINKS = """
    INSERT INTO pattern_links (tenant, tag, category, kind, target_id, success, failure, last_at)
    SELECT ?, tag, category, kind, target_id, success, failure, last_at FROM pattern_links WHERE tenant = ?
    ON CONFLICT (tenant, tag, category, kind, target_id) DO UPDATE SET
        success = success + excluded.success, failure = failure + excluded.failure,
        last_at = max(coalesce(last_at, excluded.last_at), coalesce(excluded.last_at, last_at))
"""
_EVIDENCE = """
    INSERT OR IGNORE INTO pattern_evidence (tenant, tag, category, kind, target_id, evidence)
    SELECT ?, tag, category, kind, target_id, evidence FROM pattern_evidence WHERE tenant = ?
"""
# A project's secrets/personal-data policies (capsule.guard): the target's own, where it has one, win.
_POLICIES = """
    INSERT INTO project_policies (tenant, name, secrets_policy, pii_policy, updated_at)
    SELECT ?, name, secrets_policy, pii_policy, updated_at FROM project_policies WHERE tenant = ?
    ON CONFLICT (tenant, name) DO UPDATE SET
        secrets_policy = coalesce(secrets_policy, excluded.secrets_policy),
        pii_policy = coalesce(pii_policy, excluded.pii_policy), updated_at = max(updated_at, excluded.updated_at)
"""
_ENCRYPTION = """
    INSERT OR IGNORE INTO project_encryption (tenant, name, mode, updated_at)
    SELECT ?, name, mode, updated_at FROM project_encryption WHERE tenant = ?
"""
# Which IAM principals get which scope (functions.scopes): the target's own rules, where it has
# any, win; merging two rule lists could widen what a principal reaches.
_PRINCIPALS = """
    INSERT OR IGNORE INTO principal_scopes (tenant, rules, updated_at)
    SELECT ?, rules, updated_at FROM principal_scopes WHERE tenant = ?
"""
_PROJECT = """
    INSERT INTO projects (tenant, name, retention_limit, created_at, updated_at)
    SELECT ?, name, retention_limit, created_at, updated_at FROM projects WHERE tenant = ? AND name = ?
    ON CONFLICT (tenant, name) DO UPDATE SET
        retention_limit = coalesce(retention_limit, excluded.retention_limit),
        created_at = min(created_at, excluded.created_at), updated_at = max(updated_at, excluded.updated_at)
"""


class SQLiteTenantMover:
    """Counts and moves tenants in one :class:`~capsule.store.sqlite.SQLiteStore` (migrated)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def _tables(self, conn: sqlite3.Connection) -> list[str]:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [
            n
            for n in names
            if n not in DERIVED and "tenant" in {c[1] for c in conn.execute(f'PRAGMA table_info("{n}")')}
        ]

    def _check_known(self, conn: sqlite3.Connection) -> list[str]:
        tables = self._tables(conn)
        unknown = sorted(set(tables) - set(RETAGGED) - set(COMBINED) - set(SEALING))
        if unknown:
            raise Unavailable(
                f"cannot merge tenants: the table(s) {', '.join(unknown)} hold tenants that "
                "capsule.store.sqlite_tenants does not know how to move"
            )
        return tables

    def tenants(self) -> list[str]:
        with self._store._snapshot() as conn:
            found: set[str] = set()
            for table in self._check_known(conn):
                found |= {r[0] for r in conn.execute(f"SELECT DISTINCT tenant FROM {table}")}
        return sorted(found)

    def count(self, tenant: str) -> dict[str, int]:
        with self._store._snapshot() as conn:
            counts = {
                t: conn.execute(f"SELECT count(*) FROM {t} WHERE tenant = ?", (tenant,)).fetchone()[0]
                for t in self._check_known(conn)
            }
        return {t: n for t, n in counts.items() if n}

    def move(self, source: str, target: str) -> dict[str, int]:
        if source == target:
            raise ValueError("a tenant cannot be merged into itself")
        # The store's own write transaction and version counter: a move is one write per project.
        with self._store._write() as conn:
            self._check_known(conn)
            if conn.execute("SELECT 1 FROM data_keys WHERE tenant = ? LIMIT 1", (source,)).fetchone():
                raise Conflict(
                    f"tenant {source} has encrypted memories (data keys of its own): they cannot be"
                    " merged into another tenant, whose keys do not open them"
                )
            # Ids are unique per tenant (migrations 14, 15): two tenants may each hold one id, and
            # one tenant cannot hold both rows (an operator's command; no tenant's caller sees it).
            for table, what in ID_KEYED:
                clash = [
                    r[0]
                    for r in conn.execute(
                        f"SELECT s.id FROM {table} s JOIN {table} t ON t.tenant = ? AND t.id = s.id WHERE s.tenant = ? "
                        "ORDER BY s.id LIMIT 5",
                        (target, source),
                    )
                ]
                if clash:
                    raise Conflict(
                        f"tenants {source} and {target} both hold {what} id(s) {', '.join(clash)}: "
                        "they cannot be merged while both do"
                    )
            moved = {
                t: conn.execute(f"SELECT count(*) FROM {t} WHERE tenant = ?", (source,)).fetchone()[0]
                for t in (*COMBINED, *RETAGGED)
            }
            self._move_projects(conn, source, target)
            for table in RETAGGED:
                conn.execute(f"UPDATE {table} SET tenant = ? WHERE tenant = ?", (target, source))
            for sql, table in (
                (_PATTERNS, "patterns"),
                (_LINKS, "pattern_links"),
                (_EVIDENCE, "pattern_evidence"),
                (_POLICIES, "project_policies"),
                (_ENCRYPTION, "project_encryption"),
                (_PRINCIPALS, "principal_scopes"),
            ):
                conn.execute(sql, (target, source))
                conn.execute(f"DELETE FROM {table} WHERE tenant = ?", (source,))
        return {t: n for t, n in moved.items() if n}

    def _move_projects(self, conn: sqlite3.Connection, source: str, target: str) -> None:
        names = {r[0] for r in conn.execute("SELECT name FROM projects WHERE tenant = ?", (source,))}
        names |= {r[0] for r in conn.execute("SELECT DISTINCT project FROM memories WHERE tenant = ?", (source,))}
        for name in sorted(names):
            conn.execute(_PROJECT, (target, source, name))
            version = SQLiteStore._bump(conn, target, name)
            conn.execute(
                "UPDATE memories SET tenant = ?, version = ? WHERE tenant = ? AND project = ?",
                (target, version, source, name),
            )
        conn.execute("DELETE FROM projects WHERE tenant = ?", (source,))
