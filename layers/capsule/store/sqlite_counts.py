"""Each project's counts (active, active pinned, forgotten) and last activity, kept by SQLite
itself (triggers), read in one probe per project.

A store checks the retention limit in its write transaction. ``count(*)`` of a project's
active rows reads an index range as long as the project (10k rows: ~6 ms, the largest part of
a store; 1M: a second), so the count is kept instead, by triggers on ``memories``: every path
that inserts, deletes, forgets, evicts, restores, pins or moves a row (the store, governance,
transfer, sync, tenants, a bulk ingest, an older version of this code) keeps it right, with no
code of its own. ``SQLiteStore.projects`` (a restore's over-limit answer, the retention run,
an export's project rows, ``GET /v1/projects``) reads them too: grouping the tenant's
memories there cost 104 ms of each restore and retention run at 100k memories (issue 32). The
same counts MongoDB keeps on its project documents (mongo_counters).

Like ``project_policies``, made outside the numbered migrations (nothing depends on its order,
and other schema changes number theirs). :func:`ensure` runs in every ``migrate``: when a
trigger is missing or differs (a new database, a migration rebuilt the table and dropped them,
an older version of this module) the table is made again and the counts rebuilt from the rows,
inside the same write transaction.
"""

from __future__ import annotations

import sqlite3

TABLE = """CREATE TABLE IF NOT EXISTS project_counts (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    active INTEGER NOT NULL,
    pinned INTEGER NOT NULL,
    forgotten INTEGER NOT NULL,
    last_activity REAL NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID"""

# A row's share of its project's counts; pinned counts the active pinned ones, forgotten the
# forgotten or evicted ones not yet purged (what SQLiteStore.projects reports).
_ACTIVE, _PINNED, _FORGOTTEN = (
    "{r}.deleted_at IS NULL",
    "({r}.deleted_at IS NULL AND {r}.pinned = 1)",
    "{r}.deleted_at IS NOT NULL",
)


def _add(r: str) -> str:
    return (
        "INSERT INTO project_counts (tenant, name, active, pinned, forgotten, last_activity) "
        f"VALUES ({r}.tenant, {r}.project, {_ACTIVE.format(r=r)}, {_PINNED.format(r=r)}, "
        f"{_FORGOTTEN.format(r=r)}, {r}.updated_at) ON CONFLICT (tenant, name) DO UPDATE SET "
        "active = active + excluded.active, pinned = pinned + excluded.pinned, "
        "forgotten = forgotten + excluded.forgotten, last_activity = max(last_activity, excluded.last_activity);"
    )


# A project left with no row goes (a tenant moved away or purged leaves nothing behind). Its
# last activity never goes back: a purge or a move is no older than what it removes.
_REMOVE = (
    "UPDATE project_counts SET active = active - (OLD.deleted_at IS NULL), "
    "pinned = pinned - (OLD.deleted_at IS NULL AND OLD.pinned = 1), "
    "forgotten = forgotten - (OLD.deleted_at IS NOT NULL) WHERE tenant = OLD.tenant AND name = OLD.project; "
    "DELETE FROM project_counts WHERE tenant = OLD.tenant AND name = OLD.project "
    "AND active <= 0 AND forgotten <= 0;"
)

TRIGGERS = {
    "memories_count_insert": f"AFTER INSERT ON memories BEGIN {_add('NEW')} END",
    "memories_count_delete": f"AFTER DELETE ON memories BEGIN {_REMOVE} END",
    # Only when the row changes its share of the counts: a store's other updates (feedback,
    # embedding, a new version) fire nothing here.
    "memories_count_update": (
        "AFTER UPDATE OF deleted_at, tenant, project, pinned ON memories "
        "WHEN (OLD.deleted_at IS NULL) != (NEW.deleted_at IS NULL) OR OLD.tenant != NEW.tenant "
        f"OR OLD.project != NEW.project OR OLD.pinned != NEW.pinned BEGIN {_REMOVE} {_add('NEW')} END"
    ),
    # Any later stamp is activity (feedback, an update, a pin): one probe of the project's row.
    "memories_count_activity": (
        "AFTER UPDATE OF updated_at ON memories WHEN NEW.updated_at > OLD.updated_at BEGIN "
        "UPDATE project_counts SET last_activity = max(last_activity, NEW.updated_at) "
        "WHERE tenant = NEW.tenant AND name = NEW.project; END"
    ),
}

REBUILD = (
    "INSERT INTO project_counts (tenant, name, active, pinned, forgotten, last_activity) "
    f"SELECT tenant, project, sum({_ACTIVE.format(r='m')}), sum({_PINNED.format(r='m')}), "
    f"sum({_FORGOTTEN.format(r='m')}), max(updated_at) FROM memories m GROUP BY tenant, project"
)

# Per project of a tenant, its settings row and its kept counts: one probe per project, no
# read of the memories (a project without a memory has no counts row).
STATS = (
    "SELECT p.name AS project, p.retention_limit AS retention_limit, coalesce(c.active, 0) AS memories, "
    "coalesce(c.pinned, 0) AS pinned, coalesce(c.forgotten, 0) AS forgotten, "
    "max(coalesce(c.last_activity, p.updated_at), p.updated_at) AS last_activity "
    "FROM projects p LEFT JOIN project_counts c ON c.tenant = p.tenant AND c.name = p.name "
    "WHERE p.tenant = ? ORDER BY last_activity DESC"
)
STATS_ONE = STATS.replace("WHERE p.tenant = ?", "WHERE p.tenant = ? AND p.name = ?")  # a restore's one project


def ensure(conn: sqlite3.Connection) -> bool:
    """Make the table and triggers where missing, rebuilding the counts then; True if rebuilt.
    Runs inside the caller's write transaction, so no write falls between rebuild and trigger."""
    wanted = {name: f"CREATE TRIGGER {name} {body}" for name, body in TRIGGERS.items()}
    present = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories'"))
    if all(present.get(name) == sql for name, sql in wanted.items()):
        conn.execute(TABLE)
        return False
    for name in {*wanted, *(n for n in present if n.startswith("memories_count_"))}:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")  # missing, or made by another version of this module
    conn.execute("DROP TABLE IF EXISTS project_counts")  # derived: its shape may be another version's too
    conn.execute(TABLE)
    for sql in wanted.values():
        conn.execute(sql)
    conn.execute(REBUILD)
    return True


def active(conn: sqlite3.Connection, tenant: str, project: str) -> int:
    """The project's active memories, as the triggers keep them (0 for a project never written)."""
    row = conn.execute("SELECT active FROM project_counts WHERE tenant = ? AND name = ?", (tenant, project)).fetchone()
    return row[0] if row else 0
