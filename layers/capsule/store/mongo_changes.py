"""How :class:`~capsule.store.mongo.MongoStore` changes one memory: pin, forget, restore,
feedback and a backfilled embedding, each a conditional update under the project's next version."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np

from ..core.clock import to_epoch
from ..core.errors import Conflict, NotFound
from ..core.records import MemoryRecord
from . import mongo_counters as counters
from .mongo_client import guarded
from .mongo_docs import RECORD_PROJECTION, doc_to_record, encode_vector
from .mongo_writes import ProjectWrites, _Write

CHANGE_PROJECTION = {name: 0 for name in RECORD_PROJECTION if name != "_id"}


class MongoChanges(ProjectWrites):
    get: Callable[..., MemoryRecord]  # MongoReads.get

    def _change(
        self,
        tenant: str,
        memory_id: str,
        match: dict[str, Any],
        update: dict[str, Any],
        *,
        missing: str,
        audit: tuple[str, str, str, float] | None = None,
        also: Callable[[Any, dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """One conditional update of one memory, stamped with its project's next version."""
        query = {"tenant": tenant, "id": memory_id, **match}
        with guarded("find the memory"):
            found = self.memories.find_one(query, projection={"project": 1})
            live = (
                found is None
                and missing == "forgotten "
                and self.memories.find_one({"tenant": tenant, "id": memory_id, "active": True}, projection={"_id": 1})
            )
        if live:  # restoring a memory that is there but not forgotten
            raise Conflict(f"memory {memory_id} is not forgotten; there is nothing to restore")
        if found is None:
            raise NotFound(f"no {missing}memory {memory_id}")

        def body(w: _Write) -> dict[str, Any]:
            stamped = {**update, "$set": {**update.get("$set", {}), "version": w.version}}
            doc = self.memories.find_one_and_update(
                # _id stays in the projection: mongomock re-reads the document by it after the update.
                query,
                stamped,
                projection=CHANGE_PROJECTION,
                return_document=True,
                session=w.session,
            )
            if doc is None:  # changed by another writer between the find and the lease
                raise NotFound(f"no {missing}memory {memory_id}")
            if audit:
                self._audit(w.session, tenant, memory_id, doc["project"], *audit)
            if also:
                also(w.session, doc)
            return doc

        return self._in_project(tenant, found["project"], "change the memory", body)

    def set_pinned(self, tenant: str, memory_id: str, pinned: bool, *, at: datetime, actor: str) -> MemoryRecord:
        action, now = ("pin" if pinned else "unpin"), to_epoch(at)
        try:  # only a memory whose state changes is written (and moves the pinned counter)
            doc = self._change(
                tenant,
                memory_id,
                {"active": True, "pinned": not pinned},
                {"$set": {"pinned": bool(pinned), "updated_at": now}},
                missing="",
                audit=(action, actor, f"{action}ned by request", now),
                also=self._counting(now, pinned=1 if pinned else -1),
            )
        except NotFound:
            return self.get(tenant, memory_id)  # already so (or NotFound: not an active memory)
        return doc_to_record(doc)

    def _counting(self, now: float, **deltas: int) -> Callable[[Any, dict[str, Any]], None]:
        """An ``also`` for :meth:`_change` that moves the changed memory's project counters;
        ``pinned`` only moves for a pinned memory when other counters move too."""

        def also(session: Any, doc: dict[str, Any]) -> None:
            moved = dict(deltas)
            if set(moved) != {"pinned"}:
                moved["pinned"] = moved.get("memories", 0) if doc.get("pinned") else 0
            counters.add(self.projects_, session, doc["tenant"], doc["project"], now, **moved)

        return also

    def forget(self, tenant: str, memory_id: str, *, at: datetime, actor: str, reason: str) -> MemoryRecord:
        now = to_epoch(at)
        doc = self._change(
            tenant,
            memory_id,
            {"active": True},
            {"$set": self._forgotten_fields(now, "forgotten")},
            missing="",
            audit=("forget", actor, reason, now),
            also=self._counting(now, memories=-1, forgotten=1),
        )
        return doc_to_record(doc)

    def restore(self, tenant: str, memory_id: str, *, at: datetime, actor: str) -> MemoryRecord:
        now = to_epoch(at)
        doc = self._change(
            tenant,
            memory_id,
            {"deleted_at": {"$type": "double"}, "pending": None},
            {
                "$set": {"active": True, "deleted_at": None, "deleted_reason": None, "updated_at": now},
                "$unset": {"deleted_on": ""},
            },
            missing="forgotten ",
            audit=("restore", actor, "restored by request", now),
            also=self._counting(now, memories=1, forgotten=-1),
        )
        return doc_to_record(doc)

    def add_feedback(
        self, tenant: str, memory_id: str, *, helpful: bool, context: str | None, at: datetime
    ) -> MemoryRecord:
        now = to_epoch(at)
        vote = {"tenant": tenant, "memory_id": memory_id, "helpful": bool(helpful), "context": context, "at": now}
        doc = self._change(
            tenant,
            memory_id,
            {"active": True},
            {"$inc": {"helpful" if helpful else "unhelpful": 1}, "$set": {"accessed_at": now}},
            missing="",
            also=lambda session, _: self.feedback.insert_one(vote, session=session),
        )
        return doc_to_record(doc)

    def set_embedding(self, tenant: str, memory_id: str, embedding: np.ndarray, model: str) -> None:
        self._change(
            tenant,
            memory_id,
            {"pending": None},
            {"$set": {"embedding": encode_vector(embedding), "model": model, "status": "ready"}},
            missing="",
        )
