"""A project's own secrets and personal-data policies (capsule.guard), for both stores.

Kept beside the stores so SQLiteStore and MongoStore each gain two one-line methods. In SQLite a
table of its own, created outside the numbered migrations (nothing depends on its order); in
MongoDB two fields of the project's document. None means "the deployment's default".
"""

from __future__ import annotations

import sqlite3
from typing import Any

FIELDS = ("secrets_policy", "pii_policy")

SQLITE_TABLE = """CREATE TABLE IF NOT EXISTS project_policies (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    secrets_policy TEXT,
    pii_policy TEXT,
    updated_at REAL NOT NULL,
    PRIMARY KEY (tenant, name)
)"""


def sqlite_set(conn: sqlite3.Connection, tenant: str, project: str, values: dict[str, str], at: float) -> None:
    """Set the given policies, keeping the other one as it was; the project exists after it, as
    after setting its retention limit."""
    conn.execute(
        "INSERT OR IGNORE INTO projects (tenant, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (tenant, project, at, at),
    )
    conn.execute(
        "INSERT OR IGNORE INTO project_policies (tenant, name, updated_at) VALUES (?, ?, ?)", (tenant, project, at)
    )
    for name in FIELDS:
        if values.get(name) is not None:  # the column name is one of FIELDS, never the caller's
            conn.execute(
                f"UPDATE project_policies SET {name} = ?, updated_at = ? WHERE tenant = ? AND name = ?",
                (values[name], at, tenant, project),
            )


SQLITE_GET = "SELECT secrets_policy, pii_policy FROM project_policies WHERE tenant = ? AND name = ?"


def from_row(row: Any) -> dict[str, str | None]:
    return {name: (row[name] if row is not None else None) for name in FIELDS}


def mongo_update(values: dict[str, str], at: float) -> dict[str, Any]:
    return {name: values[name] for name in FIELDS if values.get(name) is not None} | {"updated_at": at}


def from_doc(doc: dict[str, Any] | None) -> dict[str, str | None]:
    return {name: (doc or {}).get(name) for name in FIELDS}
