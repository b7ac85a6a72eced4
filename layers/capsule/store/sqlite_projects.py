"""The projects of :class:`~capsule.store.sqlite.SQLiteStore` (tenants, counts, retention
limit, guard policies, one checkout's names merged into one project) and the audit log.

A retention limit of 0 stored in ``projects.retention_limit`` means *no rolling limit* (a
project written through the Vector Bridge's contract, or set so by its user); NULL means the
deployment's default."""

from __future__ import annotations

from datetime import datetime

from ..core import limits
from ..core.clock import from_epoch, to_epoch
from ..core.records import AuditRecord, ProjectStats
from . import guard_policies, sqlite_counts
from .audit_rows import audit_record
from .sqlite_connection import SQLiteConnections


class SQLiteProjects(SQLiteConnections):
    def tenants(self) -> list[str]:
        return [row["tenant"] for row in self._read("SELECT DISTINCT tenant FROM projects ORDER BY tenant")]

    def projects(self, tenant: str, *, only: str | None = None) -> list[ProjectStats]:
        # The kept counts: no read of the memories.
        if only is None:
            rows = self._read(sqlite_counts.STATS, (tenant,))
        else:
            rows = self._read(sqlite_counts.STATS_ONE, (tenant, only))
        return [
            ProjectStats(
                project=row["project"],
                memories=row["memories"],
                pinned=row["pinned"],
                forgotten=row["forgotten"],
                retention_limit=row["retention_limit"],
                last_activity=from_epoch(row["last_activity"]),
            )
            for row in rows
        ]

    def set_retention_limit(self, tenant: str, project: str, limit: int, *, at: datetime) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO projects (tenant, name, retention_limit, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant, name) DO UPDATE SET retention_limit = excluded.retention_limit, "
                "updated_at = excluded.updated_at",
                (tenant, project, limit, to_epoch(at), to_epoch(at)),
            )

    def retention_limit(self, tenant: str, project: str) -> int | None:
        rows = self._read("SELECT retention_limit FROM projects WHERE tenant = ? AND name = ?", (tenant, project))
        return rows[0]["retention_limit"] if rows else None

    def set_retention_limit_if_unset(self, tenant: str, project: str, limit: int, *, at: datetime) -> int | None:
        """Set the limit only where the project has none of its own; returns the one it keeps
        (None: the deployment's default applied and ``limit`` is now set)."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT retention_limit FROM projects WHERE tenant = ? AND name = ?", (tenant, project)
            ).fetchone()
            if row is not None and row["retention_limit"] is not None:
                return row["retention_limit"]
            conn.execute(
                "INSERT INTO projects (tenant, name, retention_limit, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant, name) DO UPDATE SET retention_limit = excluded.retention_limit",
                (tenant, project, limit, to_epoch(at), to_epoch(at)),
            )
        return None

    # ---- one checkout, one project (capsule.core.project_identity) ---------------------------

    def project_exists(self, tenant: str, project: str) -> bool:
        return bool(self._read("SELECT 1 FROM projects WHERE tenant = ? AND name = ?", (tenant, project)))

    def projects_labelled(self, tenant: str, label: str, *, limit: int = 2) -> list[str]:
        """Path projects whose basename is ``label`` (the tenant's rows only: a short scan)."""
        rows = self._read(
            "SELECT name FROM projects WHERE tenant = ? AND substr(name, -(length(?) + 1)) = '/' || ? "
            "ORDER BY name LIMIT ?",
            (tenant, label, label, limit),
        )
        return [row["name"] for row in rows]

    def project_names(self, tenant: str) -> list[str]:
        rows = self._read(
            "SELECT name FROM projects WHERE tenant = ? UNION SELECT DISTINCT project FROM memories WHERE tenant = ?",
            (tenant, tenant),
        )
        return [row[0] for row in rows]

    def merge_project(
        self,
        tenant: str,
        source: str,
        target: str,
        *,
        at: datetime,
        actor: str,
        default_limit: int = limits.DEFAULT_RETENTION_LIMIT,
    ) -> dict[str, int]:
        """Move every memory of ``source`` into ``target`` in one write; an active memory whose
        content ``target`` already holds is kept there once (the copy is forgotten, recoverable,
        its pin and votes carried over). The target keeps its own settings, taking the source's
        where it has none; when the merged project holds more than its limit, the limit is
        raised to what it holds, so no later write evicts what the merge brought."""
        if source == target:
            return {}
        now = to_epoch(at)
        with self._write() as conn:
            if not conn.execute(
                "SELECT 1 FROM memories WHERE tenant = ? AND project = ? UNION ALL "
                "SELECT 1 FROM projects WHERE tenant = ? AND name = ? LIMIT 1",
                (tenant, source, tenant, source),
            ).fetchone():
                return {}
            dupes = conn.execute(
                "SELECT s.id AS id, min(t.id) AS kept, s.pinned AS pinned, s.helpful AS helpful, "
                "s.unhelpful AS unhelpful FROM memories s JOIN memories t ON t.tenant = s.tenant AND t.project = ? "
                "AND t.sha256 = s.sha256 AND t.deleted_at IS NULL "
                "WHERE s.tenant = ? AND s.project = ? AND s.deleted_at IS NULL GROUP BY s.id",
                (target, tenant, source),
            ).fetchall()
            self._merge_settings(conn, tenant, source, target, now)
            version = self._bump(conn, tenant, target)
            for d in dupes:
                conn.execute(
                    "UPDATE memories SET pinned = max(pinned, ?), helpful = helpful + ?, "
                    "unhelpful = unhelpful + ?, updated_at = ?, version = ? WHERE tenant = ? AND id = ?",
                    (d["pinned"], d["helpful"], d["unhelpful"], now, version, tenant, d["kept"]),
                )
                conn.execute(
                    "UPDATE memories SET deleted_at = ?, deleted_reason = 'merged', updated_at = ? "
                    "WHERE tenant = ? AND id = ?",
                    (now, now, tenant, d["id"]),
                )
                self._audit(
                    conn,
                    tenant,
                    d["id"],
                    target,
                    "merge",
                    actor,
                    f"merged: project '{source}' is the checkout '{target}', which holds the same content"
                    f" as memory {d['kept']}",
                    now,
                )
            moved = conn.execute(
                "UPDATE memories SET project = ?, version = ? WHERE tenant = ? AND project = ?",
                (target, version, tenant, source),
            ).rowcount
            for table in self._project_tables(conn):
                conn.execute(
                    f"UPDATE OR IGNORE {table} SET project = ? WHERE tenant = ? AND project = ?",
                    (target, tenant, source),
                )
            conn.execute("DELETE FROM projects WHERE tenant = ? AND name = ?", (tenant, source))
            self._raise_to_hold(conn, tenant, target, default_limit)
        return {"moved": moved - len(dupes), "deduplicated": len(dupes)}

    @staticmethod
    def _merge_settings(conn, tenant: str, source: str, target: str, now: float) -> None:
        conn.execute(
            "INSERT INTO projects (tenant, name, retention_limit, ephemeral_ttl, created_at, updated_at) "
            "SELECT tenant, ?, retention_limit, ephemeral_ttl, created_at, updated_at FROM projects "
            "WHERE tenant = ? AND name = ? ON CONFLICT (tenant, name) DO UPDATE SET "
            "retention_limit = coalesce(retention_limit, excluded.retention_limit), "
            "ephemeral_ttl = coalesce(ephemeral_ttl, excluded.ephemeral_ttl), "
            "created_at = min(created_at, excluded.created_at), updated_at = max(updated_at, ?)",
            (target, tenant, source, now),
        )
        for table, columns in (
            ("project_policies", ("secrets_policy", "pii_policy")),
            ("project_encryption", ("mode",)),
        ):
            exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
            if not exists:
                continue
            if not conn.execute(f"SELECT 1 FROM {table} WHERE tenant = ? AND name = ?", (tenant, target)).fetchone():
                conn.execute(f"UPDATE {table} SET name = ? WHERE tenant = ? AND name = ?", (target, tenant, source))
            else:  # the target's own settings win; the source's fill what it lacks
                for column in columns:
                    conn.execute(
                        f"UPDATE {table} SET {column} = coalesce({column}, (SELECT {column} FROM {table} "
                        "WHERE tenant = ? AND name = ?)) WHERE tenant = ? AND name = ?",
                        (tenant, source, tenant, target),
                    )
                conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND name = ?", (tenant, source))

    @staticmethod
    def _project_tables(conn) -> list[str]:
        """Tables beside the memories that name a project by a ``project`` column (versions,
        capture candidates, applications); the audit keeps where things happened."""
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        skip = {"memories", "audit", "projects", "project_counts"}
        return [
            n
            for n in names
            if n not in skip
            and not n.startswith("sqlite_")
            and {"tenant", "project"} <= {c[1] for c in conn.execute(f'PRAGMA table_info("{n}")')}
        ]

    @staticmethod
    def _raise_to_hold(conn, tenant: str, project: str, default_limit: int) -> None:
        row = conn.execute(
            "SELECT retention_limit FROM projects WHERE tenant = ? AND name = ?", (tenant, project)
        ).fetchone()
        own = row["retention_limit"] if row else None
        if own == 0:
            return  # no rolling limit
        held = conn.execute(
            "SELECT count(*) FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL", (tenant, project)
        ).fetchone()[0]
        if held > (own or default_limit):
            conn.execute(
                "UPDATE projects SET retention_limit = ? WHERE tenant = ? AND name = ?",
                (min(held, limits.MAX_RETENTION_LIMIT), tenant, project),
            )

    def settle_identity(self, *, at: datetime) -> dict[str, dict[str, int]]:
        """The identity migration, once per database (``store_info`` remembers it ran): every
        project name made to follow capsule.core.project_identity's rule, split checkouts merged."""
        from ..core.project_identity import settle_store

        if self._read("SELECT 1 FROM store_info WHERE name = 'project_identity'"):
            return {}
        done = settle_store(self, at=at)
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO store_info (name, value) VALUES ('project_identity', '1')")
        return done

    def set_guard_policies(self, tenant: str, project: str, values: dict[str, str], *, at: datetime) -> None:
        with self._write() as conn:
            guard_policies.sqlite_set(conn, tenant, project, values, to_epoch(at))

    def guard_policies(self, tenant: str, project: str) -> dict[str, str | None]:
        rows = self._read(guard_policies.SQLITE_GET, (tenant, project))
        return guard_policies.from_row(rows[0] if rows else None)

    def audit_log(self, tenant: str, *, memory_id: str | None = None, limit: int = 100) -> list[AuditRecord]:
        sql, params = "SELECT * FROM audit WHERE tenant = ?", [tenant]
        if memory_id:
            sql += " AND memory_id = ?"
            params.append(memory_id)
        rows = self._read(sql + " ORDER BY id DESC LIMIT ?", [*params, limit])
        return [audit_record(r) for r in rows]

    def audit_page(
        self,
        tenant: str,
        *,
        project: str | None = None,
        memory_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        before: tuple[float, str] | None = None,
        limit: int = 100,
    ) -> list[tuple[tuple[float, str], AuditRecord]]:
        # Equalities lead an index (migration 16: audit_at, audit_project_at,
        # audit_project_action_at, audit_memory_at, audit_action_at), (at, id) follow it.
        sql = "SELECT * FROM audit WHERE tenant = ?"
        params: list[object] = [tenant]
        for column, value in (("project", project), ("memory_id", memory_id), ("action", action)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        if since is not None:
            sql += " AND at >= ?"
            params.append(to_epoch(since))
        if until is not None:
            sql += " AND at < ?"
            params.append(to_epoch(until))
        if before is not None:
            at, key = before
            # A key this store made is a row id; any other text sorts after every integer (SQLite's
            # order of types): a place in the order all the same, never a refusal the schema does not state.
            row: object = min(int(key), 2**63 - 1) if key.isascii() and key.isdigit() and len(key) <= 19 else key
            sql += " AND (at, id) < (?, ?)"
            params += [at, row]
        rows = self._read(sql + " ORDER BY at DESC, id DESC LIMIT ?", [*params, limit])
        return [((r["at"], str(r["id"])), audit_record(r)) for r in rows]
