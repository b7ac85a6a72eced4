"""The project counters: kept by every write, read instead of counting the memories."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")

from capsule.core.records import MemoryRecord  # noqa: E402
from capsule.store import mongo_counters as counters  # noqa: E402
from capsule.store.mongo import MongoStore  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=UTC)


class NoReads:
    """Stands in for the memories collection where nothing may read it."""

    def __getattr__(self, name):
        raise AssertionError(f"memories.{name} was called")


@pytest.fixture
def store():
    client = mongomock.MongoClient()
    s = MongoStore(client.get_database("counters"), transactions=False)
    s.migrate()
    yield s
    client.close()


def rec(i: int, *, project="p", pinned=False) -> MemoryRecord:
    at = T0 + timedelta(minutes=i)
    return MemoryRecord(
        id=f"m{i}",
        tenant="t1",
        project=project,
        content=f"memory {i}",
        sha256=f"s{i}",
        occurred_at=at,
        created_at=at,
        updated_at=at,
        pinned=pinned,
        embedding=np.ones(4, np.float32) / 2,
        model="m4",
    )


def stored(store, project="p"):
    doc = store.projects_.find_one({"tenant": "t1", "name": project})
    return {name: doc[name] for name in counters.COUNTERS}


def test_every_write_keeps_the_counters_equal_to_a_recount(store):
    for i in range(6):
        store.insert([rec(i, pinned=i == 0)], limit=4, dedupe_after=None, actor="x")  # evicts m1, m2
    again = replace(rec(5), id="again")  # m5's content again: a duplicate, not inserted
    assert store.insert([again, rec(9)], limit=4, dedupe_after=T0, actor="x").duplicates == {"again": "m5"}
    store.forget("t1", "m5", at=T0, actor="x", reason="r")
    store.forget("t1", "m0", at=T0, actor="x", reason="r")  # a pinned one
    store.restore("t1", "m0", at=T0, actor="x")
    store.set_pinned("t1", "m9", True, at=T0, actor="x")
    assert store.set_pinned("t1", "m9", True, at=T0, actor="x").pinned  # already pinned: no change, no count
    store.set_pinned("t1", "m0", False, at=T0, actor="x")
    store.enforce_limit("t1", "p", limit=2, at=T0, actor="retention")
    store.purge_forgotten(before=T0 + timedelta(days=40))
    assert stored(store) == counters.count(store.memories, "t1", "p")
    assert stored(store)["memories"] == 2


def test_projects_and_the_retention_check_read_no_memories(store):
    store.insert([rec(0, pinned=True), rec(1)], limit=10, dedupe_after=None, actor="x")
    store.forget("t1", "m1", at=T0, actor="x", reason="r")
    store.memories = NoReads()
    [stats] = store.projects("t1")
    assert (stats.memories, stats.pinned, stats.forgotten) == (1, 1, 1)
    assert store.enforce_limit("t1", "p", limit=5, at=T0, actor="retention") == []


def test_a_project_from_before_the_counters_is_counted_then_counted_on_its_next_write(store):
    store.insert([rec(0), rec(1, pinned=True)], limit=10, dedupe_after=None, actor="x")
    store.projects_.update_one({"name": "p"}, {"$unset": dict.fromkeys(counters.COUNTERS, "")})
    store.forget("t1", "m0", at=T0, actor="x", reason="r")  # no half-made counters from here
    assert not counters.counted(store.projects_.find_one({"name": "p"}))
    [stats] = store.projects("t1")
    assert (stats.memories, stats.pinned, stats.forgotten) == (1, 1, 1)
    store.insert([rec(2)], limit=10, dedupe_after=None, actor="x")
    assert stored(store) == {"memories": 2, "pinned": 1, "forgotten": 1}
