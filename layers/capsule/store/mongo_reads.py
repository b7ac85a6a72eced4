"""What :class:`~capsule.store.mongo.MongoStore` reads: memories by id, pages, the turn
before, candidates for a search, and the changes a warm index applies."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..core.clock import to_epoch
from ..core.errors import NotFound
from ..core.records import ChangeSet, Filters, MemoryRecord
from . import mongo_candidates as mc
from .base import Cursor
from .mongo_client import guarded
from .mongo_docs import RECORD_PROJECTION, doc_to_record
from .mongo_governance_schema import class_query
from .mongo_visibility import visibility_query
from .mongo_writes import ProjectWrites

WITH_ACTIVE = {name: 0 for name in RECORD_PROJECTION if name != "active"}


class MongoReads(ProjectWrites):
    vector_search_min: int | None
    vector_index: str

    def get(self, tenant: str, memory_id: str, *, include_forgotten: bool = False) -> MemoryRecord:
        with guarded("read the memory"):
            doc = self.memories.find_one(
                {"tenant": tenant, "id": memory_id, "pending": None}, projection=RECORD_PROJECTION
            )
        if doc is None or (doc.get("deleted_at") is not None and not include_forgotten):
            raise NotFound(f"no memory {memory_id}")
        return doc_to_record(doc)

    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> list[str]:
        with guarded("look up the id"):
            docs = (
                self.memories.find(
                    {"tenant": tenant, "id": {"$gte": prefix, "$lt": prefix + "\U0010ffff"}, "pending": None},
                    projection={"id": 1},
                )
                .sort("id", 1)
                .limit(limit)
            )
            return [doc["id"] for doc in docs if doc["id"].startswith(prefix)]

    def get_many(self, tenant: str, ids: Sequence[str]) -> list[MemoryRecord]:
        with guarded("read the memories"):
            docs = list(
                self.memories.find(
                    {"tenant": tenant, "id": {"$in": list(dict.fromkeys(ids))}, "pending": None},
                    projection=RECORD_PROJECTION,
                )
            )
        return [doc_to_record(doc) for doc in docs]

    def list(
        self,
        tenant: str,
        project: str,
        *,
        pinned_only: bool,
        after: Cursor | None,
        limit: int,
        retention: str | None = None,
        forgotten: bool = False,
        visibility: Sequence[str] = (),
        subjects: Sequence[str] = (),
    ) -> list[MemoryRecord]:
        # A forgotten memory is inactive and not a pending write; `recent` serves both states.
        query: dict[str, Any] = (
            {"tenant": tenant, "project": project, "active": False, "pending": None}
            if forgotten
            else {"tenant": tenant, "project": project, "active": True}
        )
        if pinned_only:
            query["pinned"] = True
        if after is not None:
            query["$or"] = [{"created_at": {"$lt": after[0]}}, {"created_at": after[0], "id": {"$lt": after[1]}}]
        if retention is not None:
            query = class_query(query, retention)
        query = visibility_query(query, visibility, subjects)
        with guarded("list the memories"):
            docs = list(
                self.memories.find(
                    query, projection=RECORD_PROJECTION, sort=[("created_at", -1), ("id", -1)], limit=limit
                )
            )
        return [doc_to_record(doc) for doc in docs]

    def outcome_page(
        self, tenant: str, project: str, *, after: Cursor | None, limit: int
    ) -> tuple[builtins.list[MemoryRecord], int, Cursor | None]:
        """One page of :meth:`list` (``pinned_only=False``), for mining (capsule.learning.mining_pages):
        the page's memories whose meta names an outcome (``outcome_status`` failure or success,
        ``type`` error), in :meth:`list`'s order; how many the page held; and the cursor after its
        last one. The page comes back as ids, times and two meta fields (about 100 bytes a memory
        instead of a whole document with its embedding, 4 KiB at 1024 dimensions), on the same
        ``recent`` index; then only those memories are read whole, by id (issue 32)."""
        query: dict[str, Any] = {"tenant": tenant, "project": project, "active": True}
        if after is not None:
            query["$or"] = [{"created_at": {"$lt": after[0]}}, {"created_at": after[0], "id": {"$lt": after[1]}}]
        with guarded("list the memories for mining"):
            rows = list(
                self.memories.find(
                    query,
                    projection={"_id": 0, "id": 1, "created_at": 1, "meta.outcome_status": 1, "meta.type": 1},
                    sort=[("created_at", -1), ("id", -1)],
                    limit=limit,
                )
            )
        if not rows:
            return [], 0, None
        wanted = [row["id"] for row in rows if _names_an_outcome(row.get("meta") or {})]
        found = {record.id: record for record in self.get_many(tenant, wanted)} if wanted else {}
        records = [found[i] for i in wanted if i in found]
        return records, len(rows), (rows[-1]["created_at"], rows[-1]["id"])

    def previous_in_session(self, tenant: str, project: str, session: str | int, *, before: datetime) -> str | None:
        query = {
            "tenant": tenant,
            "project": project,
            "active": True,
            "meta.session": session,
            "occurred_at": {"$lt": to_epoch(before)},
        }
        with guarded("read the turn before"):
            doc = self.memories.find_one(query, projection={"content": 1}, sort=[("occurred_at", -1), ("seq", -1)])
        return None if doc is None else doc["content"]

    def candidates(self, tenant: str, projects: Sequence[str] | None, filters: Filters) -> builtins.list[MemoryRecord]:
        return mc.scope_records(self.memories, tenant, projects, filters)

    def nearest_candidates(
        self,
        tenant: str,
        projects: Sequence[str] | None,
        filters: Filters,
        *,
        query: str,
        query_vector: np.ndarray | None,
        model: str,
    ) -> builtins.list[MemoryRecord] | None:
        """A shortlist from the cluster's indexes (:mod:`.mongo_candidates`), or None: the
        scope is small enough to read whole (or ``vector_search_min`` is not set)."""
        if self.vector_search_min is None:
            return None
        if (
            mc.scope_size(self.projects_, self.memories, tenant, projects, self.vector_search_min)
            < self.vector_search_min
        ):
            return None
        return mc.shortlist(
            self.memories,
            tenant,
            projects,
            filters,
            query=query,
            query_vector=query_vector,
            model=model,
            index=self.vector_index,
        )

    def change_markers(self, tenant: str, projects: Sequence[str] | None) -> dict[str, int]:
        query: dict[str, Any] = {"tenant": tenant}
        if projects is not None:
            query["name"] = {"$in": list(projects)}
        with guarded("read the project versions"):
            return {
                d["name"]: int(d.get("version", 0))
                for d in self.projects_.find(query, projection={"name": 1, "version": 1})
            }

    def changes_since(self, tenant: str, project: str, since: int, *, columns: bool = False) -> ChangeSet:
        """The version is read before the rows: every row stamped up to it is already visible
        (see ``_in_project``), and a newer row read too is simply applied again later."""
        with guarded("read the changes"):
            doc = self.projects_.find_one(
                {"tenant": tenant, "name": project}, projection={"version": 1, "purged_version": 1}
            )
            if doc is None:
                return ChangeSet(version=0, reset=True)
            version, purged = int(doc.get("version", 0)), int(doc.get("purged_version", 0))
            sort = [("seq", 1)]
            if since <= 0 or since < purged or since > version:
                rows = self.memories.find(
                    {"tenant": tenant, "project": project, "active": True}, projection=RECORD_PROJECTION, sort=sort
                )
                return ChangeSet(version=version, changed=[doc_to_record(r) for r in rows], reset=True)
            rows = list(
                self.memories.find(
                    {"tenant": tenant, "project": project, "version": {"$gt": since}, "pending": None},
                    projection=WITH_ACTIVE,
                    sort=sort,
                )
            )
        changes = ChangeSet(version=version)
        for row in rows:
            if row.pop("active"):
                changes.changed.append(doc_to_record(row))
            else:
                changes.removed.append(row["id"])
        return changes


def _names_an_outcome(meta: dict[str, Any]) -> bool:
    """What mining keeps (capsule.learning.mining is_failure / is_success), as SQLite's
    outcome_page selects it."""
    return meta.get("outcome_status") in ("failure", "success") or meta.get("type") == "error"
