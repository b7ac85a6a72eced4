"""The WAL stays bounded under writers that never pause (issue 31): past WAL_TRUNCATE_BYTES the
checkpointer runs a TRUNCATE checkpoint behind the write queue, which empties the file, and
gives up within its bound while a reader holds old frames. (scripts/wal_growth.py measures
the size under 16 writers; this checks the mechanism.)"""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime

from capsule.core.records import MemoryRecord
from capsule.store import sqlite_connection
from capsule.store.sqlite import SQLiteStore


def _records(start: int, count: int) -> list[MemoryRecord]:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        MemoryRecord(
            id=f"m-{n}",
            tenant="t",
            project="p",
            content=f"memory {n} " + "x" * 2000,
            sha256=f"s-{n}",
            occurred_at=now,
            created_at=now,
            updated_at=now,
        )
        for n in range(start, start + count)
    ]


def _store(tmp_path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "capsule.db")
    store.migrate()
    return store


def _write(store: SQLiteStore, start: int, count: int = 50) -> None:
    for n in range(start, start + count):
        store.insert(_records(n, 1), limit=100_000, dedupe_after=None, actor="t")


def test_a_checkpoint_past_the_bound_empties_the_wal(tmp_path, monkeypatch):
    store = _store(tmp_path)
    try:
        _write(store, 0)
        assert store.wal_bytes() > 0
        monkeypatch.setattr(sqlite_connection, "WAL_TRUNCATE_BYTES", 1)
        store._checkpoint()  # what the checkpointer's thread runs
        assert store.wal_bytes() == 0 and store.truncations == 1
        _write(store, 1000, 5)  # writers go on after it
        assert store.get("t", "m-1004") is not None
    finally:
        store.close()


def test_below_the_bound_only_a_passive_checkpoint_runs(tmp_path):
    store = _store(tmp_path)
    try:
        _write(store, 0, 10)
        before = store.wal_bytes()
        store._checkpoint()
        assert store.truncations == 0 and store.wal_bytes() == before > 0
    finally:
        store.close()


def test_a_reader_holding_old_frames_makes_it_give_up_within_its_bound(tmp_path):
    store = _store(tmp_path)
    reader = sqlite3.connect(store.path, check_same_thread=False)
    try:
        _write(store, 0, 10)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM memories").fetchone()  # a snapshot of the WAL as it is
        _write(store, 100, 10)
        assert store.truncate_wal(wait_s=0.05) is False  # the reader still needs the frames
        wrote = threading.Thread(target=_write, args=(store, 200, 5))
        wrote.start()
        wrote.join(30)
        assert not wrote.is_alive()  # the queue was let go: writers were not held
        reader.execute("COMMIT")
        assert store.truncate_wal(wait_s=0.05) is True and store.wal_bytes() == 0
    finally:
        reader.close()
        store.close()
