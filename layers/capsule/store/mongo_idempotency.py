"""Idempotency keys (:mod:`capsule.store.idempotency`) in MongoDB: one collection,
``idempotency_keys``, one document per (tenant, key) under a unique ``_id`` (so a claim is an
atomic insert or a conditional replace of an expired one), and a TTL index that lets the
server drop expired keys on its own (within about a minute; reads check the time anyway)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pymongo.errors import DuplicateKeyError, PyMongoError

from ..core.errors import Unavailable
from .idempotency import COMPLETED, IN_PROGRESS, IdempotencyRecord

COLLECTION = "idempotency_keys"


def _id(tenant: str, key: str) -> dict[str, str]:
    return {"t": tenant, "k": key}


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _epoch(value: Any) -> float:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return float(value)


class MongoIdempotencyStore:
    def __init__(self, db: Any) -> None:
        self._keys = db[COLLECTION]

    def migrate(self) -> None:
        try:
            self._keys.create_index("expires_at", expireAfterSeconds=0, name="idempotency_expiry")
        except PyMongoError as exc:
            raise Unavailable(f"the idempotency keys' index could not be made: {exc}") from exc

    def claim(self, tenant: str, key: str, fingerprint: str, *, now: float, lease_s: float) -> IdempotencyRecord | None:
        doc = {
            "_id": _id(tenant, key),
            "fingerprint": fingerprint,
            "status": IN_PROGRESS,
            "expires_at": _when(now + lease_s),
            "response": None,
        }
        try:
            try:
                self._keys.insert_one(doc)
                return None
            except DuplicateKeyError:
                pass
            # Held: take it over only if it has expired (the server's TTL sweep may not have run).
            taken = self._keys.replace_one({"_id": doc["_id"], "expires_at": {"$lte": _when(now)}}, doc)
            if taken.modified_count:
                return None
            held = self._keys.find_one({"_id": doc["_id"]})
        except DuplicateKeyError:
            held = None
        except PyMongoError as exc:
            raise Unavailable(f"the idempotency key could not be claimed: {exc}") from exc
        if held is None:  # released or replaced between the two calls: the caller tries again
            raise Unavailable("the idempotency key changed while it was claimed; retry")
        response = json.loads(held["response"]) if held.get("response") is not None else None
        return IdempotencyRecord(tenant, key, held["fingerprint"], held["status"], _epoch(held["expires_at"]), response)

    def complete(
        self, tenant: str, key: str, fingerprint: str, response: dict[str, Any], *, now: float, ttl_s: float
    ) -> None:
        try:
            self._keys.update_one(
                {"_id": _id(tenant, key), "fingerprint": fingerprint},
                {
                    "$set": {
                        "status": COMPLETED,
                        "expires_at": _when(now + ttl_s),
                        # kept as text: a response's headers and body are not all valid field names
                        "response": json.dumps(response, ensure_ascii=False),
                    }
                },
            )
        except PyMongoError as exc:
            raise Unavailable(f"the idempotency key's answer could not be kept: {exc}") from exc

    def release(self, tenant: str, key: str, fingerprint: str) -> None:
        try:
            self._keys.delete_one({"_id": _id(tenant, key), "fingerprint": fingerprint, "status": IN_PROGRESS})
        except PyMongoError as exc:
            raise Unavailable(f"the idempotency key could not be released: {exc}") from exc

    def purge(self, now: float) -> int:
        try:
            return self._keys.delete_many({"expires_at": {"$lte": _when(now)}}).deleted_count
        except PyMongoError as exc:
            raise Unavailable(f"expired idempotency keys could not be removed: {exc}") from exc
