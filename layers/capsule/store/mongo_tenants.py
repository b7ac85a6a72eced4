"""Moving one tenant's data into another in the MongoDB store (:class:`capsule.store.tenants.TenantMover`).

Memories move a batch at a time, each batch one write to the target project through the
store's own write path (``MongoStore._in_project``: a transaction on Atlas, the project's
lease elsewhere), stamped with the project's next version and given ``seq`` numbers after
the target's (one pipeline update per batch), so warm indexes read them as changes and order stays stable.
The project counters (``mongo_counters``) move with each batch in the same write: the target's
rise and the source's fall by what the batch holds, so listings and retention stay right even
when a move stops halfway. Batches keep each
transaction far below Atlas's limits; a move that stops between batches is finished by the
next run (what moved no longer belongs to the source).

Documents whose ``_id`` embeds the tenant (patterns, pattern links, evidence) are rewritten
under the target's ``_id``. A link both tenants hold adds the source's counters once: the
target records the source ``_id`` it absorbed, so a repeated run cannot count them twice.
A collection holding tenants that this module does not know stops the move before anything
changes.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from pymongo.errors import DuplicateKeyError

from ..core.errors import Conflict, Unavailable
from . import mongo_counters as counters
from .mongo import MongoStore
from .mongo_client import guarded
from .mongo_learning import _link_id
from .mongo_writes import NEW_PROJECT

BATCH = 500
MOVED_FIELDS = {"_id": 1, "seq": 1, "active": 1, "pinned": 1, "deleted_at": 1, "pending": 1, "updated_at": 1}
RETAGGED = ("feedback", "audit", "solutions", "solution_applications", "memory_versions")
REKEYED = ("patterns", "pattern_links", "pattern_evidence")
PRINCIPALS = "principal_scopes"  # capsule.store.mongo_visibility.PRINCIPAL_SCOPES; see _move_principals
KNOWN = ("memories", "projects", *RETAGGED, *REKEYED, PRINCIPALS)
UNTENANTED = ("embedding_cache", "query_cache", "job_leases", "job_state", "meta")
SEALING = ("data_keys", "project_encryption")  # capsule.crypto: see move()
# Collections whose ids are unique per (tenant, id), and what their documents are called.
ID_KEYED = (("memories", "memory"), ("solutions", "solution"), ("solution_applications", "application"))


def moved_counts(docs: list[dict[str, Any]]) -> dict[str, int]:
    """What ``docs`` add to their project's counters, as :func:`mongo_counters.count` counts."""
    live = [d for d in docs if d.get("pending") is None]
    return {
        "memories": sum(1 for d in live if d.get("active") is True),
        "pinned": sum(1 for d in live if d.get("active") is True and d.get("pinned") is True),
        "forgotten": sum(1 for d in live if isinstance(d.get("deleted_at"), float)),
    }


