"""The governance contract (:mod:`capsule.store.governance`) on MongoDB.

Each write runs in the :class:`~capsule.store.mongo.MongoStore`'s project write (a
transaction, or the project's lease), stamped with the project's next version. The
versions live in their own collection; every query has its index in :mod:`.mongo_indexes`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from ..core.clock import from_epoch, to_epoch
from ..core.errors import NotFound, PreconditionFailed
from ..core.records import AuditRecord, MemoryRecord
from ..governance import audit as actions
from . import mongo_counters as counters
from .governance import SAME_TIME_S, VersionRecord, version_of
from .mongo import MongoStore
from .mongo_changes import CHANGE_PROJECTION
from .mongo_client import guarded
from .mongo_docs import doc_to_record, encode_vector, governance_fields, visibility_fields
from .mongo_governance_schema import VERSIONS, drop_versions


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


def _version_doc(v: VersionRecord) -> dict[str, Any]:
    return {
        "tenant": v.tenant,
        "memory_id": v.memory_id,
        "number": v.number,
        "project": v.project,
        "content": v.content,
        "sha256": v.sha256,
        "path": v.path,
        "explanation": v.explanation,
        "meta": dict(v.meta),
        "retention": v.retention,
        "expires_at": _epoch(v.expires_at),
        "pinned": v.pinned,
        "created_at": _epoch(v.created_at),
        "replaced_at": _epoch(v.replaced_at),
        "actor": v.actor,
        "reason": v.reason,
    }


def _doc_version(d: dict[str, Any]) -> VersionRecord:
    return VersionRecord(
        tenant=d["tenant"],
        memory_id=d["memory_id"],
        number=d["number"],
        project=d["project"],
        content=d["content"],
        sha256=d["sha256"],
        path=d.get("path"),
        explanation=d.get("explanation"),
        meta=dict(d.get("meta") or {}),
        retention=d.get("retention") or "auto",
        expires_at=from_epoch(d.get("expires_at")),
        pinned=bool(d.get("pinned")),
        created_at=from_epoch(d.get("created_at")),
        replaced_at=from_epoch(d.get("replaced_at")),
        actor=d.get("actor", ""),
        reason=d.get("reason", ""),
    )


def _replaced_fields(after: MemoryRecord) -> dict[str, Any]:
    gov = governance_fields(after)
    return {
        "content": after.content,
        "sha256": after.sha256,
        "embedding": encode_vector(after.embedding),
        "model": after.model,
        "status": after.status,
        "meta": dict(after.meta),
        "explanation": after.explanation,
        "retention": gov["retention"],
        "expires_at": gov["expires_at"],
        "updated_at": to_epoch(after.updated_at),
        **visibility_fields(after),
    }


class MongoGovernanceStore:
    """Versions, supersession and expiry in the database of a :class:`MongoStore`."""

    def __init__(self, store: MongoStore) -> None:
        self._store = store
        self.versions_ = store.db[VERSIONS]

    def replace(
        self, before: MemoryRecord, after: MemoryRecord, *, action: str, actor: str, reason: str
    ) -> MemoryRecord:
        stamp, store = to_epoch(before.updated_at), self._store
        match = {
            "tenant": before.tenant,
            "id": before.id,
            "active": True,
            "sha256": before.sha256,
            "updated_at": {"$gte": stamp - SAME_TIME_S, "$lte": stamp + SAME_TIME_S},
        }

        def body(w: Any) -> dict[str, Any]:
            number = 1 + self.versions_.count_documents(
                {"tenant": before.tenant, "memory_id": before.id}, session=w.session
            )
            kept = version_of(before, number, replaced_at=after.updated_at, actor=actor, reason=reason)
            # The version first: without transactions a failed update must not leave the row changed unkept.
            self.versions_.insert_one(_version_doc(kept), session=w.session)
            doc = store.memories.find_one_and_update(
                match,
                {"$set": {**_replaced_fields(after), "version": w.version}},
                projection=CHANGE_PROJECTION,
                return_document=True,
                session=w.session,
            )
            if doc is None:
                self.versions_.delete_one(
                    {"tenant": before.tenant, "memory_id": before.id, "number": number}, session=w.session
                )
                raise self._why_not(before, w.session)
            store._audit(
                w.session, before.tenant, before.id, before.project, action, actor, reason, to_epoch(after.updated_at)
            )
            return doc

        with guarded("find the memory"):  # the project's write needs its project: a foreign id has none
            if (
                store.memories.find_one(
                    {"tenant": before.tenant, "id": before.id, "active": True}, projection={"project": 1}
                )
                is None
            ):
                raise NotFound(f"no memory {before.id}")
        return doc_to_record(store._in_project(before.tenant, before.project, "update the memory", body))

    def _why_not(self, before: MemoryRecord, session: Any) -> NotFound | PreconditionFailed:
        live = self._store.memories.find_one(
            {"tenant": before.tenant, "id": before.id, "active": True}, projection={"_id": 1}, session=session
        )
        if live:
            return PreconditionFailed(f"memory {before.id} changed since it was read; read it again and retry")
        return NotFound(f"no memory {before.id}")

    def versions(self, tenant: str, memory_id: str, *, limit: int) -> list[VersionRecord]:
        with guarded("read the memory's versions"):
            docs = list(
                self.versions_.find({"tenant": tenant, "memory_id": memory_id}, sort=[("number", -1)], limit=limit)
            )
        return [_doc_version(d) for d in reversed(docs)]

    def supersede(
        self, tenant: str, old_id: str, new_id: str, *, at: datetime, actor: str, reason: str
    ) -> MemoryRecord:
        now, store = to_epoch(at), self._store
        # Not "forgotten": no deleted_on, so the forgotten TTL never drops it.
        fields = {
            "active": False,
            "deleted_at": now,
            "deleted_reason": "superseded",
            "superseded_by": new_id,
            "updated_at": now,
        }
        doc = store._change(
            tenant,
            old_id,
            {"active": True},
            {"$set": fields},
            missing="",
            audit=(actions.SUPERSEDE, actor, reason, now),
            also=store._counting(now, memories=-1, forgotten=1),
        )
        return doc_to_record(doc)

    def expire(self, *, at: datetime, limit: int) -> list[AuditRecord]:
        now, store = to_epoch(at), self._store
        with guarded("find expired memories"):
            docs = list(
                store.memories.find(
                    {"expires_at": {"$type": "double", "$lte": now}, "active": True},
                    projection={"tenant": 1, "id": 1, "project": 1, "expires_at": 1, "pinned": 1},
                    sort=[("expires_at", 1)],
                    limit=limit,
                )
            )
        by_project: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for doc in docs:
            by_project.setdefault((doc["tenant"], doc["project"]), []).append(doc)
        done: list[AuditRecord] = []
        for (tenant, project), group in by_project.items():
            done += store._in_project(
                tenant,
                project,
                "purge expired memories",
                lambda w, group=group: self._expire(w, group, at),  # type: ignore[misc]
                purged=True,
            )
        return done

    def _expire(self, w: Any, docs: list[dict[str, Any]], at: datetime) -> list[AuditRecord]:
        store, now = self._store, to_epoch(at)
        tenant, project = docs[0]["tenant"], docs[0]["project"]
        done = []
        for doc in docs:
            gone = store.memories.delete_one(
                {"tenant": tenant, "id": doc["id"], "active": True}, session=w.session
            ).deleted_count
            if not gone:
                continue  # forgotten or changed meanwhile
            reason = f"ephemeral: expired at {from_epoch(doc['expires_at']).isoformat()}"
            store._audit(w.session, tenant, doc["id"], project, actions.EXPIRE, "retention", reason, now)
            counters.add(
                store.projects_, w.session, tenant, project, now, memories=-1, pinned=-1 if doc.get("pinned") else 0
            )
            done.append(
                AuditRecord(
                    tenant=tenant,
                    memory_id=doc["id"],
                    project=project,
                    action=actions.EXPIRE,
                    actor="retention",
                    reason=reason,
                    at=at,
                )
            )
        drop_versions(store.db, w.session, tenant, [a.memory_id for a in done])
        return done

    def set_project_ttl(self, tenant: str, project: str, ttl: int, *, at: datetime) -> None:
        self._store._ensure_project(tenant, project, to_epoch(at))
        with guarded("set the project's ephemeral TTL"):
            self._store.projects_.update_one(
                {"tenant": tenant, "name": project}, {"$set": {"ephemeral_ttl": ttl, "updated_at": to_epoch(at)}}
            )

    def project_ttl(self, tenant: str, project: str) -> int | None:
        with guarded("read the project's ephemeral TTL"):
            doc = self._store.projects_.find_one({"tenant": tenant, "name": project}, projection={"ephemeral_ttl": 1})
        return (doc or {}).get("ephemeral_ttl")

    def add_audit(self, record: AuditRecord) -> None:
        with guarded("keep the audit record"):
            self._store._audit(
                None,
                record.tenant,
                record.memory_id,
                record.project,
                record.action,
                record.actor,
                record.reason,
                to_epoch(record.at),
            )

    def version_pages(self, tenant: str, project: str | None, *, page: int) -> Iterator[list[VersionRecord]]:
        query: dict[str, Any] = {"tenant": tenant}
        if project is not None:
            query["project"] = project
        last = None
        while True:
            with guarded("read the versions"):
                docs = list(
                    self.versions_.find(
                        {**query, **({"_id": {"$gt": last}} if last else {})}, sort=[("_id", 1)], limit=page
                    )
                )
            if not docs:
                return
            last = docs[-1]["_id"]
            yield [_doc_version(d) for d in docs]

    def put_versions(self, tenant: str, rows: Sequence[VersionRecord]) -> int:
        from pymongo.errors import DuplicateKeyError

        written = 0
        with guarded("keep the versions"):
            for row in rows:
                try:
                    self.versions_.insert_one(_version_doc(row))
                    written += 1
                except DuplicateKeyError:
                    pass
        return written
