"""Each project's count of active memories, kept by SQLite itself (triggers), read in one probe.

A store checks the retention limit in its write transaction. ``count(*)`` of a project's
active rows reads an index range as long as the project (10k rows: ~6 ms, the largest part of
a store; 1M: a second), so the count is kept instead, by triggers on ``memories``: every path
that inserts, deletes, forgets, evicts, restores or moves a row (the store, governance,
transfer, sync, tenants, a bulk ingest, an older version of this code) keeps it right, with no
code of its own.

Like ``project_policies``, made outside the numbered migrations (nothing depends on its order,
and other schema changes number theirs). :func:`ensure` runs in every ``migrate``: when a
trigger is missing (a new database, or a migration rebuilt the table and dropped them) the
counts are rebuilt from the rows, inside the same write transaction.
"""

from __future__ import annotations

import sqlite3

TABLE = """CREATE TABLE IF NOT EXISTS project_counts (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    active INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID"""

_ADD = ("INSERT INTO project_counts (tenant, name, active) SELECT NEW.tenant, NEW.project, 1 "
        "WHERE NEW.deleted_at IS NULL ON CONFLICT (tenant, name) DO UPDATE SET active = active + 1;")
# A count that reaches 0 goes (a tenant moved away or emptied leaves no row behind).
_REMOVE = ("UPDATE project_counts SET active = active - 1 "
           "WHERE OLD.deleted_at IS NULL AND tenant = OLD.tenant AND name = OLD.project; "
           "DELETE FROM project_counts WHERE OLD.deleted_at IS NULL AND tenant = OLD.tenant AND name = OLD.project "
           "AND active <= 0;")

TRIGGERS = {
    "memories_count_insert": f"AFTER INSERT ON memories BEGIN {_ADD} END",
    "memories_count_delete": f"AFTER DELETE ON memories BEGIN {_REMOVE} END",
    # Only when the row leaves or joins a project's active ones: a store's other updates
    # (feedback, pin, embedding) fire nothing.
    "memories_count_update": (
        "AFTER UPDATE OF deleted_at, tenant, project ON memories "
        "WHEN (OLD.deleted_at IS NULL) != (NEW.deleted_at IS NULL) OR OLD.tenant != NEW.tenant "
        f"OR OLD.project != NEW.project BEGIN {_REMOVE} {_ADD} END"
    ),
}

REBUILD = ("INSERT INTO project_counts (tenant, name, active) SELECT tenant, project, count(*) FROM memories "
           "WHERE deleted_at IS NULL GROUP BY tenant, project")


def ensure(conn: sqlite3.Connection) -> bool:
    """Make the table and triggers where missing, rebuilding the counts then; True if rebuilt.
    Runs inside the caller's write transaction, so no write falls between rebuild and trigger."""
    conn.execute(TABLE)
    wanted = {name: f"CREATE TRIGGER {name} {body}" for name, body in TRIGGERS.items()}
    present = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories'"))
    if all(present.get(name) == sql for name, sql in wanted.items()):
        return False
    for name, sql in wanted.items():  # missing, or made by another version of this module
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(sql)
    conn.execute("DELETE FROM project_counts")
    conn.execute(REBUILD)
    return True


def active(conn: sqlite3.Connection, tenant: str, project: str) -> int:
    """The project's active memories, as the triggers keep them (0 for a project never written)."""
    row = conn.execute("SELECT active FROM project_counts WHERE tenant = ? AND name = ?", (tenant, project)).fetchone()
    return row[0] if row else 0
