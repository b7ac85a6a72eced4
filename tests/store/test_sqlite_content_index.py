"""The SQLite dedupe look-ups read the index keyed by the content hash's first 16 characters
(migration 11, ``memories_content``) and check the whole hash, tenant, project, creation time
and deletion on the row: a hash sharing only its prefix is no duplicate, and a database made
before the index finds its old rows through it once migrated."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

from capsule.core.records import MemoryRecord
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_schema import MIGRATIONS
from capsule.store.sqlite_transfer import SQLiteTransferStore

AT = datetime(2025, 1, 1, tzinfo=UTC)
PREFIX = "ab" * 8  # 16 characters: every hash below shares the index's key


def record(id: str, sha: str, *, tenant: str = "t", project: str = "p", at: datetime = AT) -> MemoryRecord:
    return MemoryRecord(
        id=id,
        tenant=tenant,
        project=project,
        content=f"text of {id}",
        sha256=sha,
        occurred_at=at,
        created_at=at,
        updated_at=at,
    )


def insert(store: SQLiteStore, *records: MemoryRecord, after: datetime | None = AT - timedelta(days=1)):
    return store.insert(list(records), limit=100, dedupe_after=after, actor="t")


def test_only_the_whole_hash_in_the_same_project_and_tenant_is_a_duplicate(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    store.migrate()
    insert(store, record("first", PREFIX + "0" * 48))
    outcome = insert(
        store,
        record("same-prefix", PREFIX + "1" * 48),
        record("other-project", PREFIX + "0" * 48, project="q"),
        record("other-tenant", PREFIX + "0" * 48, tenant="u"),
    )
    assert outcome.duplicates == {} and len(outcome.inserted) == 3
    assert insert(store, record("again", PREFIX + "0" * 48)).duplicates == {"again": "first"}
    assert insert(store, record("late", PREFIX + "0" * 48), after=AT + timedelta(days=1)).duplicates == {}
    store.close()


def test_a_forgotten_memory_is_no_duplicate(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    store.migrate()
    insert(store, record("gone", PREFIX + "2" * 48))
    store.forget("t", "gone", at=AT, actor="t", reason="test")
    assert insert(store, record("back", PREFIX + "2" * 48)).duplicates == {}
    store.close()


def test_existing_content_names_only_whole_hashes_of_active_rows_of_the_project(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    store.migrate()
    insert(store, record("a", PREFIX + "a" * 48), record("b", PREFIX + "b" * 48, project="q"), after=None)
    asked = [PREFIX + "a" * 48, PREFIX + "b" * 48, PREFIX + "c" * 48, *(f"{i:064x}" for i in range(700))]
    assert SQLiteTransferStore(store).existing_content("t", "p", asked) == {PREFIX + "a" * 48}
    store.close()


def test_a_database_from_before_the_index_finds_its_rows_once_migrated(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for number, script in enumerate(MIGRATIONS[:10], start=1):
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.execute(
        "INSERT INTO memories (id, tenant, project, content, sha256, occurred_at, created_at, updated_at) "
        f"VALUES ('old', 't', 'p', 'kept from before', '{PREFIX}{'9' * 48}', ?, ?, ?)",
        (AT.timestamp(),) * 3,
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    store.migrate()
    names = {r[0] for r in store._read("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "memories_content" in names and "memories_dedupe" not in names
    assert insert(store, record("new", PREFIX + "9" * 48)).duplicates == {"new": "old"}
    store.close()
