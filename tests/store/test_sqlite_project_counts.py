"""SQLite's kept project counts (sqlite_counts): equal to a recount after every kind of write,
and what ``SQLiteStore.projects`` answers without reading the memories (issue 32)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from capsule.core.clock import to_epoch
from capsule.core.records import MemoryRecord
from capsule.store import sqlite_counts
from capsule.store.sqlite import SQLiteStore

T0 = datetime(2026, 3, 1, tzinfo=UTC)
RECOUNT = (
    "SELECT tenant, project, sum(deleted_at IS NULL), sum(deleted_at IS NULL AND pinned = 1), "
    "sum(deleted_at IS NOT NULL) FROM memories GROUP BY tenant, project"
)


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "counts.db")
    s.migrate()
    yield s
    s.close()


def rec(i: int, *, project="p", tenant="t1", pinned=False) -> MemoryRecord:
    at = T0 + timedelta(minutes=i)
    return MemoryRecord(
        id=f"{tenant}-m{i}",
        tenant=tenant,
        project=project,
        content=f"memory {i}",
        sha256=f"s{i}",
        occurred_at=at,
        created_at=at,
        updated_at=at,
        pinned=pinned,
    )


def kept(store) -> dict[tuple[str, str], tuple[int, int, int]]:
    rows = store._conn().execute("SELECT tenant, name, active, pinned, forgotten FROM project_counts")
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def recount(store) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {(r[0], r[1]): tuple(r[2:]) for r in store._conn().execute(RECOUNT)}


def test_every_write_keeps_the_counts_equal_to_a_recount(store):
    for i in range(6):
        store.insert([rec(i, pinned=i == 0)], limit=4, dedupe_after=None, actor="x")  # evicts m1, m2
    again = replace(rec(5), id="again")  # m5's content again: a duplicate, not inserted
    assert store.insert([again, rec(9)], limit=4, dedupe_after=T0, actor="x").duplicates == {"again": "t1-m5"}
    store.insert_bulk([rec(i, project="q") for i in range(20, 30)], limit=100, dedupe_after=None, actor="x")
    store.forget("t1", "t1-m5", at=T0, actor="x", reason="r")
    store.forget("t1", "t1-m0", at=T0, actor="x", reason="r")  # a pinned one
    store.restore("t1", "t1-m0", at=T0, actor="x")
    store.set_pinned("t1", "t1-m9", True, at=T0, actor="x")
    store.set_pinned("t1", "t1-m9", True, at=T0, actor="x")  # already pinned
    store.set_pinned("t1", "t1-m0", False, at=T0, actor="x")
    store.forget("t1", "t1-m20", at=T0, actor="x", reason="r")
    assert kept(store) == recount(store)
    store.enforce_limit("t1", "p", limit=2, at=T0, actor="retention")
    store.merge_project("t1", "q", "p", at=T0 + timedelta(hours=1), actor="x")
    assert kept(store) == recount(store)
    store.purge_forgotten(before=T0 + timedelta(days=40))
    assert kept(store) == recount(store) and kept(store)[("t1", "p")][2] == 0


def test_projects_reads_the_kept_counts_not_the_memories(store):
    store.insert([rec(0, pinned=True), rec(1), rec(2)], limit=10, dedupe_after=None, actor="x")
    store.forget("t1", "t1-m1", at=T0 + timedelta(days=1), actor="x", reason="r")
    statements: list[str] = []
    store._conn().set_trace_callback(statements.append)
    [stats] = store.projects("t1")
    store._conn().set_trace_callback(None)
    assert (stats.memories, stats.pinned, stats.forgotten) == (2, 1, 1)
    assert stats.last_activity == T0 + timedelta(days=1)  # the forget's stamp
    assert not [s for s in statements if "memories" in s.split("FROM", 1)[-1]], statements


def test_a_later_stamp_is_the_projects_activity(store):
    store.insert([rec(0), rec(1)], limit=10, dedupe_after=None, actor="x")
    later = T0 + timedelta(days=2)
    with store._write() as conn:  # as an update of the memory stamps it
        conn.execute("UPDATE memories SET updated_at = ? WHERE id = 't1-m0'", (to_epoch(later),))
    assert store.projects("t1")[0].last_activity == later
    with store._write() as conn:  # an older stamp written back (an import) makes it no older
        conn.execute("UPDATE memories SET updated_at = ? WHERE id = 't1-m0'", (to_epoch(T0),))
    assert store.projects("t1")[0].last_activity == later


def test_a_project_without_memories_answers_its_own_stamp(store):
    store.set_retention_limit("t1", "empty", 5, at=T0)
    [stats] = store.projects("t1")
    assert (stats.project, stats.memories, stats.pinned, stats.forgotten) == ("empty", 0, 0, 0)
    assert stats.last_activity == T0 and stats.retention_limit == 5


def test_a_table_of_an_older_shape_is_made_again_and_recounted(store):
    store.insert([rec(0, pinned=True), rec(1)], limit=10, dedupe_after=None, actor="x")
    store.forget("t1", "t1-m1", at=T0, actor="x", reason="r")
    with store._write() as conn:  # the first version: active counts only, three triggers
        for name in sqlite_counts.TRIGGERS:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE project_counts")
        conn.execute(
            "CREATE TABLE project_counts (tenant TEXT NOT NULL, name TEXT NOT NULL, active INTEGER NOT NULL, "
            "PRIMARY KEY (tenant, name)) WITHOUT ROWID"
        )
        conn.execute("INSERT INTO project_counts VALUES ('t1', 'p', 1)")
        conn.execute("CREATE TRIGGER memories_count_insert AFTER INSERT ON memories BEGIN SELECT 1; END")
    store.migrate()
    assert kept(store) == recount(store) == {("t1", "p"): (1, 1, 1)}
    store.insert([rec(2)], limit=10, dedupe_after=None, actor="x")
    assert kept(store)[("t1", "p")] == (2, 1, 1)


def test_one_projects_stats_read_alone(store):
    for n, project in enumerate(("p", "q", "r")):
        store.insert(
            [rec(2 * n, project=project), rec(2 * n + 1, project=project)], limit=10, dedupe_after=None, actor="x"
        )
    [stats] = store.projects("t1", only="q")
    assert (stats.project, stats.memories) == ("q", 2)
    assert store.projects("t1", only="none") == [] and len(store.projects("t1")) == 3
