"""The embedded store's schema: numbered migrations, applied in order by
:meth:`~capsule.store.sqlite.SQLiteStore.migrate` and counted in ``PRAGMA user_version``."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from . import sqlite_governance_schema, sqlite_keys, sqlite_learning_schema, sqlite_visibility_schema

# The dedupe index's key (migration 11): a query must name this very expression to use it,
# and compare it with content_key of the hash it looks for.
CONTENT_KEY = "substr(sha256, 1, 16)"


def content_key(sha256: str) -> str:
    """What :data:`CONTENT_KEY` is for a row of this content hash."""
    return sha256[:16]


def rebuild_ids_per_tenant(conn: sqlite3.Connection, table: str, key: str, number: int) -> None:
    """Make ``table``'s ``id TEXT NOT NULL UNIQUE`` (unique per store) unique per (tenant, id).

    SQLite cannot drop a column's UNIQUE, so the table is rebuilt: created again from its own
    CREATE (with every column later migrations added) minus that UNIQUE, filled by one
    INSERT ... SELECT, the old table dropped, the new one renamed, its indexes made again from
    their own CREATEs (after the copy: one sort per index, not a B-tree insert per row), and
    ``(tenant, id)`` made the unique index ``key``. The AUTOINCREMENT counter is carried over so
    no ``seq`` is ever handed out twice. Triggers go with the old table: a table that has any
    makes them again itself (the memories' count triggers: ``migrate``)."""
    table_sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()[0]
    indexes = [
        row[0]
        for row in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (table,)
        )
    ]
    rebuilt_name = f"{table}_rebuilt"
    rebuilt = table_sql.replace("id TEXT NOT NULL UNIQUE", "id TEXT NOT NULL", 1)
    # A table once renamed is stored as CREATE TABLE "name": either form is this table's.
    rebuilt = re.sub(rf'^CREATE TABLE "?{table}"?(?=\s*\()', f"CREATE TABLE {rebuilt_name}", rebuilt, count=1)
    if rebuilt.count("UNIQUE") != table_sql.count("UNIQUE") - 1 or rebuilt_name not in rebuilt:
        raise RuntimeError(f"migration {number}: the {table} table is not the one its first migration made")
    columns = ", ".join(f'"{row[1]}"' for row in conn.execute(f"PRAGMA table_info({table})"))
    conn.execute(rebuilt)
    conn.execute(f"INSERT INTO {rebuilt_name} ({columns}) SELECT {columns} FROM {table} ORDER BY seq")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = ?", (rebuilt_name,))
    conn.execute(
        "INSERT INTO sqlite_sequence (name, seq) SELECT ?, seq FROM sqlite_sequence WHERE name = ?",
        (rebuilt_name, table),
    )
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {rebuilt_name} RENAME TO {table}")
    for sql in indexes:
        conn.execute(sql)
    conn.execute(f"CREATE UNIQUE INDEX {key} ON {table} (tenant, id)")


def ids_per_tenant(conn: sqlite3.Connection) -> None:
    """Migration 14: a memory id is unique within its tenant, as in Mongo, not across the store.

    With ``id TEXT NOT NULL UNIQUE`` (migration 1) a row another tenant's id could not be
    stored as sent, and every way around that (a refusal, a derived id, a note) told the
    caller the id exists elsewhere (issue 31). The count triggers (:mod:`.sqlite_counts`) go
    with the old table; ``migrate`` makes them again."""
    rebuild_ids_per_tenant(conn, "memories", "memories_id", 14)


def solution_ids_per_tenant(conn: sqlite3.Connection) -> None:
    """Migration 15: solution and application ids unique within their tenant, as memory ids
    are since 14 (and as on Mongo): an import or a create of an id another tenant holds no
    longer fails, is renamed or is noted, any of which told the caller it exists (issue 31)."""
    rebuild_ids_per_tenant(conn, "solutions", "solutions_id", 15)
    rebuild_ids_per_tenant(conn, "solution_applications", "applications_id", 15)


