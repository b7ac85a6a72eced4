"""The hosted store: MongoDB (Atlas), same contract and semantics as the SQLite store.

Atomic writes, two ways with one code path (:meth:`MongoStore._insert_body`):

- **Transactions** (replica set, sharded cluster, Atlas): the insert runs in
  ``with_transaction``. Its first write bumps the project document's ``seq``, so two
  concurrent inserts into one project conflict on that document and the driver retries
  the loser after the winner commits: the retention count each sees is exact, nobody
  evicts more than needed, and an ingest is all of its chunks or none.
- **No transactions** (a standalone server, mongomock): writers to one project take a
  lease on the project document (``find_one_and_update``; a crashed holder's lease runs
  out). Chunks are inserted *pending* (``active: false`` plus a ``pending`` token), which
  every read skips, then published with one ``update_many`` — the commit point. A writer
  that dies before publishing leaves pending documents that a TTL index (``pending_on``,
  one hour) and :meth:`purge_forgotten` remove.

Eviction is a conditional update (``active`` and not ``pinned``), so a memory pinned in
the meantime is never evicted. ``active`` (not forgotten, not pending) is a stored
boolean because Atlas Vector Search can pre-filter on booleans but not on nulls.

This module holds construction, indexes and the insert path; the project-write machinery is
:mod:`.mongo_writes`, and the rest of the contract is in :mod:`.mongo_reads`,
:mod:`.mongo_changes`, :mod:`.mongo_projects` and :mod:`.mongo_jobs`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from ..config import Settings
from ..core.clock import to_epoch
from ..core.errors import Unavailable
from ..core.records import MemoryRecord, WriteOutcome
from ..core.retention import NEVER_EVICTED, effective_class, eviction_reason
from . import mongo_counters as counters
from .mongo_changes import MongoChanges
from .mongo_client import guarded, shared_client, supports_transactions
from .mongo_docs import record_to_doc
from .mongo_indexes import INDEXES, SCHEMA_VERSION
from .mongo_jobs import MongoJobs
from .mongo_projects import MongoProjects
from .mongo_reads import MongoReads
from .mongo_writes import _Write


def _wall() -> datetime:
    return datetime.now(UTC)


class MongoStore(MongoReads, MongoChanges, MongoProjects, MongoJobs):
    """The :class:`~capsule.store.base.MemoryStore` on one MongoDB database."""

    # Searches write nothing here: a query's vector is not kept in ``embedding_cache`` (it cost a
    # find, a delete_many and an insert_many on the primary per uncached search, 3 of 8
    # operations, in a collection every tenant shares) but per tenant in the warm process
    # (capsule.service.search). Documents' vectors still are: an ingest writes anyway.
    keeps_query_vectors = False

    def __init__(
        self,
        database: Any,
        *,
        transactions: bool | None = None,
        vector_search_min: int | None = None,
        vector_index: str = "capsule_vectors",
        lease_s: float = 30.0,
        lock_wait_s: float = 10.0,
        wall: Callable[[], datetime] = _wall,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``database``: a pymongo (or mongomock) ``Database``, or a client (its ``capsule`` database).

        ``transactions``: None detects it from the server. ``wall`` stamps the TTL dates and
        leases: the server expires by its own clock, whatever clock the service runs on.
        """
        self.db = database if hasattr(database, "list_collection_names") else database.get_database("capsule")
        self.client = self.db.client
        self._transactions = transactions
        self.vector_search_min = vector_search_min
        self.vector_index = vector_index
        self._lease_s, self._lock_wait_s = lease_s, lock_wait_s
        self._wall, self._sleep = wall, sleep
        self.memories = self.db["memories"]
        self.projects_ = self.db["projects"]
        self.feedback = self.db["feedback"]
        self.audit = self.db["audit"]
        self.cache = self.db["embedding_cache"]

    @classmethod
    def from_settings(cls, settings: Settings) -> MongoStore:
        if settings.mongodb_uri is None:
            raise Unavailable("the MongoDB store needs CAPSULE_MONGODB_URI (or the deployment's secret)")
        client = shared_client(settings.mongodb_uri.get_secret_value())
        return cls(
            client.get_database(settings.mongodb_db),
            vector_search_min=settings.mongodb_vector_search_min,
            vector_index=settings.mongodb_vector_index,
        )

    @property
    def transactions(self) -> bool:  # type: ignore[override]  # MongoWrites declares it as a plain attribute
        if self._transactions is None:
            self._transactions = supports_transactions(self.client)
        return self._transactions

    def migrate(self) -> None:
        """Create the indexes once per schema version: a cold start then costs one read, not 16 calls.

        The Atlas Search and Vector Search indexes are not created here: they build in the
        background for minutes, so ``capsule cloud setup-atlas`` (:mod:`.atlas_setup`) makes them
        before the first request and waits until they answer."""
        wanted: dict[str, Any] = {"_id": "schema", "version": SCHEMA_VERSION}
        with guarded("create the indexes"):
            current = self.db["meta"].find_one({"_id": "schema"}) or {}
        # One checkout, one project (capsule.core.project_identity): split names merged, once per database.
        self.settle_identity(at=datetime.now(UTC))
        with guarded("create the indexes"):
            if current.get("version", 0) >= SCHEMA_VERSION:
                return
            for name, indexes in INDEXES.items():
                for keys, options in indexes:
                    self.db[name].create_index(keys, **options)
            self.db["meta"].replace_one({"_id": "schema"}, wanted, upsert=True)

    def close(self) -> None:
        """The client is shared by the process (see mongo_client); nothing to release per store."""

    def ensure_vector_index(self, dimensions: int, *, quantization: str | None = None) -> None:
        """Create the Atlas Vector Search and Atlas Search indexes if absent (tests and benches;
        ``capsule cloud setup-atlas`` also checks, updates and waits: :mod:`.atlas_setup`)."""
        from .atlas_setup import ensure_search_indexes, wanted_indexes

        with guarded("create the search indexes"):
            ensure_search_indexes(
                self.memories,
                wanted_indexes(dimensions, vector_index=self.vector_index, quantization=quantization),
                wait_s=0,
            )

    # ---- inserting ---------------------------------------------------------

    def insert(
        self, records: Sequence[MemoryRecord], *, limit: int, dedupe_after: datetime | None, actor: str
    ) -> WriteOutcome:
        if not records:
            return WriteOutcome(limit=limit)
        tenant, project = records[0].tenant, records[0].project
        now = to_epoch(records[0].created_at)
        self._ensure_project(tenant, project, now)
        return self._in_project(
            tenant,
            project,
            "store the memories",
            lambda w: self._insert_body(w, records, limit, dedupe_after, actor, now),
        )

    def insert_bulk(
        self, records: Sequence[MemoryRecord], *, limit: int, dedupe_after: datetime | None, actor: str
    ) -> WriteOutcome:
        # insert already writes a batch with one insert_many in one write to the project.
        return self.insert(records, limit=limit, dedupe_after=dedupe_after, actor=actor)

    def enforce_limit(self, tenant: str, project: str, *, limit: int, at: datetime, actor: str) -> list[str]:
        with guarded("read the project's counters"):
            doc = self.projects_.find_one({"tenant": tenant, "name": project}, projection=counters.PROJECTION)
            if doc is None or counters.read(self.memories, {**doc, "tenant": tenant})["memories"] <= limit:
                return []
        return self._in_project(
            tenant,
            project,
            "evict over the limit",
            lambda w: self._enforce_body(w, tenant, project, limit, to_epoch(at), actor),
        )

    def _enforce_body(self, w: _Write, tenant: str, project: str, limit: int, now: float, actor: str) -> list[str]:
        doc = self.projects_.find_one({"tenant": tenant, "name": project}, session=w.session)
        active = counters.ensure(self.projects_, self.memories, doc, w.session)["memories"]
        evicted = self._evict_over_limit(w, tenant, project, limit, now, actor, [], active)
        counters.add(self.projects_, w.session, tenant, project, now, memories=-len(evicted), forgotten=len(evicted))
        return evicted

    def _insert_body(
        self,
        w: _Write,
        records: Sequence[MemoryRecord],
        limit: int,
        dedupe_after: datetime | None,
        actor: str,
        now: float,
    ) -> WriteOutcome:
        outcome = WriteOutcome(limit=limit)  # built afresh: a transaction may run this twice
        tenant, project = records[0].tenant, records[0].project
        project_doc = self.projects_.find_one_and_update(
            {"tenant": tenant, "name": project},
            {"$inc": {"seq": len(records)}, "$set": {"updated_at": now}},
            projection={"seq": 1, "tenant": 1, "name": 1, **dict.fromkeys(counters.COUNTERS, 1)},
            return_document=True,
            session=w.session,
        )
        active = counters.ensure(self.projects_, self.memories, project_doc, w.session)["memories"]
        first_seq = project_doc["seq"] - len(records)
        docs: list[dict[str, Any]] = []
        batch: dict[str, Any] = {}
        for i, record in enumerate(records):
            existing = self._find_duplicate(w.session, record, dedupe_after, batch)
            if existing:
                outcome.duplicates[record.id] = existing
                continue
            docs.append(self._new_doc(record, first_seq + i, w))
            outcome.inserted.append(record.id)
            if dedupe_after is not None:
                batch.setdefault(record.sha256, record.id)
        if docs:
            self.memories.insert_many(docs, ordered=True, session=w.session)
        if w.token and docs:  # the commit point without transactions
            self.memories.update_many(
                {"pending": w.token}, {"$set": {"active": True}, "$unset": {"pending": "", "pending_on": ""}}
            )
        # The memories this write returns, new or existing, are never its own victims.
        protected = [*outcome.inserted, *outcome.duplicates.values()]
        active += len(docs)
        outcome.evicted = self._evict_over_limit(
            w, tenant, project, limit, now, actor, protected, active, outcome.evicted_classes
        )
        outcome.active_after = active - len(outcome.evicted)
        counters.add(
            self.projects_,
            w.session,
            tenant,
            project,
            now,
            memories=len(docs) - len(outcome.evicted),
            pinned=sum(1 for d in docs if d["pinned"]),
            forgotten=len(outcome.evicted),
        )
        return outcome

    def _new_doc(self, record: MemoryRecord, seq: int, w: _Write) -> dict[str, Any]:
        doc = record_to_doc(record, seq=seq)
        doc["version"] = w.version
        if w.token:
            doc.update(active=False, pending=w.token, pending_on=self._wall())
        return doc

    def _find_duplicate(
        self, session: Any, record: MemoryRecord, dedupe_after: datetime | None, batch: dict[str, str]
    ) -> str | None:
        if dedupe_after is None:
            return None
        found = self.memories.find_one(
            {
                "tenant": record.tenant,
                "project": record.project,
                "sha256": record.sha256,
                "active": True,
                "created_at": {"$gte": to_epoch(dedupe_after)},
            },
            projection={"id": 1},
            sort=[("created_at", 1), ("seq", 1)],
            session=session,
        )
        return found["id"] if found else batch.get(record.sha256)

    def _evict_over_limit(
        self,
        w: _Write,
        tenant: str,
        project: str,
        limit: int,
        now: float,
        actor: str,
        protected: Sequence[str],
        active: int,
        classes: dict[str, str] | None = None,
    ) -> list[str]:
        """Evict the oldest unpinned beyond ``limit``, given the project's ``active`` count."""
        session = w.session
        excess = active - limit
        evicted: list[str] = []
        if excess <= 0:
            return evicted
        query = {
            "tenant": tenant,
            "project": project,
            "active": True,
            "pinned": False,
            "retention": {"$nin": list(NEVER_EVICTED)},
            "id": {"$nin": list(protected)},
        }
        for doc in self.memories.find(
            query,
            projection={"id": 1, "retention": 1},
            sort=[("created_at", 1), ("seq", 1)],
            limit=excess + 8,
            session=session,
        ):
            klass = effective_class(doc.get("retention"), False)
            reason = "evicted: " + eviction_reason(limit, klass)
            # Conditional: one pinned (or forgotten) since the find is skipped, never evicted.
            changed = self.memories.update_one(
                {**query, "id": doc["id"]},
                {"$set": {**self._forgotten_fields(now, "evicted"), "version": w.version}},
                session=session,
            )
            if changed.modified_count:
                evicted.append(doc["id"])
                if classes is not None:
                    classes[doc["id"]] = klass
                self._audit(session, tenant, doc["id"], project, "evict", actor, reason, now)
            if len(evicted) == excess:
                break
        return evicted
