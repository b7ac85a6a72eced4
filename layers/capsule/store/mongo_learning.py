"""The learning store on MongoDB (Atlas in the hosted mode), beside the memories.

Collections: ``solutions``, ``solution_applications``, ``patterns``, ``pattern_links``,
``pattern_evidence``, ``job_leases``, ``job_state``. Solutions and applications are keyed by
(tenant, ``id``), as memories are: two tenants may hold one id (:mod:`.mongo_learning_ids`,
learning schema 2; their ``_id`` is opaque). Embeddings are BSON binary (float32
bytes), never arrays of doubles; times are epoch seconds, as in SQLite. Counters change with
``$inc`` in one document; an evidence key is a unique ``_id``, so a second (or concurrent)
recording of the same evidence fails on the key and is not counted. Every ``PyMongoError``
becomes :class:`Unavailable` here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
from bson.binary import Binary
from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError, PyMongoError

from ..core import limits
from ..core.clock import from_epoch, to_epoch
from ..core.errors import Conflict, NotFound, Unavailable
from ..core.learning_records import ApplicationRecord, LinkRecord, PatternRecord, SolutionRecord
from . import mongo_learning_ids
from .base import Cursor
from .mongo_schema import ensure_version

F = TypeVar("F", bound=Callable[..., Any])
SCHEMA_VERSION = 2  # bump when the indexes in _create_indexes change; 2: ids per tenant (mongo_learning_ids)


def _guarded(method: F) -> F:
    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except DuplicateKeyError:
            raise
        except PyMongoError as exc:
            raise Unavailable(f"MongoDB could not complete {method.__name__}: {exc}") from exc

    return run  # type: ignore[return-value]


def _binary(matrix: np.ndarray | None) -> Binary | None:
    return None if matrix is None else Binary(np.asarray(matrix, dtype="<f4").tobytes())


def _array(blob: bytes | None, rows: int | None = None) -> np.ndarray | None:
    if blob is None:
        return None
    vector = np.frombuffer(bytes(blob), dtype="<f4")
    return vector if rows is None else vector.reshape(rows, -1)


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


def _solution_doc(r: SolutionRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "tenant": r.tenant,
        "title": r.title,
        "category": r.category,
        "body": r.body,
        "embeddings": _binary(r.embeddings),
        "signatures": 0 if r.embeddings is None else len(r.embeddings),
        "model": r.model,
        "success": r.success,
        "failure": r.failure,
        "created_at": to_epoch(r.created_at),
        "updated_at": to_epoch(r.updated_at),
        "last_applied_at": _epoch(r.last_applied_at),
        "verified_on": _epoch(r.verified_on),
    }


def _solution(d: dict[str, Any]) -> SolutionRecord:
    rows = d.get("signatures") or 0
    return SolutionRecord(
        id=d["id"],
        tenant=d["tenant"],
        title=d["title"],
        category=d["category"],
        body=d["body"],
        created_at=from_epoch(d["created_at"]),
        updated_at=from_epoch(d["updated_at"]),
        success=d["success"],
        failure=d["failure"],
        embeddings=_array(d.get("embeddings"), rows) if rows else None,
        model=d.get("model"),
        last_applied_at=from_epoch(d.get("last_applied_at")),
        verified_on=from_epoch(d.get("verified_on")),
    )


def _pattern(d: dict[str, Any]) -> PatternRecord:
    return PatternRecord(
        tenant=d["tenant"],
        tag=d["tag"],
        category=d["category"],
        terms=d["terms"],
        occurrences=d["occurrences"],
        projects=d["projects"],
        examples=d["examples"],
        description=d["description"],
        created_at=from_epoch(d["created_at"]),
        updated_at=from_epoch(d["updated_at"]),
        first_seen=from_epoch(d.get("first_seen")),
        last_seen=from_epoch(d.get("last_seen")),
        embedding=_array(d.get("embedding")),
        model=d.get("model"),
    )


def _link(d: dict[str, Any]) -> LinkRecord:
    return LinkRecord(
        tenant=d["tenant"],
        tag=d["tag"],
        category=d["category"],
        kind=d["kind"],
        target_id=d["target_id"],
        success=d.get("success", 0),
        failure=d.get("failure", 0),
        last_at=from_epoch(d.get("last_at")),
    )


def _link_id(*parts: str) -> str:
    # \x1f cannot appear in validated names, so the join is unambiguous.
    return "\x1f".join(parts)


class MongoLearningStore:
    """The :class:`~capsule.store.learning.LearningStore` in a MongoDB database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._solutions = db["solutions"]
        self._applications = db["solution_applications"]
        self._patterns = db["patterns"]
        self._links = db["pattern_links"]
        self._evidence = db["pattern_evidence"]
        self._leases = db["job_leases"]
        self._state = db["job_state"]

    @_guarded
    def migrate(self) -> None:
        """The indexes, created once per :data:`SCHEMA_VERSION` (capsule.store.mongo_schema)."""
        ensure_version(self._db, "learning_schema", SCHEMA_VERSION, self._create_indexes)

    def _create_indexes(self) -> None:
        mongo_learning_ids.migrate(self._db)  # solutions' and applications' indexes, after their ids
        self._patterns.create_index([("tenant", ASCENDING), ("occurrences", DESCENDING)])
        self._links.create_index([("tenant", ASCENDING), ("kind", ASCENDING), ("target_id", ASCENDING)])

    @_guarded
    def tenants(self) -> list[str]:
        return sorted(set(self._solutions.distinct("tenant")) | set(self._patterns.distinct("tenant")))

    # ---- solutions --------------------------------------------------------

    @_guarded
    def insert_solution(self, record: SolutionRecord) -> None:
        try:
            self._solutions.insert_one(_solution_doc(record))
        except DuplicateKeyError as exc:
            raise Conflict(f"solution {record.id} already exists") from exc

    @_guarded
    def get_solution(self, tenant: str, solution_id: str) -> SolutionRecord:
        doc = self._solutions.find_one({"tenant": tenant, "id": solution_id})
        if doc is None:
            raise NotFound(f"no solution {solution_id}")
        return _solution(doc)

    @_guarded
    def find_solution(self, tenant: str, title: str, category: str) -> SolutionRecord | None:
        docs = list(
            self._solutions.find({"tenant": tenant, "title": title, "category": category})
            .sort([("created_at", ASCENDING), ("id", ASCENDING)])
            .limit(1)
        )
        return _solution(docs[0]) if docs else None

    def _query(self, tenant: str, category: str | None) -> dict[str, Any]:
        query: dict[str, Any] = {"tenant": tenant}
        if category is not None:
            query["category"] = category
        return query

    @_guarded
    def list_solutions(
        self, tenant: str, *, category: str | None, after: Cursor | None, limit: int
    ) -> list[SolutionRecord]:
        query = self._query(tenant, category)
        if after is not None:
            query["$or"] = [{"created_at": {"$lt": after[0]}}, {"created_at": after[0], "id": {"$lt": after[1]}}]
        docs = (
            self._solutions.find(query, {"embeddings": 0})
            .sort([("created_at", DESCENDING), ("id", DESCENDING)])
            .limit(limit)
        )
        return [_solution({**d, "signatures": 0}) for d in docs]

    @_guarded
    def solutions(
        self, tenant: str, *, category: str | None, limit: int, component: str | None = None
    ) -> list[SolutionRecord]:
        query = self._query(tenant, category)
        if component is not None:  # those naming it and those naming none (COMPAT.md §1.7)
            query["body.component"] = {"$in": [component, None]}
        docs = self._solutions.find(query).sort([("created_at", DESCENDING), ("id", DESCENDING)]).limit(limit)
        return [_solution(d) for d in docs]

    @_guarded
    def replace_solution(self, record: SolutionRecord) -> None:
        doc = _solution_doc(record)
        changes = {k: doc[k] for k in ("title", "category", "body", "embeddings", "signatures", "model", "updated_at")}
        if not self._solutions.update_one({"tenant": record.tenant, "id": record.id}, {"$set": changes}).matched_count:
            raise NotFound(f"no solution {record.id}")

    @_guarded
    def set_solution_embeddings(self, tenant: str, solution_id: str, embeddings: np.ndarray, model: str) -> None:
        self._solutions.update_one(
            {"tenant": tenant, "id": solution_id},
            {"$set": {"embeddings": _binary(embeddings), "signatures": len(embeddings), "model": model}},
        )

    @_guarded
    def delete_solution(self, tenant: str, solution_id: str) -> None:
        if not self._solutions.delete_one({"tenant": tenant, "id": solution_id}).deleted_count:
            raise NotFound(f"no solution {solution_id}")
        self._applications.delete_many({"tenant": tenant, "solution_id": solution_id})
        for collection in (self._links, self._evidence):
            collection.delete_many({"tenant": tenant, "kind": "solution", "target_id": solution_id})

    @_guarded
    def record_application(self, application: ApplicationRecord) -> SolutionRecord:
        a = application
        column = "success" if a.success else "failure"
        # A success also verifies the solution (verified_on); either outcome is its last application.
        times = {"last_applied_at": to_epoch(a.at), **({"verified_on": to_epoch(a.at)} if a.success else {})}
        solution = {"tenant": a.tenant, "id": a.solution_id}
        # Saturating: a count at the limit stays there, so it always reads back as valid.
        doc = self._solutions.find_one_and_update(
            {**solution, column: {"$lt": limits.MAX_COUNT}},
            {"$inc": {column: 1}, "$set": times},
            return_document=ReturnDocument.AFTER,
        ) or self._solutions.find_one_and_update(solution, {"$set": times}, return_document=ReturnDocument.AFTER)
        if doc is None:
            raise NotFound(f"no solution {a.solution_id}")
        self._applications.insert_one(
            {
                "id": a.id,
                "tenant": a.tenant,
                "solution_id": a.solution_id,
                "success": a.success,
                "project": a.project,
                "error": a.error,
                "context": a.context,
                "at": to_epoch(a.at),
            }
        )
        return _solution(doc)

    @_guarded
    def applications(self, tenant: str, *, limit: int) -> list[ApplicationRecord]:
        docs = self._applications.find({"tenant": tenant}).sort([("at", DESCENDING), ("_id", DESCENDING)]).limit(limit)
        return [
            ApplicationRecord(
                id=d["id"],
                tenant=d["tenant"],
                solution_id=d["solution_id"],
                success=d["success"],
                at=from_epoch(d["at"]),
                project=d.get("project"),
                error=d.get("error"),
                context=d.get("context"),
            )
            for d in docs
        ]

    # ---- patterns ---------------------------------------------------------

    @_guarded
    def upsert_pattern(self, record: PatternRecord) -> None:
        r = record
        self._patterns.update_one(
            {"_id": _link_id(r.tenant, r.tag, r.category)},
            {
                "$set": {
                    "tenant": r.tenant,
                    "tag": r.tag,
                    "category": r.category,
                    "terms": r.terms,
                    "occurrences": r.occurrences,
                    "projects": r.projects,
                    "examples": r.examples,
                    "description": r.description,
                    "embedding": _binary(r.embedding),
                    "model": r.model,
                    "first_seen": _epoch(r.first_seen),
                    "last_seen": _epoch(r.last_seen),
                    "updated_at": to_epoch(r.updated_at),
                },
                "$setOnInsert": {"created_at": to_epoch(r.created_at)},
            },
            upsert=True,
        )

    @_guarded
    def get_pattern(self, tenant: str, tag: str, category: str) -> PatternRecord:
        doc = self._patterns.find_one({"_id": _link_id(tenant, tag, category)})
        if doc is None:
            raise NotFound(f"no pattern '{tag}' in category '{category}'")
        return _pattern(doc)

    @_guarded
    def patterns(self, tenant: str, *, category: str | None, min_occurrences: int, limit: int) -> list[PatternRecord]:
        query = {**self._query(tenant, category), "occurrences": {"$gte": min_occurrences}}
        docs = (
            self._patterns.find(query)
            .sort([("occurrences", DESCENDING), ("last_seen", DESCENDING), ("tag", ASCENDING)])
            .limit(limit)
        )
        return [_pattern(d) for d in docs]

    @_guarded
    def link(
        self,
        tenant: str,
        tag: str,
        category: str,
        kind: str,
        target_id: str,
        *,
        success: bool,
        at: datetime,
        evidence: str | None,
    ) -> tuple[LinkRecord, bool]:
        link_id = _link_id(tenant, tag, category, kind, target_id)
        fields = {"tenant": tenant, "tag": tag, "category": category, "kind": kind, "target_id": target_id}
        counted = True
        if evidence is not None:
            # The evidence is written first: a crash in between under-counts once, never twice.
            try:
                self._evidence.insert_one({"_id": _link_id(link_id, evidence), **fields, "evidence": evidence})
            except DuplicateKeyError:
                counted = False
        update: dict[str, Any] = {"$setOnInsert": fields}
        if counted:
            update["$inc"] = {"success" if success else "failure": 1}
            update["$set"] = {"last_at": to_epoch(at)}
        doc = self._links.find_one_and_update(
            {"_id": link_id}, update, upsert=True, return_document=ReturnDocument.AFTER
        )
        return _link(doc), counted  # type: ignore[arg-type]  # upserted: there is one

    @_guarded
    def links(
        self,
        tenant: str,
        *,
        tag: str | None = None,
        category: str | None = None,
        kind: str | None = None,
        min_success: int = 0,
        limit: int = 100,
    ) -> list[LinkRecord]:
        query: dict[str, Any] = {"tenant": tenant}
        for name, value in (("tag", tag), ("category", category), ("kind", kind)):
            if value is not None:
                query[name] = value
        docs = self._links.find(query)
        found = [_link(d) for d in docs if d.get("success", 0) >= min_success]
        found.sort(key=lambda link: (-link.success, link.failure, link.target_id))
        return found[:limit]

    # ---- jobs -------------------------------------------------------------

    @_guarded
    def acquire_lease(self, name: str, holder: str, *, now: datetime, until: datetime) -> bool:
        try:
            self._leases.find_one_and_update(
                {"_id": name, "$or": [{"holder": holder}, {"expires_at": {"$lte": to_epoch(now)}}]},
                {"$set": {"holder": holder, "expires_at": to_epoch(until)}},
                upsert=True,
            )
        except DuplicateKeyError:  # the lease exists, unexpired, held by someone else
            return False
        return True

    @_guarded
    def release_lease(self, name: str, holder: str) -> None:
        self._leases.delete_one({"_id": name, "holder": holder})

    @_guarded
    def job_state(self, name: str) -> dict[str, Any]:
        doc = self._state.find_one({"_id": name})
        return dict(doc["state"]) if doc else {}

    @_guarded
    def save_job_state(self, name: str, state: dict[str, Any], *, at: datetime) -> None:
        self._state.update_one({"_id": name}, {"$set": {"state": state, "updated_at": to_epoch(at)}}, upsert=True)
