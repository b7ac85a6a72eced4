"""Asynchronous jobs (:mod:`capsule.store.async_jobs`) in MongoDB: one collection, ``async_jobs``,
one document per job under ``_id`` {tenant, id}; a claim is one conditional ``find_one_and_update``
(one winner), and a TTL index on ``expires_at`` lets the server drop expired jobs on its own
(within about a minute; reads check the time anyway)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.errors import PyMongoError

from ..core.errors import Unavailable
from .async_jobs import DONE, QUEUED, RUNNING, Job

COLLECTION = "async_jobs"


def _id(tenant: str, job_id: str) -> dict[str, str]:
    return {"t": tenant, "j": job_id}


def _when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return float(value)


def _claimable(now: float) -> dict[str, Any]:
    return {"$or": [{"status": QUEUED}, {"status": RUNNING, "lease_until": {"$lte": _when(now)}}]}


def _job(doc: dict[str, Any]) -> Job:
    return Job(
        id=doc["_id"]["j"],
        tenant=doc["_id"]["t"],
        principal=doc["principal"],
        operation=doc["operation"],
        # kept as text: a request's headers and body are not all valid field names
        request=json.loads(doc["request"]),
        status=doc["status"],
        created_at=_epoch(doc["created_at"]) or 0.0,
        expires_at=_epoch(doc["expires_at"]) or 0.0,
        started_at=_epoch(doc.get("started_at")),
        finished_at=_epoch(doc.get("finished_at")),
        lease_until=_epoch(doc.get("lease_until")),
        attempts=int(doc.get("attempts", 0)),
        response=json.loads(doc["response"]) if doc.get("response") is not None else None,
    )


class MongoJobStore:
    def __init__(self, db: Any) -> None:
        self._jobs = db[COLLECTION]

    def migrate(self) -> None:
        try:
            self._jobs.create_index("expires_at", expireAfterSeconds=0, name="async_jobs_expiry")
            self._jobs.create_index([("status", 1), ("lease_until", 1)], name="async_jobs_status")
        except PyMongoError as exc:
            raise Unavailable(f"the jobs' indexes could not be made: {exc}") from exc

    def create(self, job: Job) -> None:
        doc = {
            "_id": _id(job.tenant, job.id),
            "principal": job.principal,
            "operation": job.operation,
            "request": json.dumps(job.request, ensure_ascii=False),
            "status": job.status,
            "created_at": _when(job.created_at),
            "expires_at": _when(job.expires_at),
            "started_at": _when(job.started_at),
            "finished_at": _when(job.finished_at),
            "lease_until": _when(job.lease_until),
            "attempts": job.attempts,
            "response": None if job.response is None else json.dumps(job.response, ensure_ascii=False),
        }
        try:
            self._jobs.insert_one(doc)
        except PyMongoError as exc:
            raise Unavailable(f"the job could not be kept: {exc}") from exc

    def get(self, tenant: str, job_id: str, *, now: float) -> Job | None:
        try:
            doc = self._jobs.find_one({"_id": _id(tenant, job_id), "expires_at": {"$gt": _when(now)}})
        except PyMongoError as exc:
            raise Unavailable(f"the job could not be read: {exc}") from exc
        return None if doc is None else _job(doc)

    def claim(self, tenant: str, job_id: str, *, now: float, lease_s: float) -> Job | None:
        try:
            doc = self._jobs.find_one_and_update(
                {"_id": _id(tenant, job_id), "expires_at": {"$gt": _when(now)}, **_claimable(now)},
                {
                    "$set": {"status": RUNNING, "started_at": _when(now), "lease_until": _when(now + lease_s)},
                    "$inc": {"attempts": 1},
                },
                return_document=ReturnDocument.AFTER,
            )
        except PyMongoError as exc:
            raise Unavailable(f"the job could not be claimed: {exc}") from exc
        return None if doc is None else _job(doc)

    def finish(self, tenant: str, job_id: str, *, status: str, response: dict[str, Any], now: float) -> bool:
        assert status in DONE, status
        try:
            done = self._jobs.update_one(
                {"_id": _id(tenant, job_id), "status": {"$in": [QUEUED, RUNNING]}},
                {
                    "$set": {
                        "status": status,
                        "finished_at": _when(now),
                        "lease_until": None,
                        "response": json.dumps(response, ensure_ascii=False),
                    }
                },
            )
        except PyMongoError as exc:
            raise Unavailable(f"the job's end could not be recorded: {exc}") from exc
        return bool(done.modified_count)

    def pending(self, *, now: float, limit: int) -> list[tuple[str, str]]:
        try:
            docs = (
                self._jobs.find({"expires_at": {"$gt": _when(now)}, **_claimable(now)}, projection={"_id": 1})
                .sort("created_at", 1)
                .limit(limit)
            )
            return [(doc["_id"]["t"], doc["_id"]["j"]) for doc in docs]
        except PyMongoError as exc:
            raise Unavailable(f"the pending jobs could not be read: {exc}") from exc

    def purge(self, now: float) -> int:
        try:
            return self._jobs.delete_many({"expires_at": {"$lte": _when(now)}}).deleted_count
        except PyMongoError as exc:
            raise Unavailable(f"expired jobs could not be removed: {exc}") from exc
