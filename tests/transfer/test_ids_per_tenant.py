"""Two tenants of one store hold the same memory, solution and application ids, each its own
(issue 31): on SQLite as on MongoDB an id is unique per (tenant, id) (SQLite: migrations 14
and 15; MongoDB: learning schema 2 for solutions), so an import or a sync keeps every id as
sent, and what one tenant does to its row never touches the other's."""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from test_roundtrip import export_text, populate

from capsule.core.errors import Conflict, NotFound
from capsule.sync import exchange
from capsule.transfer import import_lines

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "learning"))
from learning_helpers import fixpack  # noqa: E402


def _memory_ids(lines: list[str]) -> list[str]:
    return [row["id"] for row in map(json.loads, lines) if row["kind"] == "memory"]


def test_two_tenants_hold_the_same_ids_with_no_cross_talk(make):
    d = make()
    ids = populate(d)
    exported = export_text(d)
    copied = import_lines(d.sources, "v", exported)
    assert copied.refused_total == 0, copied.explanation
    # Every id is unique per tenant on both backends: none is renamed, none said to be held.
    assert "held by another tenant" not in copied.explanation, copied.explanation
    assert sorted(_memory_ids(export_text(d, tenant="v"))) == sorted(_memory_ids(exported))  # kept as sent

    m = ids["m3"]
    theirs = d.memories.get("t", m).memory
    assert d.memories.get("v", m).memory.content == theirs.content
    history_t = len(d.memories.history.history("t", m).versions)

    d.memories.history.update("v", m, {"content": "v's own words about redis"})
    d.memories.feedback("v", m, {"helpful": False, "context": "v's vote"})
    d.memories.pin("v", m)
    assert d.memories.get("v", m).memory.content == "v's own words about redis"
    assert len(d.memories.history.history("v", m).versions) == history_t + 1
    kept = d.memories.get("t", m).memory
    assert (kept.content, kept.pinned, kept.helpful, kept.unhelpful) == (
        theirs.content,
        theirs.pinned,
        theirs.helpful,
        theirs.unhelpful,
    )
    assert len(d.memories.history.history("t", m).versions) == history_t

    d.memories.forget("v", m, {"reason": "v forgets"})
    with pytest.raises(NotFound):
        d.memories.get("v", m)
    assert d.memories.get("t", m).memory.content == theirs.content
    d.memories.restore("v", m)
    assert d.memories.get("v", m).memory.content == "v's own words about redis"
    votes = [json.loads(line) for line in export_text(d, tenant="t") if '"kind":"feedback"' in line]
    assert all(v.get("context") != "v's vote" for v in votes)

    # a sync row of t's memory applied into v changes v's copy only, under the same id
    page = exchange.changes(d.memories, "t", "app", after=None, limit=100)
    row = next(i for i in page.items if i["memory"]["id"] == m)
    row = json.loads(json.dumps(row, default=str))
    row["memory"]["content"] = "synced into v"
    row["memory"]["updated_at"] = "2100-01-01T00:00:00+00:00"
    row["votes"] = []
    applied = exchange.apply(d.memories, "v", {"project": "app", "items": [row]})
    assert applied.applied == 1 and [c.id for c in applied.conflicts] in ([], [m]), applied
    assert d.memories.get("v", m).memory.content == "synced into v"
    assert d.memories.get("t", m).memory.content == theirs.content
    again = exchange.changes(d.memories, "v", "app", after=None, limit=100)
    assert m in {i["memory"]["id"] for i in again.items}


def _mover(d):
    if type(d.store).__name__ == "SQLiteStore":
        from capsule.store.sqlite_tenants import SQLiteTenantMover

        return SQLiteTenantMover(d.store)
    from capsule.store.mongo_tenants import MongoTenantMover

    return MongoTenantMover(d.store)


def test_a_tenant_merge_refuses_two_rows_of_one_id(make):
    """Merging a tenant into one that holds the same id would leave one tenant with two rows of
    it: the operator's command says so, naming the ids, and changes nothing (on MongoDB too,
    where the move is batches: the check comes before the first)."""
    d = make()
    populate(d)
    exported = export_text(d)
    import_lines(d.sources, "v", exported)
    mover = _mover(d)
    before = {tenant: mover.count(tenant) for tenant in ("t", "v")}
    with pytest.raises(Conflict, match="both hold memory id") as refused:
        mover.move("v", "t")
    named = str(refused.value).split("id(s) ")[1].split(":")[0].split(", ")
    assert 1 <= len(named) <= 5 and set(named) <= set(_memory_ids(exported)), refused.value
    assert {tenant: mover.count(tenant) for tenant in ("t", "v")} == before


