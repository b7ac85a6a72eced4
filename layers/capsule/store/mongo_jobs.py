"""The scheduled jobs' side of :class:`~capsule.store.mongo.MongoStore`: purging what was
forgotten, the backfill's queue and the embedding cache."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..core.clock import from_epoch, to_epoch
from ..core.records import MemoryRecord
from . import mongo_counters as counters
from .mongo_client import guarded
from .mongo_docs import RECORD_PROJECTION, decode_vector, doc_to_record, encode_vector
from .mongo_governance_schema import drop_versions
from .mongo_indexes import PENDING_TTL_S
from .mongo_writes import ProjectWrites, _Write


class MongoJobs(ProjectWrites):
    def purge_forgotten(self, *, before: datetime, at: datetime | None = None) -> int:
        cutoff, when = to_epoch(before), to_epoch(at or before)
        # Superseded memories are kept (history), not purged as forgotten ones.
        query = {"deleted_at": {"$type": "double", "$lt": cutoff}, "deleted_reason": {"$ne": "superseded"}}
        with guarded("find forgotten memories"):
            docs = list(self.memories.find(query, projection={"tenant": 1, "id": 1, "project": 1}))
        by_project: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for doc in docs:
            by_project.setdefault((doc["tenant"], doc["project"]), []).append(doc)
        for (tenant, project), group in by_project.items():
            # Purged rows leave no tombstone: the version moves and a reader older than it reloads.
            self._in_project(
                tenant,
                project,
                "purge forgotten memories",
                lambda w, group=group: self._purge(w, group, cutoff, when),  # type: ignore[misc]
                purged=True,
            )
        with guarded("drop abandoned writes"):
            stale = from_epoch(self._wall().timestamp() - PENDING_TTL_S)
            self.memories.delete_many({"pending": {"$ne": None}, "pending_on": {"$lt": stale}})
        return len(docs)

    def _purge(self, w: _Write, docs: list[dict[str, Any]], cutoff: float, when: float) -> None:
        for doc in docs:
            self._audit(
                w.session,
                doc["tenant"],
                doc["id"],
                doc["project"],
                "purge",
                "retention",
                "forgotten longer than the recovery window",
                when,
            )
        gone = self.memories.delete_many(
            {"_id": {"$in": [doc["_id"] for doc in docs]}, "deleted_at": {"$lt": cutoff}}, session=w.session
        ).deleted_count
        drop_versions(self.db, w.session, docs[0]["tenant"], [doc["id"] for doc in docs])
        counters.add(self.projects_, w.session, docs[0]["tenant"], docs[0]["project"], when, forgotten=-gone)

    def pending_embeddings(self, *, limit: int, model: str | None = None) -> list[MemoryRecord]:
        # Each branch is an index range holding only what backfill embeds: the partial
        # pending_embedding index, and the model index either side of the current model ($ne
        # would scan every memory of every tenant).
        query: dict[str, Any] = {"status": "pending_embedding", "active": True}
        if model is not None:
            query = {
                "active": True,
                "$or": [{"status": "pending_embedding"}, {"model": {"$lt": model}}, {"model": {"$gt": model}}],
            }
        with guarded("read the pending embeddings"):
            docs = list(
                self.memories.find(
                    query, projection=RECORD_PROJECTION, sort=[("created_at", 1), ("seq", 1)], limit=limit
                )
            )
        return [doc_to_record(doc) for doc in docs]

    def cache_get(self, model: str, sha256s: Sequence[str], *, fresh_after: datetime) -> dict[str, np.ndarray]:
        keys = list(dict.fromkeys(sha256s))
        found: dict[str, np.ndarray] = {}
        with guarded("read the embedding cache"):
            for start in range(0, len(keys), 500):
                for doc in self.cache.find(
                    {
                        "model": model,
                        "sha256": {"$in": keys[start : start + 500]},
                        "created_at": {"$gte": to_epoch(fresh_after)},
                    },
                    projection={"sha256": 1, "vector": 1},
                ):
                    found[doc["sha256"]] = decode_vector(doc["vector"])  # type: ignore[assignment]  # a cached vector is there
        return found

    def cache_put(self, model: str, vectors: dict[str, np.ndarray], *, at: datetime) -> None:
        from pymongo.errors import BulkWriteError

        if not vectors:
            return
        now, wall = to_epoch(at), self._wall()
        docs = [
            {"model": model, "sha256": sha, "vector": encode_vector(vec), "created_at": now, "created_on": wall}
            for sha, vec in vectors.items()
        ]
        with guarded("write the embedding cache"):
            # Replace: drop the old entries, then insert; a concurrent writer's equal entry is as good.
            self.cache.delete_many({"model": model, "sha256": {"$in": list(vectors)}})
            try:
                self.cache.insert_many(docs, ordered=False)
            except BulkWriteError as exc:
                if any(e.get("code") != 11000 for e in exc.details.get("writeErrors", [])):
                    raise

    def cache_purge(self, *, before: datetime) -> int:
        with guarded("purge the embedding cache"):
            return self.cache.delete_many({"created_at": {"$lt": to_epoch(before)}}).deleted_count
