"""The project documents of :class:`~capsule.store.mongo.MongoStore` (tenants, counters,
retention limit, guard policies, one checkout's names merged into one project) and the audit
log. A ``retention_limit`` of 0 means *no rolling limit*; None the deployment's default."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from bson import ObjectId
from bson.errors import InvalidId

from ..core import limits
from ..core.clock import from_epoch, to_epoch
from ..core.records import AuditRecord, ProjectStats
from . import guard_policies
from . import mongo_counters as counters
from .audit_rows import audit_record
from .mongo_client import guarded
from .mongo_writes import NEW_PROJECT, ProjectWrites


class MongoProjects(ProjectWrites):
    def tenants(self) -> list[str]:
        with guarded("list the tenants"):
            return sorted(self.projects_.distinct("tenant"))

    def projects(self, tenant: str, *, only: str | None = None) -> list[ProjectStats]:
        """From the project documents' counters: no read of the memories (see mongo_counters)."""
        scope = {"tenant": tenant} if only is None else {"tenant": tenant, "name": only}
        with guarded("read the projects"):
            docs = list(self.projects_.find(scope, projection=counters.PROJECTION))
            counts = [counters.read(self.memories, {**doc, "tenant": tenant}) for doc in docs]
        stats = [
            ProjectStats(
                project=doc["name"],
                memories=c["memories"],
                pinned=c["pinned"],
                forgotten=c["forgotten"],
                retention_limit=doc.get("retention_limit"),
                last_activity=from_epoch(max(doc["updated_at"], doc.get("last_activity") or 0.0)),
            )
            for doc, c in zip(docs, counts)
        ]
        return sorted(stats, key=lambda s: s.last_activity, reverse=True)  # type: ignore[arg-type, return-value]  # always set (from_epoch of a number)

    def set_retention_limit(self, tenant: str, project: str, limit: int, *, at: datetime) -> None:
        now = to_epoch(at)
        with guarded("set the retention limit"):
            self.projects_.update_one(
                {"tenant": tenant, "name": project},
                {
                    "$set": {"retention_limit": int(limit), "updated_at": now},
                    "$setOnInsert": {"created_at": now, **NEW_PROJECT},
                },
                upsert=True,
            )

    def retention_limit(self, tenant: str, project: str) -> int | None:
        with guarded("read the retention limit"):
            doc = self.projects_.find_one({"tenant": tenant, "name": project}, projection={"retention_limit": 1})
        return doc.get("retention_limit") if doc else None

    def set_retention_limit_if_unset(self, tenant: str, project: str, limit: int, *, at: datetime) -> int | None:
        """Set the limit only where the project has none of its own; returns the one it keeps."""
        now = to_epoch(at)
        with guarded("set the retention limit"):
            self.projects_.update_one(
                {"tenant": tenant, "name": project},
                {"$setOnInsert": {"created_at": now, "updated_at": now, "retention_limit": None, **NEW_PROJECT}},
                upsert=True,
            )
            before = self.projects_.find_one_and_update(
                {"tenant": tenant, "name": project, "retention_limit": None}, {"$set": {"retention_limit": int(limit)}}
            )
            if before is not None:
                return None
            doc = self.projects_.find_one({"tenant": tenant, "name": project}, projection={"retention_limit": 1})
        return (doc or {}).get("retention_limit")

    # ---- one checkout, one project (capsule.core.project_identity) ---------------------------

    def project_exists(self, tenant: str, project: str) -> bool:
        with guarded("read the project"):
            return self.projects_.find_one({"tenant": tenant, "name": project}, projection={"_id": 1}) is not None

    def projects_labelled(self, tenant: str, label: str, *, limit: int = 2) -> list[str]:
        with guarded("read the projects"):
            docs = self.projects_.find(
                {"tenant": tenant, "name": {"$regex": "/" + re.escape(label) + r"\Z"}},
                projection={"name": 1},
                sort=[("name", 1)],
                limit=limit,
            )
            return [d["name"] for d in docs]

    def project_names(self, tenant: str) -> list[str]:
        with guarded("read the projects"):
            return sorted(
                set(self.projects_.distinct("name", {"tenant": tenant}))
                | set(self.memories.distinct("project", {"tenant": tenant}))
            )

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
        from .mongo_project_merge import merge_project

        with guarded("merge the projects"):
            return merge_project(self, tenant, source, target, at=at, actor=actor, default_limit=default_limit)

    def settle_identity(self, *, at: datetime) -> dict[str, dict[str, int]]:
        """The identity migration, once per database (the ``meta`` document remembers it)."""
        from ..core.project_identity import settle_store

        with guarded("merge the projects"):
            if self.db["meta"].find_one({"_id": "project_identity"}) is not None:
                return {}
        done = settle_store(self, at=at)
        with guarded("merge the projects"):
            self.db["meta"].replace_one(
                {"_id": "project_identity"}, {"_id": "project_identity", "version": 1}, upsert=True
            )
        return done

    def set_guard_policies(self, tenant: str, project: str, values: dict[str, str], *, at: datetime) -> None:
        now = to_epoch(at)
        with guarded("set the project's guard policies"):
            self.projects_.update_one(
                {"tenant": tenant, "name": project},
                {
                    "$set": guard_policies.mongo_update(values, now),
                    "$setOnInsert": {"created_at": now, "retention_limit": None, **NEW_PROJECT},
                },
                upsert=True,
            )

    def guard_policies(self, tenant: str, project: str) -> dict[str, str | None]:
        with guarded("read the project's guard policies"):
            doc = self.projects_.find_one(
                {"tenant": tenant, "name": project}, projection={name: 1 for name in guard_policies.FIELDS}
            )
        return guard_policies.from_doc(doc)

    def audit_log(self, tenant: str, *, memory_id: str | None = None, limit: int = 100) -> list[AuditRecord]:
        query: dict[str, Any] = {"tenant": tenant}
        if memory_id:
            query["memory_id"] = memory_id
        with guarded("read the audit log"):
            docs = list(self.audit.find(query, sort=[("_id", -1)], limit=limit))
        return [audit_record(d) for d in docs]

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
        """One index range per query (mongo_indexes: audit_at, audit_project_at,
        audit_project_action_at, audit_memory_at, audit_action_at), sorted (at -1, _id -1).
        A memory's records are read from its range alone, its project and action checked here
        (a memory has a handful of records)."""
        query: dict[str, Any] = {"tenant": tenant}
        residual: dict[str, str] = {}
        if memory_id is not None:
            query["memory_id"] = memory_id
            residual = {k: v for k, v in (("project", project), ("action", action)) if v is not None}
        else:
            query.update({k: v for k, v in (("project", project), ("action", action)) if v is not None})
        bounds: dict[str, float] = {}
        if since is not None:
            bounds["$gte"] = to_epoch(since)
        if until is not None:
            bounds["$lt"] = to_epoch(until)
        if bounds:
            query["at"] = bounds
        position = before
        found: list[tuple[tuple[float, str], AuditRecord]] = []
        while len(found) < limit:
            page = query if position is None else {**query, "$or": _before(position, bounds)}
            with guarded("read the audit log"):
                docs = list(self.audit.find(page, sort=[("at", -1), ("_id", -1)], limit=limit))
            for d in docs:
                position = (float(d["at"]), str(d["_id"]))
                if all(d.get(k) == v for k, v in residual.items()):
                    found.append((position, audit_record(d)))
            if len(docs) < limit or not residual:
                break
        return found[:limit]


def _before(position: tuple[float, str], bounds: dict[str, float]) -> list[dict[str, Any]]:
    """(at, _id) < position, as two branches of one index's range (the time bounds kept in each)."""
    at, key = position
    try:
        oid: Any = ObjectId(key)
    except (InvalidId, TypeError):
        oid = key  # not an id this store made: a place in BSON's order all the same
    return [{"at": {**bounds, "$lt": min(at, bounds.get("$lt", at))}}, {"at": at, "_id": {"$lt": oid}}]