def test_a_tenant_merge_refuses_two_solutions_of_one_id(make):
    d = make()
    d.memories.store_memory("t", {"project": "app", "content": "t's memory"})
    d.memories.store_memory("v", {"project": "app", "content": "v's memory"})
    for tenant in ("t", "v"):
        d.learning.import_solution(tenant, fixpack(f"{tenant}'s fix"), solution_id="sol-shared")
    mover = _mover(d)
    before = {tenant: mover.count(tenant) for tenant in ("t", "v")}
    with pytest.raises(Conflict, match="both hold solution id\\(s\\) sol-shared"):
        mover.move("v", "t")
    assert {tenant: mover.count(tenant) for tenant in ("t", "v")} == before
    assert d.learning.store.get_solution("v", "sol-shared").title == "v's fix"


def _rows(lines: list[str], kind: str) -> list[dict]:
    return [row for row in map(json.loads, lines) if row["kind"] == kind]


def test_two_tenants_hold_the_same_solution_ids_with_no_cross_talk(make):
    """Import, show, apply, update, delete and export of one solution id in two tenants: each
    tenant's own; and a create of an id the other tenant holds is a plain create."""
    d = make()
    populate(d)
    exported = export_text(d)
    (solution,) = _rows(exported, "solution")
    (application,) = _rows(exported, "application")
    sid = solution["id"]

    copied = import_lines(d.sources, "v", exported)
    assert copied.refused_total == 0 and "held by another tenant" not in copied.explanation, copied.explanation
    assert (copied.imported.get("solution"), copied.imported.get("application"), copied.imported.get("link")) == (
        1,
        1,
        1,
    ), copied
    mine = export_text(d, tenant="v")
    assert [r["id"] for r in _rows(mine, "solution")] == [sid]  # kept as sent
    assert [(r["id"], r["solution_id"]) for r in _rows(mine, "application")] == [(application["id"], sid)]
    assert [r["target_id"] for r in _rows(mine, "link") if r["target_kind"] == "solution"] == [sid]
    again = import_lines(d.sources, "v", exported)  # a second import writes nothing
    assert not any(again.imported.values()) and again.skipped.get("solution") == 1, again

    store = d.learning.store
    theirs = store.get_solution("t", sid)
    assert d.learning.get_solution("v", sid).solution.title == theirs.title
    d.learning.solution_apply("v", sid, {"success": False, "project": "app"})
    d.learning.update_solution("v", sid, fixpack("v's own title"))
    kept = store.get_solution("t", sid)
    assert (kept.title, kept.success, kept.failure) == (theirs.title, theirs.success, theirs.failure)
    ours = store.get_solution("v", sid)
    assert (ours.title, ours.failure) == ("v's own title", theirs.failure + 1)
    assert len(store.applications("t", limit=10)) == 1 and len(store.applications("v", limit=10)) == 2

    d.learning.delete_solution("v", sid)
    with pytest.raises(NotFound):
        d.learning.get_solution("v", sid)
    assert store.get_solution("t", sid).title == theirs.title
    theirs_now = export_text(d, tenant="t")
    assert [r["id"] for r in _rows(theirs_now, "solution")] == [sid]
    assert [r["id"] for r in _rows(theirs_now, "application")] == [application["id"]]
    assert [r["target_id"] for r in _rows(theirs_now, "link") if r["target_kind"] == "solution"] == [sid]
    assert _rows(export_text(d, tenant="v"), "application") == []

    # a create of an id the other tenant holds: a new solution, not a conflict
    created = d.learning.import_solution("v", fixpack("v's second"), solution_id=sid)
    assert created.created and created.solution.id == sid
    assert store.get_solution("t", sid).title == theirs.title
    with pytest.raises(Conflict):  # within one tenant an id is still one row
        store.insert_solution(store.get_solution("v", sid))


