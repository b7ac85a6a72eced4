"""The capture queue (:mod:`capsule.store.capture`) in the MongoDB store's database.

One document per candidate in ``capture_candidates`` (unique on tenant, project and key, so
two processes adding the same candidate keep one), decided with a conditional update on
``status: pending`` (compare and set); thresholds in ``capture_settings``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from ..core.clock import from_epoch, to_epoch
from ..core.errors import Conflict, NotFound
from .capture import CandidateRecord
from .mongo_client import guarded

_TIMES = ("created_at", "occurred_at", "decided_at")  # kept as epoch seconds: no naive datetimes back


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


def _doc(record: CandidateRecord) -> dict[str, Any]:
    doc = asdict(record)
    doc["_id"] = doc.pop("id")
    for name in _TIMES:
        doc[name] = _epoch(doc[name])
    return doc


def _record(doc: dict[str, Any]) -> CandidateRecord:
    doc = dict(doc)
    doc["id"] = doc.pop("_id")
    for name in _TIMES:
        doc[name] = None if doc.get(name) is None else from_epoch(doc[name])
    return CandidateRecord(**doc)


def _missing(candidate_id: str) -> NotFound:
    return NotFound(
        f"no candidate {candidate_id!r}", details=[{"field": "id", "message": "no such candidate for this tenant"}]
    )


class MongoCandidateStore:
    def __init__(self, db: Any) -> None:
        self._candidates = db["capture_candidates"]
        self._settings = db["capture_settings"]

    def migrate(self) -> None:
        with guarded("create the capture queue's indexes"):
            self._candidates.create_index(
                [("tenant", ASCENDING), ("project", ASCENDING), ("key", ASCENDING)], unique=True, name="candidate_key"
            )
            self._candidates.create_index(
                [
                    ("tenant", ASCENDING),
                    ("project", ASCENDING),
                    ("status", ASCENDING),
                    ("created_at", DESCENDING),
                    ("_id", DESCENDING),
                ],
                name="candidate_recent",
            )

    def add(self, records: Sequence[CandidateRecord]) -> dict[str, str]:
        held: dict[str, str] = {}
        with guarded("queue capture candidates"):
            for record in records:
                try:
                    self._candidates.insert_one(_doc(record))
                except DuplicateKeyError:
                    found = self._candidates.find_one(
                        {"tenant": record.tenant, "project": record.project, "key": record.key}, {"status": 1}
                    )
                    held[record.key] = found["status"] if found else "pending"
        return held

    def statuses(self, tenant: str, project: str, keys: Sequence[str]) -> dict[str, str]:
        with guarded("read capture candidates"):
            docs = self._candidates.find(
                {"tenant": tenant, "project": project, "key": {"$in": list(keys)}}, {"key": 1, "status": 1}
            )
            return {d["key"]: d["status"] for d in docs}

    def get(self, tenant: str, candidate_id: str) -> CandidateRecord:
        with guarded("read a capture candidate"):
            doc = self._candidates.find_one({"_id": candidate_id, "tenant": tenant})
        if doc is None:
            raise _missing(candidate_id)
        return _record(doc)

    def list(
        self, tenant: str, project: str | None, status: str | None, *, before: tuple[datetime, str] | None, limit: int
    ) -> list[CandidateRecord]:
        query: dict[str, Any] = {"tenant": tenant}
        if project is not None:
            query["project"] = project
        if status is not None:
            query["status"] = status
        if before is not None:
            at = to_epoch(before[0])
            query["$or"] = [{"created_at": {"$lt": at}}, {"created_at": at, "_id": {"$lt": before[1]}}]
        with guarded("list capture candidates"):
            docs = self._candidates.find(query).sort([("created_at", DESCENDING), ("_id", DESCENDING)]).limit(limit)
            return [_record(d) for d in docs]

    def decide(
        self,
        tenant: str,
        candidate_id: str,
        status: str,
        *,
        at: datetime,
        text: str | None = None,
        note: str | None = None,
    ) -> CandidateRecord:
        change: dict[str, Any] = {"status": status, "decided_at": to_epoch(at), "note": note}
        if text is not None:
            change["text"] = text
        with guarded("decide a capture candidate"):
            doc = self._candidates.find_one_and_update(
                {"_id": candidate_id, "tenant": tenant, "status": "pending"},
                {"$set": change},
                return_document=ReturnDocument.AFTER,
            )
        if doc is None:
            current = self.get(tenant, candidate_id)  # NotFound when there is none
            raise Conflict(
                f"candidate {candidate_id} is already {current.status}",
                details=[{"field": "id", "message": f"already {current.status}"}],
            )
        return _record(doc)

    def undo(self, tenant: str, candidate_id: str) -> None:
        with guarded("undo a capture decision"):
            self._candidates.update_one(
                {"_id": candidate_id, "tenant": tenant}, {"$set": {"status": "pending", "decided_at": None}}
            )

    def link(self, tenant: str, candidate_id: str, memory_id: str) -> CandidateRecord:
        with guarded("link a capture candidate"):
            doc = self._candidates.find_one_and_update(
                {"_id": candidate_id, "tenant": tenant},
                {"$set": {"memory_id": memory_id}},
                return_document=ReturnDocument.AFTER,
            )
        if doc is None:
            raise _missing(candidate_id)
        return _record(doc)

    def threshold(self, tenant: str, project: str) -> float | None:
        with guarded("read the capture threshold"):
            doc = self._settings.find_one({"_id": f"{tenant}\x00{project}"})
        return None if doc is None else doc["threshold"]

    def set_threshold(self, tenant: str, project: str, threshold: float, *, at: datetime) -> None:
        with guarded("set the capture threshold"):
            self._settings.update_one(
                {"_id": f"{tenant}\x00{project}"},
                {"$set": {"tenant": tenant, "project": project, "threshold": threshold, "updated_at": to_epoch(at)}},
                upsert=True,
            )
