"""The usage counters (capsule.store.usage), on every backend in conftest.BACKENDS."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from capsule.store.sqlite import SQLiteStore
from capsule.store.usage import HOUR_S, KEEP_DAYS, UsageHour, UsageStore

H0 = int(datetime(2026, 12, 4, 4, tzinfo=UTC).timestamp())  # an hour's start


def usage_of(store) -> UsageStore:
    made: UsageStore
    if isinstance(store, SQLiteStore):
        from capsule.store.sqlite_usage import SQLiteUsageStore

        made = SQLiteUsageStore(store, clock=lambda: H0)
    else:
        from capsule.store.mongo_usage import MongoUsageStore

        made = MongoUsageStore(store.db)
    made.migrate()
    made.migrate()  # idempotent
    return made


def test_count_answers_the_tenants_requests_in_the_minute(store):
    usage = usage_of(store)
    at = H0 + 17 * 60 + 5
    assert [usage.count("t1", "search", at + i) for i in range(3)] == [1, 2, 3]
    assert usage.count("t1", "store", at + 10) == 4  # every operation counts toward the minute
    assert usage.count("t2", "search", at) == 1  # per tenant
    assert usage.count("t1", "search", at + 60) == 1  # the next minute starts again
    assert usage.count("t1", "search", at + HOUR_S) == 1  # and the next hour


def test_hours_list_requests_by_operation_ascending_within_the_window(store):
    usage = usage_of(store)
    for i in range(3):
        usage.count("t1", "search", H0 + i)
    usage.count("t1", "store", H0 + 59 * 60)
    usage.count("t1", "store", H0 + 2 * HOUR_S)
    usage.count("t2", "store", H0)
    assert usage.hours("t1", H0, H0 + 3 * HOUR_S) == [
        UsageHour(H0, 4, {"search": 3, "store": 1}),
        UsageHour(H0 + 2 * HOUR_S, 1, {"store": 1}),
    ]
    assert usage.hours("t1", H0 + HOUR_S, H0 + 2 * HOUR_S) == []  # until is exclusive, empty hours absent
    assert usage.hours("t1", H0 - HOUR_S, H0) == []
    assert usage.hours("t3", H0, H0 + 3 * HOUR_S) == []


def test_add_writes_buffered_counts_beside_the_counted_ones(store):
    usage = usage_of(store)
    usage.count("t1", "search", H0)
    usage.add({("t1", H0, "search"): 4, ("t1", H0, "ingest"): 2, ("t2", H0 + HOUR_S, "store"): 1})
    usage.add({})
    assert usage.hours("t1", H0, H0 + HOUR_S) == [UsageHour(H0, 7, {"search": 5, "ingest": 2})]
    assert usage.hours("t2", H0, H0 + 2 * HOUR_S) == [UsageHour(H0 + HOUR_S, 1, {"store": 1})]
    # buffered counts are not minute counts: the limit's count goes on from the counted request
    assert usage.count("t1", "search", H0 + 30) == 2


def test_an_operation_is_a_route_name_never_a_field_path(store):
    usage = usage_of(store)
    for bad in ("a.b", "$set", "", "Search"):
        with pytest.raises(ValueError):
            usage.count("t1", bad, H0)
        with pytest.raises(ValueError):
            usage.add({("t1", H0, bad): 1})
    assert usage.hours("t1", H0, H0 + HOUR_S) == []


def test_sqlite_drops_hours_older_than_it_keeps(tmp_path):
    from capsule.store.sqlite_usage import SQLiteUsageStore

    db = SQLiteStore(tmp_path / "usage.db")
    db.migrate()
    try:
        old = H0 - (KEEP_DAYS + 1) * 24 * HOUR_S
        first = SQLiteUsageStore(db, clock=lambda: old)
        first.migrate()
        first.add({("t1", old, "search"): 1, ("t1", H0, "search"): 1})
        SQLiteUsageStore(db, clock=lambda: H0).migrate()
        assert first.hours("t1", old, H0 + HOUR_S) == [UsageHour(H0, 1, {"search": 1})]
    finally:
        db.close()


def test_mongo_keeps_one_document_per_tenant_hour_with_a_ttl(backends, tmp_path):
    pytest.importorskip("mongomock")
    store = next(backends["mongomock"](tmp_path))
    usage = usage_of(store)
    usage.count("t|x", "search", H0 + 17 * 60)
    usage.add({("t|x", H0, "store"): 2})
    docs = list(store.db["usage"].find({}))
    assert len(docs) == 1
    doc = docs[0]
    assert doc["_id"] == "t|x|2026-12-04T04" and doc["tenant"] == "t|x"
    assert (doc["n"], doc["ops"], doc["m"]) == (3, {"search": 1, "store": 2}, {"17": 1})
    assert doc["expires_at"].replace(tzinfo=UTC) > datetime(2027, 12, 4, tzinfo=UTC)
    ttl = [i for i in store.db["usage"].list_indexes() if "expireAfterSeconds" in i]
    assert [i["key"] for i in ttl] == [{"expires_at": 1}]
