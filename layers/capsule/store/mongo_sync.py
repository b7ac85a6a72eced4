"""The sync contract (:mod:`capsule.store.sync`) on the MongoDB store: pages on the
(tenant, project, version) order; replaced rows are deleted and inserted again inside the
store's own project write (:meth:`MongoStore._in_project`), with the project's counters
moved by the difference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.clock import to_epoch
from ..core.records import MemoryRecord
from . import mongo_counters as counters
from .mongo import MongoStore
from .mongo_client import guarded
from .mongo_docs import doc_to_record
from .mongo_transfer import MongoTransferStore
from .sync import Position


class MongoSyncStore:
    def __init__(self, store: MongoStore) -> None:
        self._store = store
        self._transfer = MongoTransferStore(store)

    def changed_page(
        self, tenant: str, project: str, *, after: Position | None, limit: int
    ) -> list[tuple[Position, MemoryRecord]]:
        version, seq = after or (0, 0)
        query = {
            "tenant": tenant,
            "project": project,
            "pending": None,
            "$or": [{"version": {"$gt": version}}, {"version": version, "seq": {"$gt": seq}}],
        }
        # Whole documents: the record's fields and the position (an exclusion projection cannot add them).
        with guarded("read the changed memories"):
            docs = list(self._store.memories.find(query, sort=[("version", 1), ("seq", 1)], limit=limit))
        return [((int(d.pop("version")), int(d.pop("seq"))), doc_to_record(d)) for d in docs]

    def current(self, tenant: str, ids: Sequence[str]) -> dict[str, tuple[Position, MemoryRecord]]:
        with guarded("read the memories"):
            docs = list(self._store.memories.find({"tenant": tenant, "id": {"$in": list(ids)}, "pending": None}))
        return {d["id"]: ((int(d.pop("version", 0)), int(d.pop("seq", 0))), doc_to_record(d)) for d in docs}

    def replace_memories(
        self, tenant: str, project: str, records: Sequence[MemoryRecord], *, quiet_since: int | None = None
    ) -> tuple[int, bool]:
        store = self._store
        store._ensure_project(tenant, project, max((to_epoch(r.updated_at) for r in records), default=0.0))
        version = store._in_project(
            tenant, project, "sync the memories", lambda w: self._replace(w, tenant, project, records)
        )
        # The write took the version after the one it found: quiet when that was ``quiet_since``.
        return version, quiet_since is not None and version - 1 == quiet_since

    def _replace(self, w: Any, tenant: str, project: str, records: Sequence[MemoryRecord]) -> int:
        store = self._store
        ids = [r.id for r in records]
        old = list(
            store.memories.find(
                {"tenant": tenant, "id": {"$in": ids}},
                projection={"id": 1, "active": 1, "pinned": 1, "deleted_at": 1},
                session=w.session,
            )
        )
        store.memories.delete_many({"tenant": tenant, "id": {"$in": ids}}, session=w.session)
        # The rows go in as an import's do, which counts them; the old rows' counts come off.
        counters.add(
            store.projects_,
            w.session,
            tenant,
            project,
            0.0,
            memories=-sum(1 for d in old if d.get("deleted_at") is None),
            pinned=-sum(1 for d in old if d.get("deleted_at") is None and d.get("pinned")),
            forgotten=-sum(1 for d in old if d.get("deleted_at") is not None),
        )
        self._transfer._insert(w, tenant, project, records)
        return w.version
