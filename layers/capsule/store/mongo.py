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
"""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numpy as np

from .. import deadline as request_deadline
from ..clock import from_epoch, to_epoch
from ..config import Settings
from ..errors import Conflict, NotFound, Unavailable
from . import guard_policies
from ..records import AuditRecord, ChangeSet, Filters, MemoryRecord, ProjectStats, WriteOutcome
from . import mongo_candidates as mc
from . import mongo_counters as counters
from . import mongo_vector as vs
from .base import Cursor
from .mongo_client import guarded, shared_client, supports_transactions
from .mongo_docs import RECORD_PROJECTION, decode_vector, doc_to_record, encode_vector, record_to_doc
from .mongo_governance_schema import class_query, drop_versions
from .mongo_visibility import visibility_query
from .mongo_indexes import INDEXES, PENDING_TTL_S, SCHEMA_VERSION
from ..governance.retention import NEVER_EVICTED, effective_class, eviction_reason

CHANGE_PROJECTION = {name: 0 for name in RECORD_PROJECTION if name != "_id"}
WITH_ACTIVE = {name: 0 for name in RECORD_PROJECTION if name != "active"}
NEW_PROJECT = {"seq": 0, "version": 0, "purged_version": 0, "lock": None, "lock_until": 0.0,
               "memories": 0, "pinned": 0, "forgotten": 0}
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Write:
    """One write to a project: its transaction (or None), its version and its lease (or None)."""

    session: Any
    version: int
    token: str | None

# Writers in one process queue here before contending for the project's lease in the database.
_process_locks: dict[tuple[str, str, str], threading.Lock] = {}
_process_locks_guard = threading.Lock()


def _process_lock(db: str, tenant: str, project: str) -> threading.Lock:
    with _process_locks_guard:
        return _process_locks.setdefault((db, tenant, project), threading.Lock())


def _wall() -> datetime:
    return datetime.now(timezone.utc)


class MongoStore:
    """The :class:`~capsule.store.base.MemoryStore` on one MongoDB database."""

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
    def from_settings(cls, settings: Settings) -> "MongoStore":
        if settings.mongodb_uri is None:
            raise Unavailable("the MongoDB store needs CAPSULE_MONGODB_URI (or the deployment's secret)")
        client = shared_client(settings.mongodb_uri.get_secret_value())
        return cls(
            client.get_database(settings.mongodb_db),
            vector_search_min=settings.mongodb_vector_search_min,
            vector_index=settings.mongodb_vector_index,
        )

    @property
    def transactions(self) -> bool:
        if self._transactions is None:
            self._transactions = supports_transactions(self.client)
        return self._transactions

    def migrate(self) -> None:
        """Create the indexes once per schema version: a cold start then costs one read, not 16 calls."""
        wanted = {"_id": "schema", "version": SCHEMA_VERSION, "text_index": self.vector_search_min is not None}
        with guarded("create the indexes"):
            current = self.db["meta"].find_one({"_id": "schema"}) or {}
            if current.get("version", 0) >= SCHEMA_VERSION and bool(current.get("text_index")) >= wanted["text_index"]:
                return
            for name, indexes in INDEXES.items():
                for keys, options in indexes:
                    self.db[name].create_index(keys, **options)
            if wanted["text_index"]:
                self._text_index()
            self.db["meta"].replace_one({"_id": "schema"}, wanted, upsert=True)

    def _text_index(self) -> None:
        existing = self.memories.index_information()
        for old in vs.OLD_TEXT_INDEXES:  # one text index per collection: the old one goes first
            if old in existing:
                self.memories.drop_index(old)
        self.memories.create_index(vs.TEXT_INDEX[0], **vs.TEXT_INDEX[1])

    def close(self) -> None:
        """The client is shared by the process (see mongo_client); nothing to release per store."""

    def ensure_vector_index(self, dimensions: int) -> None:
        """Create the Atlas Vector Search index (Atlas only; the deploy step runs it once)."""
        from pymongo.operations import SearchIndexModel

        index = vs.vector_index_definition(dimensions, name=self.vector_index)
        with guarded("create the vector search index"):
            self.memories.create_search_index(
                SearchIndexModel(definition=index["definition"], name=index["name"], type=index["type"])
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
        return self._in_project(tenant, project, "store the memories",
                                lambda w: self._insert_body(w, records, limit, dedupe_after, actor, now))

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
        return self._in_project(tenant, project, "evict over the limit",
                                lambda w: self._enforce_body(w, tenant, project, limit, to_epoch(at), actor))

    def _enforce_body(self, w: "_Write", tenant: str, project: str, limit: int, now: float, actor: str) -> list[str]:
        doc = self.projects_.find_one({"tenant": tenant, "name": project}, session=w.session)
        active = counters.ensure(self.projects_, self.memories, doc, w.session)["memories"]
        evicted = self._evict_over_limit(w, tenant, project, limit, now, actor, [], active)
        counters.add(self.projects_, w.session, tenant, project, now, memories=-len(evicted), forgotten=len(evicted))
        return evicted

    def _in_project(self, tenant: str, project: str, what: str, body: Callable[["_Write"], T], *,
                    purged: bool = False) -> T:
        """Run ``body`` as one write to the project, under the project's next version.

        With transactions the version bump is the transaction's first write (the conflict that
        serialises writers) and commits with the rows. Without, the lease serialises writers and
        the version is raised only after the rows carry it: a reader never sees a version
        whose rows it cannot read (``MemoryStore.changes_since``).
        """
        with guarded(what):
            if self.transactions:
                with self.client.start_session() as session:
                    return session.with_transaction(lambda s: self._versioned_txn(s, tenant, project, body, purged))
            with self._project_lease(tenant, project) as token:
                doc = self.projects_.find_one({"tenant": tenant, "name": project}, projection={"version": 1})
                version = int((doc or {}).get("version", 0)) + 1
                result = body(_Write(None, version, token))
                raised = {"version": version, **({"purged_version": version} if purged else {})}
                self.projects_.update_one({"tenant": tenant, "name": project, "lock": token}, {"$set": raised})
                return result

    def _versioned_txn(self, session: Any, tenant: str, project: str, body: Callable[["_Write"], T],
                       purged: bool) -> T:
        doc = self.projects_.find_one_and_update(
            {"tenant": tenant, "name": project}, {"$inc": {"version": 1}},
            projection={"version": 1}, return_document=True, session=session,
        )
        if purged:
            self.projects_.update_one({"_id": doc["_id"]}, {"$set": {"purged_version": doc["version"]}},
                                      session=session)
        return body(_Write(session, doc["version"], None))

    def _ensure_project(self, tenant: str, project: str, now: float) -> None:
        from pymongo.errors import DuplicateKeyError

        with guarded("record the project"):
            try:
                self.projects_.update_one(
                    {"tenant": tenant, "name": project},
                    {"$setOnInsert": {"retention_limit": None, "created_at": now, "updated_at": now,
                                      **NEW_PROJECT}},
                    upsert=True,
                )
            except DuplicateKeyError:
                pass  # a concurrent upsert created it first: just what we wanted

    @contextmanager
    def _project_lease(self, tenant: str, project: str) -> Iterator[str]:
        token = uuid.uuid4().hex
        with _process_lock(self.db.name, tenant, project):
            self._acquire(tenant, project, token)
            try:
                yield token
            except BaseException:
                self.memories.delete_many({"pending": token})  # nothing of a failed write stays
                raise
            finally:
                self.projects_.update_one({"tenant": tenant, "name": project, "lock": token},
                                          {"$set": {"lock": None, "lock_until": 0.0}})

    def _acquire(self, tenant: str, project: str, token: str) -> None:
        # The wait is bounded by what the request has left too (guarded gives the database calls theirs).
        deadline, delay = time.monotonic() + request_deadline.budget(self._lock_wait_s, what="wait for the project"), 0.005
        while True:
            wall = self._wall().timestamp()
            taken = self.projects_.find_one_and_update(
                {"tenant": tenant, "name": project, "$or": [{"lock": None}, {"lock_until": {"$lt": wall}}]},
                {"$set": {"lock": token, "lock_until": wall + self._lease_s}},
            )
            if taken is not None:
                return
            if time.monotonic() > deadline:
                raise Unavailable(f"project '{project}' is busy: another write held it for {self._lock_wait_s:g}s")
            self._sleep(delay)
            delay = min(delay * 2, 0.2)

    def _insert_body(
        self, w: "_Write", records: Sequence[MemoryRecord], limit: int, dedupe_after: datetime | None,
        actor: str, now: float,
    ) -> WriteOutcome:
        outcome = WriteOutcome(limit=limit)  # built afresh: a transaction may run this twice
        tenant, project = records[0].tenant, records[0].project
        project_doc = self.projects_.find_one_and_update(
            {"tenant": tenant, "name": project},
            {"$inc": {"seq": len(records)}, "$set": {"updated_at": now}},
            projection={"seq": 1, "tenant": 1, "name": 1, **dict.fromkeys(counters.COUNTERS, 1)},
            return_document=True, session=w.session,
        )
        active = counters.ensure(self.projects_, self.memories, project_doc, w.session)["memories"]
        first_seq = project_doc["seq"] - len(records)
        docs, batch = [], {}
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
            self.memories.update_many({"pending": w.token}, {"$set": {"active": True},
                                                             "$unset": {"pending": "", "pending_on": ""}})
        # The memories this write returns, new or existing, are never its own victims.
        protected = [*outcome.inserted, *outcome.duplicates.values()]
        active += len(docs)
        outcome.evicted = self._evict_over_limit(w, tenant, project, limit, now, actor, protected, active,
                                                 outcome.evicted_classes)
        outcome.active_after = active - len(outcome.evicted)
        counters.add(self.projects_, w.session, tenant, project, now, memories=len(docs) - len(outcome.evicted),
                     pinned=sum(1 for d in docs if d["pinned"]), forgotten=len(outcome.evicted))
        return outcome

    def _new_doc(self, record: MemoryRecord, seq: int, w: "_Write") -> dict[str, Any]:
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
            {"tenant": record.tenant, "project": record.project, "sha256": record.sha256, "active": True,
             "created_at": {"$gte": to_epoch(dedupe_after)}},
            projection={"id": 1}, sort=[("created_at", 1), ("seq", 1)], session=session,
        )
        return found["id"] if found else batch.get(record.sha256)

    def _evict_over_limit(
        self, w: "_Write", tenant: str, project: str, limit: int, now: float, actor: str,
        protected: Sequence[str], active: int, classes: dict[str, str] | None = None,
    ) -> list[str]:
        """Evict the oldest unpinned beyond ``limit``, given the project's ``active`` count."""
        session = w.session
        excess = active - limit
        evicted: list[str] = []
        if excess <= 0:
            return evicted
        query = {"tenant": tenant, "project": project, "active": True, "pinned": False,
                 "retention": {"$nin": list(NEVER_EVICTED)}, "id": {"$nin": list(protected)}}
        for doc in self.memories.find(query, projection={"id": 1, "retention": 1},
                                      sort=[("created_at", 1), ("seq", 1)], limit=excess + 8, session=session):
            klass = effective_class(doc.get("retention"), False)
            reason = "evicted: " + eviction_reason(limit, klass)
            # Conditional: one pinned (or forgotten) since the find is skipped, never evicted.
            changed = self.memories.update_one(
                {**query, "id": doc["id"]},
                {"$set": {**self._forgotten_fields(now, "evicted"), "version": w.version}}, session=session,
            )
            if changed.modified_count:
                evicted.append(doc["id"])
                if classes is not None:
                    classes[doc["id"]] = klass
                self._audit(session, tenant, doc["id"], project, "evict", actor, reason, now)
            if len(evicted) == excess:
                break
        return evicted

    def _forgotten_fields(self, now: float, reason: str) -> dict[str, Any]:
        return {"active": False, "deleted_at": now, "deleted_reason": reason, "updated_at": now,
                "deleted_on": self._wall()}

    def _audit(self, session: Any, tenant: str, memory_id: str, project: str, action: str, actor: str,
               reason: str, at: float) -> None:
        self.audit.insert_one({"tenant": tenant, "memory_id": memory_id, "project": project, "action": action,
                               "actor": actor, "reason": reason, "at": at}, session=session)

    # ---- reading -------------------------------------------------------------

    def get(self, tenant: str, memory_id: str, *, include_forgotten: bool = False) -> MemoryRecord:
        with guarded("read the memory"):
            doc = self.memories.find_one({"tenant": tenant, "id": memory_id, "pending": None},
                                         projection=RECORD_PROJECTION)
        if doc is None or (doc.get("deleted_at") is not None and not include_forgotten):
            raise NotFound(f"no memory {memory_id}")
        return doc_to_record(doc)

    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> list[str]:
        with guarded("look up the id"):
            docs = self.memories.find({"tenant": tenant, "id": {"$gte": prefix, "$lt": prefix + "\U0010ffff"},
                                       "pending": None}, projection={"id": 1}).sort("id", 1).limit(limit)
            return [doc["id"] for doc in docs if doc["id"].startswith(prefix)]

    def get_many(self, tenant: str, ids: Sequence[str]) -> list[MemoryRecord]:
        with guarded("read the memories"):
            docs = list(self.memories.find({"tenant": tenant, "id": {"$in": list(dict.fromkeys(ids))}, "pending": None},
                                           projection=RECORD_PROJECTION))
        return [doc_to_record(doc) for doc in docs]

    def list(
        self, tenant: str, project: str, *, pinned_only: bool, after: Cursor | None, limit: int,
        retention: str | None = None,
        forgotten: bool = False,
        visibility: Sequence[str] = (), subjects: Sequence[str] = (),
    ) -> list[MemoryRecord]:
        # A forgotten memory is inactive and not a pending write; `recent` serves both states.
        query: dict[str, Any] = ({"tenant": tenant, "project": project, "active": False, "pending": None}
                                 if forgotten else {"tenant": tenant, "project": project, "active": True})
        if pinned_only:
            query["pinned"] = True
        if after is not None:
            query["$or"] = [{"created_at": {"$lt": after[0]}}, {"created_at": after[0], "id": {"$lt": after[1]}}]
        if retention is not None:
            query = class_query(query, retention)
        query = visibility_query(query, visibility, subjects)
        with guarded("list the memories"):
            docs = list(self.memories.find(query, projection=RECORD_PROJECTION,
                                           sort=[("created_at", -1), ("id", -1)], limit=limit))
        return [doc_to_record(doc) for doc in docs]

    def previous_in_session(self, tenant: str, project: str, session: str | int, *, before: datetime) -> str | None:
        query = {"tenant": tenant, "project": project, "active": True, "meta.session": session,
                 "occurred_at": {"$lt": to_epoch(before)}}
        with guarded("read the turn before"):
            doc = self.memories.find_one(query, projection={"content": 1}, sort=[("occurred_at", -1), ("seq", -1)])
        return None if doc is None else doc["content"]

    def candidates(self, tenant: str, projects: Sequence[str] | None, filters: Filters) -> list[MemoryRecord]:
        return mc.scope_records(self.memories, tenant, projects, filters)

    def nearest_candidates(
        self, tenant: str, projects: Sequence[str] | None, filters: Filters, *, query: str,
        query_vector: np.ndarray | None, model: str,
    ) -> list[MemoryRecord] | None:
        """A shortlist from the cluster's indexes (:mod:`.mongo_candidates`), or None: the
        scope is small enough to read whole (or ``vector_search_min`` is not set)."""
        if self.vector_search_min is None:
            return None
        if mc.scope_size(self.projects_, self.memories, tenant, projects, self.vector_search_min) \
                < self.vector_search_min:
            return None
        return mc.shortlist(self.memories, tenant, projects, filters, query=query, query_vector=query_vector,
                            model=model, index=self.vector_index)

    # ---- changing ------------------------------------------------------------

    def _change(self, tenant: str, memory_id: str, match: dict[str, Any], update: dict[str, Any], *,
                missing: str, audit: tuple[str, str, str, float] | None = None,
                also: Callable[[Any, dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """One conditional update of one memory, stamped with its project's next version."""
        query = {"tenant": tenant, "id": memory_id, **match}
        with guarded("find the memory"):
            found = self.memories.find_one(query, projection={"project": 1})
            live = found is None and missing == "forgotten " and self.memories.find_one(
                {"tenant": tenant, "id": memory_id, "active": True}, projection={"_id": 1})
        if live:  # restoring a memory that is there but not forgotten
            raise Conflict(f"memory {memory_id} is not forgotten; there is nothing to restore")
        if found is None:
            raise NotFound(f"no {missing}memory {memory_id}")

        def body(w: _Write) -> dict[str, Any]:
            stamped = {**update, "$set": {**update.get("$set", {}), "version": w.version}}
            doc = self.memories.find_one_and_update(
                # _id stays in the projection: mongomock re-reads the document by it after the update.
                query, stamped, projection=CHANGE_PROJECTION, return_document=True, session=w.session,
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
            doc = self._change(tenant, memory_id, {"active": True, "pinned": not pinned},
                               {"$set": {"pinned": bool(pinned), "updated_at": now}},
                               missing="", audit=(action, actor, f"{action}ned by request", now),
                               also=self._counting(now, pinned=1 if pinned else -1))
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
        doc = self._change(tenant, memory_id, {"active": True}, {"$set": self._forgotten_fields(now, "forgotten")},
                           missing="", audit=("forget", actor, reason, now),
                           also=self._counting(now, memories=-1, forgotten=1))
        return doc_to_record(doc)

    def restore(self, tenant: str, memory_id: str, *, at: datetime, actor: str) -> MemoryRecord:
        now = to_epoch(at)
        doc = self._change(
            tenant, memory_id, {"deleted_at": {"$type": "double"}, "pending": None},
            {"$set": {"active": True, "deleted_at": None, "deleted_reason": None, "updated_at": now},
             "$unset": {"deleted_on": ""}},
            missing="forgotten ", audit=("restore", actor, "restored by request", now),
            also=self._counting(now, memories=1, forgotten=-1),
        )
        return doc_to_record(doc)

    def add_feedback(
        self, tenant: str, memory_id: str, *, helpful: bool, context: str | None, at: datetime
    ) -> MemoryRecord:
        now = to_epoch(at)
        vote = {"tenant": tenant, "memory_id": memory_id, "helpful": bool(helpful), "context": context, "at": now}
        doc = self._change(tenant, memory_id, {"active": True},
                           {"$inc": {"helpful" if helpful else "unhelpful": 1}, "$set": {"accessed_at": now}},
                           missing="", also=lambda session, _: self.feedback.insert_one(vote, session=session))
        return doc_to_record(doc)

    # ---- change tracking (the warm index) ------------------------------------------

    def change_markers(self, tenant: str, projects: Sequence[str] | None) -> dict[str, int]:
        query: dict[str, Any] = {"tenant": tenant}
        if projects is not None:
            query["name"] = {"$in": list(projects)}
        with guarded("read the project versions"):
            return {d["name"]: int(d.get("version", 0))
                    for d in self.projects_.find(query, projection={"name": 1, "version": 1})}

    def changes_since(self, tenant: str, project: str, since: int, *, columns: bool = False) -> ChangeSet:
        """The version is read before the rows: every row stamped up to it is already visible
        (see ``_in_project``), and a newer row read too is simply applied again later."""
        with guarded("read the changes"):
            doc = self.projects_.find_one({"tenant": tenant, "name": project},
                                          projection={"version": 1, "purged_version": 1})
            if doc is None:
                return ChangeSet(version=0, reset=True)
            version, purged = int(doc.get("version", 0)), int(doc.get("purged_version", 0))
            sort = [("seq", 1)]
            if since <= 0 or since < purged or since > version:
                rows = self.memories.find({"tenant": tenant, "project": project, "active": True},
                                          projection=RECORD_PROJECTION, sort=sort)
                return ChangeSet(version=version, changed=[doc_to_record(r) for r in rows], reset=True)
            rows = list(self.memories.find(
                {"tenant": tenant, "project": project, "version": {"$gt": since}, "pending": None},
                projection=WITH_ACTIVE, sort=sort))
        changes = ChangeSet(version=version)
        for row in rows:
            if row.pop("active"):
                changes.changed.append(doc_to_record(row))
            else:
                changes.removed.append(row["id"])
        return changes

    # ---- projects and audit ----------------------------------------------------

    def tenants(self) -> list[str]:
        with guarded("list the tenants"):
            return sorted(self.projects_.distinct("tenant"))

    def projects(self, tenant: str) -> list[ProjectStats]:
        """From the project documents' counters: no read of the memories (see mongo_counters)."""
        with guarded("read the projects"):
            docs = list(self.projects_.find({"tenant": tenant}, projection=counters.PROJECTION))
            counts = [counters.read(self.memories, {**doc, "tenant": tenant}) for doc in docs]
        stats = [
            ProjectStats(project=doc["name"], memories=c["memories"], pinned=c["pinned"], forgotten=c["forgotten"],
                         retention_limit=doc.get("retention_limit"),
                         last_activity=from_epoch(max(doc["updated_at"], doc.get("last_activity") or 0.0)))
            for doc, c in zip(docs, counts)
        ]
        return sorted(stats, key=lambda s: s.last_activity, reverse=True)

    def set_retention_limit(self, tenant: str, project: str, limit: int, *, at: datetime) -> None:
        now = to_epoch(at)
        with guarded("set the retention limit"):
            self.projects_.update_one(
                {"tenant": tenant, "name": project},
                {"$set": {"retention_limit": int(limit), "updated_at": now},
                 "$setOnInsert": {"created_at": now, **NEW_PROJECT}},
                upsert=True,
            )

    def retention_limit(self, tenant: str, project: str) -> int | None:
        with guarded("read the retention limit"):
            doc = self.projects_.find_one({"tenant": tenant, "name": project}, projection={"retention_limit": 1})
        return doc.get("retention_limit") if doc else None

    def set_guard_policies(self, tenant: str, project: str, values: dict[str, str], *, at: datetime) -> None:
        now = to_epoch(at)
        with guarded("set the project's guard policies"):
            self.projects_.update_one({"tenant": tenant, "name": project},
                                      {"$set": guard_policies.mongo_update(values, now),
                                       "$setOnInsert": {"created_at": now, "retention_limit": None, **NEW_PROJECT}},
                                      upsert=True)

    def guard_policies(self, tenant: str, project: str) -> dict[str, str | None]:
        with guarded("read the project's guard policies"):
            doc = self.projects_.find_one({"tenant": tenant, "name": project},
                                          projection={name: 1 for name in guard_policies.FIELDS})
        return guard_policies.from_doc(doc)

    def audit_log(self, tenant: str, *, memory_id: str | None = None, limit: int = 100) -> list[AuditRecord]:
        query: dict[str, Any] = {"tenant": tenant}
        if memory_id:
            query["memory_id"] = memory_id
        with guarded("read the audit log"):
            docs = list(self.audit.find(query, sort=[("_id", -1)], limit=limit))
        return [
            AuditRecord(tenant=d["tenant"], memory_id=d["memory_id"], project=d["project"], action=d["action"],
                        actor=d["actor"], reason=d["reason"], at=from_epoch(d["at"]))
            for d in docs
        ]

    # ---- jobs --------------------------------------------------------------------

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
            self._in_project(tenant, project, "purge forgotten memories",
                             lambda w, group=group: self._purge(w, group, cutoff, when), purged=True)
        with guarded("drop abandoned writes"):
            stale = from_epoch(self._wall().timestamp() - PENDING_TTL_S)
            self.memories.delete_many({"pending": {"$ne": None}, "pending_on": {"$lt": stale}})
        return len(docs)

    def _purge(self, w: "_Write", docs: list[dict[str, Any]], cutoff: float, when: float) -> None:
        for doc in docs:
            self._audit(w.session, doc["tenant"], doc["id"], doc["project"], "purge", "retention",
                        "forgotten longer than the recovery window", when)
        gone = self.memories.delete_many({"_id": {"$in": [doc["_id"] for doc in docs]},
                                          "deleted_at": {"$lt": cutoff}}, session=w.session).deleted_count
        drop_versions(self.db, w.session, docs[0]["tenant"], [doc["id"] for doc in docs])
        counters.add(self.projects_, w.session, docs[0]["tenant"], docs[0]["project"], when, forgotten=-gone)

    def pending_embeddings(self, *, limit: int, model: str | None = None) -> list[MemoryRecord]:
        # Each branch is an index range holding only what backfill embeds: the partial
        # pending_embedding index, and the model index either side of the current model ($ne
        # would scan every memory of every tenant).
        query: dict[str, Any] = {"status": "pending_embedding", "active": True}
        if model is not None:
            query = {"active": True, "$or": [{"status": "pending_embedding"}, {"model": {"$lt": model}},
                                             {"model": {"$gt": model}}]}
        with guarded("read the pending embeddings"):
            docs = list(self.memories.find(query,
                                           projection=RECORD_PROJECTION,
                                           sort=[("created_at", 1), ("seq", 1)], limit=limit))
        return [doc_to_record(doc) for doc in docs]

    def set_embedding(self, tenant: str, memory_id: str, embedding: np.ndarray, model: str) -> None:
        self._change(tenant, memory_id, {"pending": None},
                     {"$set": {"embedding": encode_vector(embedding), "model": model, "status": "ready"}},
                     missing="")

    def cache_get(self, model: str, sha256s: Sequence[str], *, fresh_after: datetime) -> dict[str, np.ndarray]:
        keys = list(dict.fromkeys(sha256s))
        found: dict[str, np.ndarray] = {}
        with guarded("read the embedding cache"):
            for start in range(0, len(keys), 500):
                for doc in self.cache.find({"model": model, "sha256": {"$in": keys[start:start + 500]},
                                            "created_at": {"$gte": to_epoch(fresh_after)}},
                                           projection={"sha256": 1, "vector": 1}):
                    found[doc["sha256"]] = decode_vector(doc["vector"])
        return found

    def cache_put(self, model: str, vectors: dict[str, np.ndarray], *, at: datetime) -> None:
        from pymongo.errors import BulkWriteError

        if not vectors:
            return
        now, wall = to_epoch(at), self._wall()
        docs = [{"model": model, "sha256": sha, "vector": encode_vector(vec), "created_at": now, "created_on": wall}
                for sha, vec in vectors.items()]
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
