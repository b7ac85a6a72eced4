"""The strict mongomock backend checks what it claims: unindexed queries and transaction misuse fail."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")

from strict_mongo import StrictDatabase, TxnClient, UnindexedQuery, served  # noqa: E402

from capsule.core.records import MemoryRecord  # noqa: E402
from capsule.store.mongo import INDEXES, MongoStore  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=UTC)
MEMORIES = INDEXES["memories"]


def without(*names):
    return [(keys, options) for keys, options in MEMORIES if options["name"] not in names]


def test_the_queries_issue_13_found_unindexed_are_refused_without_their_new_indexes():
    old_backfill = {"active": True, "$or": [{"status": "pending_embedding"}, {"model": {"$ne": "m"}}]}
    assert not served(MEMORIES, old_backfill, [("created_at", 1), ("seq", 1)])
    new_backfill = {
        "active": True,
        "$or": [{"status": "pending_embedding"}, {"model": {"$lt": "m"}}, {"model": {"$gt": "m"}}],
    }
    assert served(MEMORIES, new_backfill, [("created_at", 1), ("seq", 1)])
    assert not served(without("model"), new_backfill, [("created_at", 1), ("seq", 1)])
    reload = {"tenant": "t", "project": "p", "active": True}
    assert served(MEMORIES, reload, [("seq", 1)]) and not served(without("reload"), reload, [("seq", 1)])
    pinned = {"tenant": "t", "project": "p", "active": True, "pinned": True}
    recent = [("created_at", -1), ("id", -1)]
    assert served(MEMORIES, pinned, recent) and not served(without("recent_pinned"), pinned, recent)
    assert not served(MEMORIES, {"content": "x"}, None)  # a scan of the collection


def rec(i: int) -> MemoryRecord:
    return MemoryRecord(
        id=f"m{i}",
        tenant="t1",
        project="p",
        content=f"c{i}",
        sha256=f"s{i}",
        occurred_at=T0,
        created_at=T0,
        updated_at=T0,
        embedding=np.ones(4, np.float32) / 2,
        model="m4",
    )


@pytest.fixture
def strict():
    client = TxnClient(mongomock.MongoClient())
    store = MongoStore(StrictDatabase(client, client._mock.get_database("s"), INDEXES), transactions=True)
    store.migrate()
    yield store, client
    client.close()


def test_writes_run_in_transactions_that_survive_a_retry(strict):
    store, client = strict
    outcome = store.insert([rec(0), rec(1)], limit=1, dedupe_after=None, actor="x")
    assert client.retried >= 1  # the body ran twice; the outcome is the second run's alone
    assert outcome.inserted == ["m0", "m1"] and outcome.evicted == [] and outcome.active_after == 2
    assert store.projects_.find_one({"tenant": "t1", "name": "p"})["memories"] == 2


def test_an_operation_without_the_session_inside_a_transaction_fails(strict):
    store, client = strict
    with client.start_session() as session, pytest.raises(AssertionError, match="outside the transaction"):
        session.with_transaction(lambda s: store.projects_.find_one({"tenant": "t1", "name": "p"}))


def test_a_failed_transaction_leaves_nothing(strict):
    store, client = strict

    def body(session):
        store.memories.insert_one({"tenant": "t1", "id": "ghost"}, session=session)
        raise RuntimeError("boom")

    with client.start_session() as session, pytest.raises(RuntimeError):
        session.with_transaction(body)
    assert store.memories.find_one({"tenant": "t1", "id": "ghost"}) is None


def test_an_unindexed_query_fails_the_test_that_issued_it(strict):
    store, _ = strict
    with pytest.raises(UnindexedQuery):
        store.memories.find_one({"content": "c0"})