@pytest.mark.parametrize("make", ["sqlite"], indirect=True)
def test_migration_14_rebuilds_the_memories_table_keyed_by_tenant_and_id(make, tmp_path):
    """A store made before migration 14 (ids unique per store) keeps every row, its seq, the
    AUTOINCREMENT counter, every index and the project counts; after it two tenants may hold
    one id and one tenant may not hold it twice."""
    from capsule.config import Settings
    from capsule.store import sqlite_counts
    from capsule.store.sqlite import SQLiteStore
    from capsule.store.sqlite_schema import MIGRATIONS

    deployment = type(make())  # this directory's Deployment, on a store of the test's own below

    path = tmp_path / "old.db"
    old = SQLiteStore(path)
    with old._write() as conn:  # the schema as migration 13 left it
        for number, script in enumerate(MIGRATIONS[:13], start=1):
            for statement in filter(str.strip, script.split(";")):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
    old.close()
    # the store's own migrate from 13: first stop at 13 (the rows a version-13 store held)
    store = SQLiteStore(path)
    later = MIGRATIONS[13:]  # 14 and any after it
    del MIGRATIONS[13:]
    try:
        store.migrate()
        d = deployment(store, Settings(data_dir=tmp_path, embedder="hashing"))
        ids = populate(d)
        with pytest.raises(Conflict), store._write() as conn:  # ids unique per store, before 14
            conn.execute("UPDATE memories SET id = ? WHERE id = ?", (ids["m3"], ids["pinned"]))
        with store._write() as conn:  # the last row purged: the counter stays above every seq left
            conn.execute("DELETE FROM memories WHERE seq = (SELECT max(seq) FROM memories)")
        with store._snapshot() as conn:
            rows = conn.execute("SELECT * FROM memories ORDER BY seq").fetchall()
            sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone()[0]
            indexes = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories' AND sql IS NOT NULL"
                )
            }
            counts = conn.execute("SELECT tenant, name, active FROM project_counts ORDER BY tenant, name").fetchall()
        assert sequence > rows[-1]["seq"]
        store.close()
    finally:
        MIGRATIONS.extend(later)

    store = SQLiteStore(path)
    store.migrate()
    with store._snapshot() as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        after = conn.execute("SELECT * FROM memories ORDER BY seq").fetchall()
        assert [tuple(r) for r in after] == [tuple(r) for r in rows]
        assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone()[0] == sequence
        assert conn.execute("SELECT count(*) FROM sqlite_sequence WHERE name LIKE 'memories%'").fetchone()[0] == 1
        now = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories' AND sql IS NOT NULL"
            )
        }
        assert now == indexes | {"memories_id"}
        assert "UNIQUE" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
        assert {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memories'")
        } == set(sqlite_counts.TRIGGERS)
        counted = conn.execute("SELECT tenant, name, active FROM project_counts ORDER BY tenant, name").fetchall()
    assert [tuple(c) for c in counted] == [tuple(c) for c in counts]
    with store._write() as conn:
        conn.execute("UPDATE memories SET tenant = 'w' WHERE id = ?", (ids["m3"],))
        conn.execute("UPDATE memories SET id = ? WHERE id = ?", (ids["m3"], ids["pinned"]))  # another tenant: fine
        with pytest.raises(sqlite3.IntegrityError):  # one tenant: still one row per id
            conn.execute("UPDATE memories SET id = ? WHERE id = ?", (ids["m3"], ids["m1"]))
    store.close()


@pytest.mark.parametrize("make", ["sqlite"], indirect=True)
def test_migration_15_rebuilds_the_solution_tables_keyed_by_tenant_and_id(make, tmp_path):
    """A store made before migration 15 (solution and application ids unique per store) keeps
    every row, its seq, the AUTOINCREMENT counters and every index; after it two tenants may
    hold one id and one tenant may not hold it twice."""
    from capsule.config import Settings
    from capsule.store.sqlite import SQLiteStore
    from capsule.store.sqlite_schema import MIGRATIONS

    deployment = type(make())
    tables = {"solutions": "solutions_id", "solution_applications": "applications_id"}

    def state(conn):
        return {
            t: (
                [tuple(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY seq")],
                conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (t,)).fetchone()[0],
                {
                    r[0]
                    for r in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (t,)
                    )
                },
            )
            for t in tables
        }

    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    later = MIGRATIONS[14:]  # 15 and any after it
    del MIGRATIONS[14:]
    assert later[0].__name__ == "solution_ids_per_tenant"
    try:
        store.migrate()  # the schema as migration 14 left it
        d = deployment(store, Settings(data_dir=tmp_path, embedder="hashing"))
        populate(d)
        solution = d.learning.create_solution("t", fixpack("a second fix")).solution.id
        d.learning.solution_apply("t", solution, {"success": False})
        with pytest.raises(Conflict):  # ids unique per store, before 15
            d.learning.store.insert_solution(replace(d.learning.store.get_solution("t", solution), tenant="v"))
        with store._write() as conn:  # the last application purged: its counter stays above every seq left
            conn.execute("DELETE FROM solution_applications WHERE seq = (SELECT max(seq) FROM solution_applications)")
        with store._snapshot() as conn:
            before = state(conn)
        rows, counter, _ = before["solution_applications"]
        assert rows and counter > rows[-1][0]
        store.close()
    finally:
        MIGRATIONS.extend(later)

    store = SQLiteStore(path)
    store.migrate()
    with store._snapshot() as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) >= 15
        after = state(conn)
        for table, key in tables.items():
            rows, counter, indexes = before[table]
            assert after[table] == (rows, counter, indexes | {key}), table
            assert "UNIQUE" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
            assert (
                conn.execute("SELECT count(*) FROM sqlite_sequence WHERE name LIKE ?", (f"{table}%",)).fetchone()[0]
                == 1
            )
    with store._write() as conn:
        for table in tables:
            rest = ", ".join(
                r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] not in ("seq", "id", "tenant")
            )
            copy = (
                f"INSERT INTO {table} (id, tenant, {rest}) SELECT id, ?, {rest} FROM {table} WHERE tenant = 't' LIMIT 1"
            )
            conn.execute(copy, ("w",))  # another tenant: fine
            with pytest.raises(sqlite3.IntegrityError):  # one tenant: still one row per id
                conn.execute(copy, ("t",))
    store.close()


