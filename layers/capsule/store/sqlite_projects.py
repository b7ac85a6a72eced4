"""The projects of :class:`~capsule.store.sqlite.SQLiteStore` (tenants, counts, retention
limit, guard policies) and the audit log."""

from __future__ import annotations

from datetime import datetime

from ..clock import from_epoch, to_epoch
from ..records import AuditRecord, ProjectStats
from . import guard_policies
from .sqlite_connection import SQLiteConnections


class SQLiteProjects(SQLiteConnections):
    def tenants(self) -> list[str]:
        return [row["tenant"] for row in self._read("SELECT DISTINCT tenant FROM projects ORDER BY tenant")]

    def projects(self, tenant: str) -> list[ProjectStats]:
        rows = self._read(
            """
            SELECT p.name AS project, p.retention_limit AS retention_limit,
                   count(m.id) FILTER (WHERE m.deleted_at IS NULL) AS memories,
                   count(m.id) FILTER (WHERE m.deleted_at IS NULL AND m.pinned = 1) AS pinned,
                   count(m.id) FILTER (WHERE m.deleted_at IS NOT NULL) AS forgotten,
                   max(coalesce(max(m.updated_at), p.updated_at), p.updated_at) AS last_activity
            FROM projects p LEFT JOIN memories m ON m.tenant = p.tenant AND m.project = p.name
            WHERE p.tenant = ? GROUP BY p.name ORDER BY last_activity DESC
            """,
            (tenant,),
        )
        return [
            ProjectStats(
                project=row["project"], memories=row["memories"], pinned=row["pinned"],
                forgotten=row["forgotten"], retention_limit=row["retention_limit"],
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
        return [
            AuditRecord(
                tenant=r["tenant"], memory_id=r["memory_id"], project=r["project"], action=r["action"],
                actor=r["actor"], reason=r["reason"], at=from_epoch(r["at"]),
            )
            for r in rows
        ]
