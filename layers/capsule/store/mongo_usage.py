"""Usage counters (:mod:`capsule.store.usage`) in MongoDB: one collection, ``usage``, one
document per tenant-hour::

    {_id: "<tenant>|<hour>", tenant, hour, n, ops: {search: 3, ...}, m: {"17": 5, ...}, expires_at}

A request is counted by one ``find_one_and_update`` (``$inc`` of the total, the operation and
the minute, upserted) that hands back the minute's count in the same round trip; buffered
counts go in one upsert per tenant-hour (a process's buffer seldom holds more than one or two:
a bulk write would save little, and mongomock, which the tests run on, cannot replay pymongo's
``UpdateOne``). A TTL index drops an hour
:data:`~capsule.store.usage.KEEP_DAYS` days after it ends. Operation names are route names
(:data:`~capsule.store.usage.OPERATION`), so ``ops.<op>`` is never a path a caller chose."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ASCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError, PyMongoError

from ..core.errors import Unavailable
from .usage import HOUR_S, KEEP_DAYS, Counts, UsageHour, check_operation, hour_of, minute_of

COLLECTION = "usage"


def _hour(start: int) -> datetime:
    return datetime.fromtimestamp(start, UTC)


def _id(tenant: str, start: int) -> str:
    return f"{tenant}|{_hour(start):%Y-%m-%dT%H}"


def _on_insert(tenant: str, start: int) -> dict[str, Any]:
    hour = _hour(start)
    return {"tenant": tenant, "hour": hour, "expires_at": hour + timedelta(days=KEEP_DAYS, seconds=HOUR_S)}


def _epoch(value: datetime) -> int:
    return int((value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp())


class MongoUsageStore:
    def __init__(self, db: Any) -> None:
        self._usage = db[COLLECTION]

    def migrate(self) -> None:
        try:
            self._usage.create_index([("tenant", ASCENDING), ("hour", ASCENDING)], name="usage_tenant_hour")
            self._usage.create_index([("expires_at", ASCENDING)], expireAfterSeconds=0, name="usage_expiry")
        except PyMongoError as exc:
            raise Unavailable(f"the usage counters' indexes could not be made: {exc}") from exc

    def count(self, tenant: str, operation: str, at: float) -> int:
        start, minute = hour_of(at), str(minute_of(at))
        update = {
            "$inc": {"n": 1, f"ops.{check_operation(operation)}": 1, f"m.{minute}": 1},
            "$setOnInsert": _on_insert(tenant, start),
        }
        for attempt in range(2):
            try:
                doc = self._usage.find_one_and_update(
                    {"_id": _id(tenant, start)}, update, upsert=True, return_document=ReturnDocument.AFTER
                )
                return int(doc["m"][minute])
            except DuplicateKeyError:
                # Two first requests of an hour upserted at once: the loser's update finds the
                # winner's document on a second try.
                if attempt:
                    raise Unavailable("the usage counter could not be updated; retry") from None
            except PyMongoError as exc:
                raise Unavailable(f"the usage counter could not be updated: {exc}") from exc
        raise AssertionError("unreachable")

    def add(self, counts: Counts) -> None:
        by_hour: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
        for (tenant, start, operation), n in counts.items():
            if n > 0:
                by_hour[(tenant, start)][f"ops.{check_operation(operation)}"] = n
        if not by_hour:
            return
        try:
            for (tenant, start), ops in by_hour.items():
                self._usage.update_one(
                    {"_id": _id(tenant, start)},
                    {"$inc": {"n": sum(ops.values()), **ops}, "$setOnInsert": _on_insert(tenant, start)},
                    upsert=True,
                )
        except PyMongoError as exc:
            raise Unavailable(f"the usage counters could not be written: {exc}") from exc

    def hours(self, tenant: str, since: int, until: int) -> list[UsageHour]:
        try:
            docs = list(
                self._usage.find(
                    {"tenant": tenant, "hour": {"$gte": _hour(since), "$lt": _hour(until)}},
                    {"hour": 1, "n": 1, "ops": 1},
                    sort=[("hour", ASCENDING)],
                )
            )
        except PyMongoError as exc:
            raise Unavailable(f"the usage counters could not be read: {exc}") from exc
        return [UsageHour(_epoch(d["hour"]), int(d.get("n", 0)), dict(d.get("ops") or {})) for d in docs]