# A migration is a script (statements split on ';') or, where SQL alone cannot say it, a
# function run on the migrating connection inside the same write transaction.
MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [
    # 1: memories, projects, feedback, audit, embedding cache
    """
    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        project TEXT NOT NULL,
        content TEXT NOT NULL,
        path TEXT,
        chunk_index INTEGER,
        chunk_count INTEGER,
        embedding BLOB,
        model TEXT,
        sha256 TEXT NOT NULL,
        occurred_at REAL NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        accessed_at REAL,
        pinned INTEGER NOT NULL DEFAULT 0,
        explanation TEXT,
        meta TEXT NOT NULL DEFAULT '{}',
        component TEXT,
        category TEXT,
        helpful INTEGER NOT NULL DEFAULT 0,
        unhelpful INTEGER NOT NULL DEFAULT 0,
        deleted_at REAL,
        deleted_reason TEXT,
        status TEXT NOT NULL DEFAULT 'ready'
    );
    CREATE INDEX memories_recent ON memories (tenant, project, deleted_at, created_at, id);
    CREATE INDEX memories_sha ON memories (tenant, project, sha256);
    CREATE INDEX memories_pinned ON memories (tenant, project, pinned, deleted_at);
    CREATE INDEX memories_deleted ON memories (deleted_at) WHERE deleted_at IS NOT NULL;
    CREATE INDEX memories_pending ON memories (status) WHERE status != 'ready';
    CREATE TABLE projects (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        retention_limit INTEGER,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (tenant, name)
    );
    CREATE TABLE feedback (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        helpful INTEGER NOT NULL,
        context TEXT,
        at REAL NOT NULL
    );
    CREATE INDEX feedback_memory ON feedback (tenant, memory_id);
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        project TEXT NOT NULL,
        action TEXT NOT NULL,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX audit_memory ON audit (tenant, memory_id);
    CREATE TABLE embedding_cache (
        model TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        vector BLOB NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (model, sha256)
    );
    """,
    # 2: a per-project change counter, so a warm index reads only what changed
    """
    ALTER TABLE memories ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE projects ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE projects ADD COLUMN purged_version INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memories_version ON memories (tenant, project, version);
    """,
    # 3: solutions (fixpacks), their applications, patterns, pattern links and their evidence,
    #    job leases and resume points (capsule.store.sqlite_learning)
    """
    CREATE TABLE solutions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        title TEXT NOT NULL,
        category TEXT NOT NULL,
        body TEXT NOT NULL,
        embeddings BLOB,
        signatures INTEGER NOT NULL DEFAULT 0,
        model TEXT,
        success INTEGER NOT NULL DEFAULT 0,
        failure INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX solutions_recent ON solutions (tenant, created_at, id);
    CREATE INDEX solutions_title ON solutions (tenant, title, category);
    CREATE TABLE solution_applications (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        solution_id TEXT NOT NULL,
        success INTEGER NOT NULL,
        project TEXT,
        error TEXT,
        context TEXT,
        at REAL NOT NULL
    );
    CREATE INDEX applications_tenant ON solution_applications (tenant, at);
    CREATE INDEX applications_solution ON solution_applications (tenant, solution_id);
    CREATE TABLE patterns (
        tenant TEXT NOT NULL,
        tag TEXT NOT NULL,
        category TEXT NOT NULL,
        body TEXT NOT NULL,
        occurrences INTEGER NOT NULL,
        embedding BLOB,
        model TEXT,
        first_seen REAL,
        last_seen REAL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (tenant, tag, category)
    );
    CREATE TABLE pattern_links (
        tenant TEXT NOT NULL,
        tag TEXT NOT NULL,
        category TEXT NOT NULL,
        kind TEXT NOT NULL,
        target_id TEXT NOT NULL,
        success INTEGER NOT NULL DEFAULT 0,
        failure INTEGER NOT NULL DEFAULT 0,
        last_at REAL,
        PRIMARY KEY (tenant, tag, category, kind, target_id)
    );
    CREATE INDEX pattern_links_target ON pattern_links (tenant, kind, target_id);
    CREATE TABLE pattern_evidence (
        tenant TEXT NOT NULL,
        tag TEXT NOT NULL,
        category TEXT NOT NULL,
        kind TEXT NOT NULL,
        target_id TEXT NOT NULL,
        evidence TEXT NOT NULL,
        PRIMARY KEY (tenant, tag, category, kind, target_id, evidence)
    );
    CREATE TABLE job_leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE TABLE job_state (
        name TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
    # 4: the dedupe look-up reads one index range (it scanned the last 48 hours of the project)
    """
    DROP INDEX IF EXISTS memories_sha;
    CREATE INDEX memories_dedupe ON memories (tenant, project, sha256, created_at);
    """,
    # 5: what a search index loads, kept at write time (capsule.search.terms): each memory's keyword
    #    term hashes with the tokenizer version that made them, and its tie-break key; and an
    #    index that reads a project's active rows in order without sorting their vectors
    """
    ALTER TABLE memories ADD COLUMN terms BLOB;
    ALTER TABLE memories ADD COLUMN terms_version TEXT;
    ALTER TABLE memories ADD COLUMN sort_key INTEGER;
    CREATE INDEX memories_load ON memories (tenant, project, deleted_at, seq);
    """,
    # 6: the turn before a memory in its session (capsule.service.context) in one index probe
    """
    CREATE INDEX memories_session ON memories (tenant, project, json_extract(meta, '$.session'), occurred_at)
        WHERE deleted_at IS NULL;
    """,
    # 7: what an index loads of a row besides its terms and the fields that change, in one blob
    #    kept at write time (capsule.search.index.pack_row): its tie-break key, times, vector size and
    #    the vector's sign bits; the meta fields ranking reads ('' for none); and an index that
    #    holds all an index load reads, so a large project loads without reading its rows
    """
    ALTER TABLE memories ADD COLUMN packed BLOB;
    ALTER TABLE memories ADD COLUMN facets TEXT;
    CREATE INDEX memories_packed ON memories (tenant, project, deleted_at, seq, id, packed, model, terms_version,
                                              terms, helpful, unhelpful, facets);
    """,
    # 8: governance (capsule.governance): retention class, expiry, supersession, earlier versions
    #    (capsule.store.sqlite_governance)
    sqlite_governance_schema.MIGRATION,
    # 9: visibility and subject of each memory, the tenant's principal scopes
    #    (capsule.store.sqlite_visibility_schema)
    sqlite_visibility_schema.MIGRATION,
    # 10: tenants' wrapped data keys and projects' encryption setting (capsule.crypto)
    sqlite_keys.MIGRATION,
    # 11: the dedupe look-up by the content hash's first 64 bits, of active rows only. The hash
    #    is the one index key that lands at random places, so each bulk batch dirtied a page of
    #    most of its leaves; keyed by (tenant, project, sha256, created_at) an entry was ~100
    #    bytes, now ~25 (a 500k-row ingest's last tenths ran ~40% slower with it than with no
    #    such index; store/WRITES.md has the 1M figures before and after). The look-ups
    #    check the whole hash, tenant and project on the row.
    f"""
    DROP INDEX IF EXISTS memories_dedupe;
    CREATE INDEX memories_content ON memories ({CONTENT_KEY}) WHERE deleted_at IS NULL;
    """,
    # solutions' last_applied_at and verified_on (capsule.store.sqlite_learning_schema)
    sqlite_learning_schema.MIGRATION,
    # 13: no job or page reads a table whole (issue 32; tests/store/test_query_plans.py):
    #    - the embedding cache's purge by age read the whole cache;
    #    - the backfill after a model switch (model IS NULL, or another model) read every row in
    #      seq order until it found one: an active row's model, appended per model (rowid last),
    #      so a store writes at the end of its model's range, not at a random place;
    #    - an export page of a project walked the whole file by rowid from its cursor, filtering
    #      by tenant and project: (tenant, project) with the rowid after them is one range per page.
    """
    CREATE INDEX IF NOT EXISTS embedding_cache_age ON embedding_cache (created_at);
    CREATE INDEX IF NOT EXISTS memories_model ON memories (model) WHERE deleted_at IS NULL;
    CREATE INDEX IF NOT EXISTS memories_rows ON memories (tenant, project);
    """,
    # 14: memory ids unique per (tenant, id), not per store (issue 31): a table rebuild
    ids_per_tenant,
    # 15: solution and application ids unique per (tenant, id) (issue 31): the same rebuild
    solution_ids_per_tenant,
    # 16: the audit log read by page (GET /v1/audit, SQLiteProjects.audit_page): newest first by
    #    (at, id) within the tenant, a project (and an action), a memory or an action, each one
    #    index range; audit_memory's (tenant, memory_id) is the prefix of audit_memory_at
    """
    DROP INDEX IF EXISTS audit_memory;
    CREATE INDEX IF NOT EXISTS audit_at ON audit (tenant, at, id);
    CREATE INDEX IF NOT EXISTS audit_project_at ON audit (tenant, project, at, id);
    CREATE INDEX IF NOT EXISTS audit_project_action_at ON audit (tenant, project, action, at, id);
    CREATE INDEX IF NOT EXISTS audit_memory_at ON audit (tenant, memory_id, at, id);
    CREATE INDEX IF NOT EXISTS audit_action_at ON audit (tenant, action, at, id);
    """,
]