def test_mongo_learning_schema_2_keys_existing_solutions_by_tenant_and_id(tmp_path):
    """Documents written before learning schema 2 (``_id`` the bare id, no ``id``) keep their
    ``_id``, get ``id``, and are found, applied and exported by it; another tenant may then hold
    the same ids; the indexes keyed on ``_id`` are replaced by the (tenant, id) ones."""
    mongomock = pytest.importorskip("mongomock")
    from pymongo import ASCENDING, DESCENDING

    from capsule.store import mongo_learning
    from capsule.store.mongo_learning import MongoLearningStore

    db = mongomock.MongoClient().get_database("old")
    solutions, applications = db["solutions"], db["solution_applications"]
    solutions.create_index([("tenant", ASCENDING), ("created_at", DESCENDING), ("_id", DESCENDING)])
    applications.create_index([("tenant", ASCENDING), ("_id", ASCENDING)], name="applications_export")
    solutions.insert_one(
        {
            "_id": "sol-1",
            "tenant": "t",
            "title": "old fix",
            "category": "network",
            "body": {"title": "old fix"},
            "embeddings": None,
            "signatures": 0,
            "model": None,
            "success": 2,
            "failure": 0,
            "created_at": 1.0,
            "updated_at": 1.0,
        }
    )
    applications.insert_many(
        [
            {
                "_id": f"app-{n}",
                "tenant": "t",
                "solution_id": "sol-1",
                "success": True,
                "project": None,
                "error": None,
                "context": None,
                "at": float(n),
            }
            for n in range(3)
        ]
    )
    db["meta"].insert_one({"_id": "learning_schema", "version": 1})

    store = MongoLearningStore(db)
    store.migrate()
    assert db["meta"].find_one({"_id": "learning_schema"})["version"] == mongo_learning.SCHEMA_VERSION == 2
    assert [(d["_id"], d["id"]) for d in solutions.find()] == [("sol-1", "sol-1")]
    assert sorted(d["id"] for d in applications.find()) == ["app-0", "app-1", "app-2"]
    assert solutions.index_information()["solution_id"]["unique"]
    assert applications.index_information()["application_id"]["unique"]
    assert "tenant_1_created_at_-1__id_-1" not in solutions.index_information()
    assert "applications_export" not in applications.index_information()

    assert store.get_solution("t", "sol-1").success == 2
    with pytest.raises(NotFound):
        store.get_solution("v", "sol-1")
    kept = store.get_solution("t", "sol-1")
    store.insert_solution(replace(kept, tenant="v", title="v's fix", success=0))  # another tenant: fine
    with pytest.raises(Conflict):
        store.insert_solution(kept)  # the same tenant: still one
    from capsule.core.learning_records import ApplicationRecord

    store.record_application(
        ApplicationRecord(id="app-0", tenant="v", solution_id="sol-1", success=False, at=kept.created_at)
    )
    assert (store.get_solution("t", "sol-1").failure, store.get_solution("v", "sol-1").failure) == (0, 1)
    assert [a.id for a in store.applications("t", limit=10)] == ["app-2", "app-1", "app-0"]
    assert [a.id for a in store.applications("v", limit=10)] == ["app-0"]
    store.delete_solution("v", "sol-1")
    assert store.get_solution("t", "sol-1").title == "old fix" and applications.count_documents({"tenant": "t"}) == 3
    store.migrate()  # again: nothing to do
    assert solutions.count_documents({}) == 1
