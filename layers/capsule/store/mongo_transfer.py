"""The transfer contract (:mod:`capsule.store.transfer`) on the MongoDB store's database.

Pages follow ``_id`` (one index range each). Memory writes go through the store's own
project write (:meth:`MongoStore._in_project`): a transaction where the server has them,
the project's lease otherwise, with the rows hidden as ``pending`` until the write commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from bson.errors import InvalidId
from bson.objectid import ObjectId
from pymongo.errors import DuplicateKeyError

from ..core.clock import from_epoch, to_epoch
from ..core.errors import InvalidInput
from ..core.learning_records import ApplicationRecord, LinkRecord
from ..core.records import AuditRecord, MemoryRecord
from . import mongo_counters as counters
from .audit_rows import audit_record
from .mongo import MongoStore
from .mongo_client import guarded
from .mongo_docs import RECORD_PROJECTION, doc_to_record, record_to_doc
from .mongo_learning import MongoLearningStore, _link_id
from .transfer import EvidenceRow, FeedbackRow, Written


def _object_id(after: str | None) -> ObjectId | None:
    if after is None:
        return None
    try:
        return ObjectId(after)
    except (InvalidId, TypeError):
        raise InvalidInput(f"not a position in this store: {after!r}", field="cursor") from None


def _epoch(value: Any) -> float | None:
    return None if value is None else to_epoch(value)


# The fields that make a feedback vote or an audit record the same one (kept once on import).
VOTE_FIELDS = ("memory_id", "helpful", "context", "at")
AUDIT_FIELDS = ("memory_id", "project", "action", "actor", "reason", "at")


class MongoTransferStore:
    """Every row of a tenant out of, and back into, one MongoDB database."""

    def __init__(self, store: MongoStore) -> None:
        self._store = store
        self._db = store.db
        # Applications and solutions go in keyed by the learning schema's unique (tenant, id):
        # make sure it is there (one read once it is) rather than count on the learning side's start.
        MongoLearningStore(store.db).migrate()

    def _pages(
        self,
        collection: str,
        query: dict[str, Any],
        page: int,
        after: str | None,
        projection: dict[str, Any] | None = None,
        *,
        object_ids: bool = True,
        key: str = "_id",
    ) -> Iterator[list[dict[str, Any]]]:
        """Keyset pages on ``key``: ``_id`` (an ObjectId, or the row's own string id), or a
        string field unique in the query's scope (an application's ``id`` in its tenant)."""
        last: Any = _object_id(after) if object_ids else after
        while True:
            keyed = query if last is None else {**query, key: {"$gt": last}}
            with guarded(f"read the {collection}"):
                docs = list(self._db[collection].find(keyed, projection=projection).sort(key, 1).limit(page))
            if not docs:
                return
            yield docs
            last = docs[-1][key]

    @staticmethod
    def _scope(tenant: str, project: str | None) -> dict[str, Any]:
        return {"tenant": tenant} if project is None else {"tenant": tenant, "project": project}

    # ---- memories, feedback, audit ---------------------------------------------------

    def memory_pages(
        self, tenant: str, project: str | None, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, MemoryRecord]]]:
        query = {**self._scope(tenant, project), "pending": None}  # never an unpublished write
        projection = {name: 0 for name in RECORD_PROJECTION if name != "_id"}
        for docs in self._pages("memories", query, page, after, projection):
            yield [(str(doc["_id"]), doc_to_record(doc)) for doc in docs]

    def feedback_of(self, tenant: str, memory_ids: Sequence[str]) -> list[FeedbackRow]:
        with guarded("read the feedback"):
            docs = self._db["feedback"].find({"tenant": tenant, "memory_id": {"$in": list(memory_ids)}}).sort("_id", 1)
            return [
                FeedbackRow(d["memory_id"], bool(d["helpful"]), d.get("context"), from_epoch(d["at"])) for d in docs
            ]

    def audit_pages(
        self, tenant: str, project: str | None, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, AuditRecord]]]:
        for docs in self._pages("audit", self._scope(tenant, project), page, after):
            yield [
                (
                    str(d["_id"]),
                    audit_record(d),
                )
                for d in docs
            ]

    def existing_memories(self, tenant: str, ids: Sequence[str]) -> dict[str, bool]:
        # Ids are unique per tenant here: another tenant's equal id is no obstacle.
        with guarded("look up the memories"):
            docs = self._db["memories"].find({"tenant": tenant, "id": {"$in": list(ids)}}, projection={"id": 1})
            return {d["id"]: True for d in docs}

    def existing_content(self, tenant: str, project: str, sha256s: Sequence[str]) -> set[str]:
        with guarded("look up the contents"):
            docs = self._db["memories"].find(
                {"tenant": tenant, "project": project, "active": True, "sha256": {"$in": list(sha256s)}},
                projection={"sha256": 1},
            )
            return {d["sha256"] for d in docs}

    def put_memories(self, tenant: str, project: str, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        store = self._store
        store._ensure_project(tenant, project, max(to_epoch(r.updated_at) for r in records))
        store._in_project(tenant, project, "import the memories", lambda w: self._insert(w, tenant, project, records))

    def _insert(self, w: Any, tenant: str, project: str, records: Sequence[MemoryRecord]) -> None:
        store = self._store
        counter = store.projects_.find_one_and_update(
            {"tenant": tenant, "name": project},
            {"$inc": {"seq": len(records)}},
            projection={"seq": 1},
            return_document=True,
            session=w.session,
        )
        first = counter["seq"] - len(records)
        docs = [self._doc(r, first + i, w) for i, r in enumerate(records)]
        store.memories.insert_many(docs, ordered=True, session=w.session)
        if w.token:  # the commit point without transactions: forgotten rows stay inactive
            store.memories.update_many({"pending": w.token, "deleted_at": None}, {"$set": {"active": True}})
            store.memories.update_many({"pending": w.token}, {"$unset": {"pending": "", "pending_on": ""}})
        # The project's counters (mongo_counters) rise with the rows, in the same write.
        counters.add(
            store.projects_,
            w.session,
            tenant,
            project,
            max(to_epoch(r.updated_at) for r in records),
            memories=sum(1 for r in records if r.deleted_at is None),
            pinned=sum(1 for r in records if r.deleted_at is None and r.pinned),
            forgotten=sum(1 for r in records if r.deleted_at is not None),
        )

    def _doc(self, record: MemoryRecord, seq: int, w: Any) -> dict[str, Any]:
        doc = record_to_doc(record, seq=seq)
        doc.update(
            accessed_at=_epoch(record.accessed_at),
            deleted_at=_epoch(record.deleted_at),
            deleted_reason=record.deleted_reason,
            version=w.version,
            active=record.deleted_at is None,
        )
        if record.deleted_at is not None:
            # The TTL backstop runs on the server's clock from now: the retention job purges by
            # deleted_at first, with its audit record (an old date here would expire it unaudited).
            doc["deleted_on"] = self._store._wall()
        if w.token:
            doc.update(active=False, pending=w.token, pending_on=self._store._wall())
        return doc

    def put_feedback(self, tenant: str, rows: Sequence[FeedbackRow]) -> Written:
        out = Written(refused={})
        known = set(self.existing_memories(tenant, [r.memory_id for r in rows]))
        with guarded("keep the feedback"):
            kept = self._kept("feedback", tenant, [r.memory_id for r in rows if r.memory_id in known], VOTE_FIELDS)
            for i, row in enumerate(rows):
                if row.memory_id not in known:
                    out.refused[i] = f"memory_id: no memory {row.memory_id} in this tenant"  # type: ignore[index]
                    continue
                vote = {
                    "tenant": tenant,
                    "memory_id": row.memory_id,
                    "helpful": row.helpful,
                    "context": row.context,
                    "at": to_epoch(row.at),
                }
                out.present += self._keep_once("feedback", vote, VOTE_FIELDS, kept)
        out.written = len(rows) - len(out.refused) - out.present  # type: ignore[arg-type]  # made as {}
        return out

    def put_audit(self, tenant: str, rows: Sequence[AuditRecord]) -> Written:
        out = Written()
        with guarded("keep the audit records"):
            kept = self._kept("audit", tenant, [r.memory_id for r in rows], AUDIT_FIELDS)
            for r in rows:
                doc = {
                    "tenant": tenant,
                    "memory_id": r.memory_id,
                    "project": r.project,
                    "action": r.action,
                    "actor": r.actor,
                    "reason": r.reason,
                    "at": to_epoch(r.at),
                }
                out.present += self._keep_once("audit", doc, AUDIT_FIELDS, kept)
        out.written = len(rows) - out.present
        return out

    def _kept(
        self, collection: str, tenant: str, memory_ids: Sequence[str], fields: tuple[str, ...]
    ) -> set[tuple[Any, ...]]:
        """The rows the tenant holds for these memories, as tuples of ``fields``: one read per
        page through the (tenant, memory_id) index, bounded by what those memories were given."""
        if not memory_ids:
            return set()
        docs = self._db[collection].find(
            {"tenant": tenant, "memory_id": {"$in": sorted(set(memory_ids))}}, projection=dict.fromkeys(fields, 1)
        )
        return {tuple(d.get(f) for f in fields) for d in docs}

    def _keep_once(
        self, collection: str, doc: dict[str, Any], fields: tuple[str, ...], kept: set[tuple[Any, ...]]
    ) -> int:
        """Inserts ``doc`` unless an equal row is kept (1: it was, 0: inserted now)."""
        key = tuple(doc.get(f) for f in fields)
        if key in kept:
            return 1
        self._db[collection].insert_one(doc)
        kept.add(key)
        return 0

    # ---- learning rows the learning contract cannot write as they are ------------------

    def application_pages(
        self, tenant: str, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, ApplicationRecord]]]:
        # By the application's id, unique in its tenant (mongo_learning_ids); its _id is opaque.
        for docs in self._pages("solution_applications", {"tenant": tenant}, page, after, object_ids=False, key="id"):
            yield [
                (
                    d["id"],
                    ApplicationRecord(
                        id=d["id"],
                        tenant=d["tenant"],
                        solution_id=d["solution_id"],
                        success=bool(d["success"]),
                        at=from_epoch(d["at"]),
                        project=d.get("project"),
                        error=d.get("error"),
                        context=d.get("context"),
                    ),
                )
                for d in docs
            ]

    def put_applications(self, tenant: str, rows: Sequence[ApplicationRecord]) -> Written:
        out = Written()
        with guarded("keep the applications"):
            for a in rows:
                try:
                    self._db["solution_applications"].insert_one(
                        {
                            "id": a.id,
                            "tenant": tenant,
                            "solution_id": a.solution_id,
                            "success": a.success,
                            "project": a.project,
                            "error": a.error,
                            "context": a.context,
                            "at": to_epoch(a.at),
                        }
                    )
                    out.written += 1
                except DuplicateKeyError:
                    out.present += 1
        return out

    def put_link(self, link: LinkRecord) -> bool:
        fields = {
            "tenant": link.tenant,
            "tag": link.tag,
            "category": link.category,
            "kind": link.kind,
            "target_id": link.target_id,
        }
        with guarded("keep the pattern link"):
            try:
                self._db["pattern_links"].insert_one(
                    {
                        "_id": _link_id(*fields.values()),
                        **fields,
                        "success": link.success,
                        "failure": link.failure,
                        "last_at": _epoch(link.last_at),
                    }
                )
                return True
            except DuplicateKeyError:
                return False

    def evidence_pages(
        self, tenant: str, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, EvidenceRow]]]:
        for docs in self._pages("pattern_evidence", {"tenant": tenant}, page, after, object_ids=False):
            yield [
                (d["_id"], EvidenceRow(d["tag"], d["category"], d["kind"], d["target_id"], d["evidence"])) for d in docs
            ]

    def put_evidence(self, tenant: str, rows: Sequence[EvidenceRow]) -> Written:
        out = Written()
        with guarded("keep the link evidence"):
            for e in rows:
                link_id = _link_id(tenant, e.tag, e.category, e.kind, e.target_id)
                try:
                    self._db["pattern_evidence"].insert_one(
                        {
                            "_id": _link_id(link_id, e.evidence),
                            "tenant": tenant,
                            "tag": e.tag,
                            "category": e.category,
                            "kind": e.kind,
                            "target_id": e.target_id,
                            "evidence": e.evidence,
                        }
                    )
                    out.written += 1
                except DuplicateKeyError:
                    out.present += 1
        return out