class MongoTenantMover:
    """Counts and moves tenants in one :class:`~capsule.store.mongo.MongoStore` (migrated)."""

    def __init__(self, store: MongoStore, *, batch: int = BATCH) -> None:
        self._store, self._db, self._batch = store, store.db, batch

    def _check_known(self) -> None:
        for name in sorted(set(self._db.list_collection_names()) - set(KNOWN) - set(UNTENANTED) - set(SEALING)):
            if self._db[name].find_one({"tenant": {"$exists": True}}, projection={"_id": 1}) is not None:
                raise Unavailable(
                    f"cannot merge tenants: the collection {name} holds tenants that "
                    "capsule.store.mongo_tenants does not know how to move"
                )

    def tenants(self) -> list[str]:
        with guarded("list the tenants"):
            self._check_known()
            found: set[str] = set()
            for name in KNOWN:
                found |= {t for t in self._db[name].distinct("tenant") if isinstance(t, str)}
        return sorted(found)

    def count(self, tenant: str) -> dict[str, int]:
        with guarded("count the tenant's data"):
            self._check_known()
            counts = {name: self._db[name].count_documents({"tenant": tenant}) for name in KNOWN}
        return {name: n for name, n in counts.items() if n}

    def move(self, source: str, target: str) -> dict[str, int]:
        if source == target:
            raise ValueError("a tenant cannot be merged into itself")
        moved = self.count(source)
        if self._db["data_keys"].find_one({"tenant": source}, projection={"_id": 1}) is not None:
            raise Conflict(
                f"tenant {source} has encrypted memories (data keys of its own): they cannot be"
                " merged into another tenant, whose keys do not open them"
            )
        with guarded("merge the tenants"):
            self._refuse_shared_ids(source, target)
            for project in self._projects(source):
                self._move_project(source, target, project)
            for name in RETAGGED:
                self._db[name].update_many({"tenant": source}, {"$set": {"tenant": target}})
            self._move_patterns(source, target)
            self._move_links(source, target)
            self._move_evidence(source, target)
            self._move_principals(source, target)
        return moved

    def _refuse_shared_ids(self, source: str, target: str) -> None:
        """Ids are unique per tenant: two tenants may each hold one id, and one tenant cannot
        hold both documents. Checked before anything moves (the move is batches, not one
        transaction), so a refused merge changes nothing; an operator's command, which no
        tenant's caller sees. The source's ids are read a batch at a time."""
        for name, what in ID_KEYED:
            collection = self._db[name]
            ids = collection.find({"tenant": source}, projection={"id": 1})
            while batch := [d["id"] for d in islice(ids, self._batch)]:
                clash = sorted(
                    d["id"] for d in collection.find({"tenant": target, "id": {"$in": batch}}, projection={"id": 1})
                )
                if clash:
                    raise Conflict(
                        f"tenants {source} and {target} both hold {what} id(s) {', '.join(clash[:5])}: "
                        "they cannot be merged while both do"
                    )

    def _move_principals(self, source: str, target: str) -> None:
        """The source's principal scopes go to the target only when it has none: the target's
        own rules win, as merging two rule lists could widen what a principal reaches."""
        rules = self._db[PRINCIPALS]
        theirs = rules.find_one({"tenant": source})
        if theirs is not None and rules.find_one({"tenant": target}, projection={"_id": 1}) is None:
            rules.insert_one({k: v for k, v in theirs.items() if k != "_id"} | {"tenant": target})
        rules.delete_many({"tenant": source})

    # ---- memories and projects ------------------------------------------------

    def _projects(self, tenant: str) -> list[str]:
        names = set(self._db["projects"].distinct("name", {"tenant": tenant}))
        return sorted(names | set(self._db["memories"].distinct("project", {"tenant": tenant})))

    def _move_project(self, source: str, target: str, project: str) -> None:
        projects = self._db["projects"]
        old = projects.find_one({"tenant": source, "name": project}) or {}
        now = float(old.get("updated_at") or 0.0)
        try:
            projects.update_one(
                {"tenant": target, "name": project},
                {
                    "$setOnInsert": {
                        "retention_limit": old.get("retention_limit"),
                        "created_at": float(old.get("created_at") or now),
                        "updated_at": now,
                        **NEW_PROJECT,
                    }
                },
                upsert=True,
            )
        except DuplicateKeyError:
            pass  # created by a concurrent write: as good
        if old.get("retention_limit") is not None:  # the target's own limit, when it has one, wins
            projects.update_one(
                {"tenant": target, "name": project, "retention_limit": None},
                {"$set": {"retention_limit": old["retention_limit"]}},
            )
        while self._db["memories"].find_one({"tenant": source, "project": project}, projection={"_id": 1}):
            # The store's write path: one write to the target project per batch.
            self._store._in_project(
                target, project, "merge the tenants", lambda w: self._move_batch(w, source, target, project)
            )
        projects.delete_one({"tenant": source, "name": project})

    def _move_batch(self, w: Any, source: str, target: str, project: str) -> int:
        memories = self._db["memories"]
        batch = list(
            memories.find(
                {"tenant": source, "project": project},
                projection=MOVED_FIELDS,
                sort=[("seq", 1), ("_id", 1)],
                limit=self._batch,
                session=w.session,
            )
        )
        if not batch:
            return 0
        # Numbers after the target's, in the source's order: reserve the batch's span of seq.
        low, high = int(batch[0].get("seq") or 0), int(batch[-1].get("seq") or 0)
        doc = self._db["projects"].find_one_and_update(
            {"tenant": target, "name": project},
            {"$inc": {"seq": high - low + 1}},
            projection={"seq": 1},
            return_document=True,
            session=w.session,
        )
        offset = int(doc["seq"]) - high
        memories.update_many(
            {"_id": {"$in": [d["_id"] for d in batch]}, "tenant": source},
            [{"$set": {"tenant": target, "version": w.version, "seq": {"$add": [{"$ifNull": ["$seq", 0]}, offset]}}}],
            session=w.session,
        )
        # The project counters move with their memories, in the same write (mongo_counters).
        moved, at = moved_counts(batch), max(float(d.get("updated_at") or 0.0) for d in batch)
        counters.add(self._db["projects"], w.session, target, project, at, **moved)
        counters.add(self._db["projects"], w.session, source, project, at, **{k: -n for k, n in moved.items()})
        return len(batch)

    # ---- the learning side: documents keyed by tenant --------------------------

    def _move_patterns(self, source: str, target: str) -> None:
        patterns = self._db["patterns"]
        for doc in list(patterns.find({"tenant": source})):
            new_id = _link_id(target, doc["tag"], doc["category"])
            current = patterns.find_one({"_id": new_id}, projection={"occurrences": 1})
            if current is None or doc.get("occurrences", 0) > current.get("occurrences", 0):
                patterns.replace_one({"_id": new_id}, {**doc, "_id": new_id, "tenant": target}, upsert=True)
            patterns.delete_one({"_id": doc["_id"]})

    def _move_links(self, source: str, target: str) -> None:
        links = self._db["pattern_links"]
        for doc in list(links.find({"tenant": source})):
            new_id = _link_id(target, doc["tag"], doc["category"], doc["kind"], doc["target_id"])
            fields = {k: doc[k] for k in ("tag", "category", "kind", "target_id")}
            update: dict[str, Any] = {
                "$inc": {"success": doc.get("success", 0), "failure": doc.get("failure", 0)},
                "$addToSet": {"merged_from": doc["_id"]},
                "$setOnInsert": {**fields, "tenant": target},
            }
            if doc.get("last_at") is not None:
                update["$max"] = {"last_at": doc["last_at"]}
            try:
                links.update_one({"_id": new_id, "merged_from": {"$ne": doc["_id"]}}, update, upsert=True)
            except DuplicateKeyError:
                pass  # the target already absorbed this link (an earlier, interrupted run)
            links.delete_one({"_id": doc["_id"]})

    def _move_evidence(self, source: str, target: str) -> None:
        evidence = self._db["pattern_evidence"]
        for doc in list(evidence.find({"tenant": source})):
            link_id = _link_id(target, doc["tag"], doc["category"], doc["kind"], doc["target_id"])
            try:
                evidence.insert_one({**doc, "_id": _link_id(link_id, doc["evidence"]), "tenant": target})
            except DuplicateKeyError:
                pass  # the target holds the same evidence: a set
            evidence.delete_one({"_id": doc["_id"]})
