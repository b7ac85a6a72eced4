"""The SQLite store's write path: what a store runs, the write queue between processes, WAL
checkpoints off the request, the kept counts of active memories, and durability under kill -9."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from capsule.core.errors import Unavailable
from capsule.core.records import MemoryRecord
from capsule.embedders import HashingEmbedder
from capsule.store import sqlite_counts
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_connection import PAGE_SIZE, WAL_KEEP_BYTES
from tests.conftest import REPO


def record(tenant: str, project: str, n: int, clock) -> MemoryRecord:
    now = clock()
    return MemoryRecord(
        id=f"{project}-{n}",
        tenant=tenant,
        project=project,
        content=f"memory {n} of {project}",
        sha256=f"{project}-{n}",
        occurred_at=now,
        created_at=now,
        updated_at=now,
    )


def counted(store: SQLiteStore) -> dict[tuple[str, str], int]:
    rows = store._conn().execute("SELECT tenant, name, active FROM project_counts").fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def actual(store: SQLiteStore) -> dict[tuple[str, str], int]:
    rows = (
        store._conn()
        .execute("SELECT tenant, project, count(*) FROM memories WHERE deleted_at IS NULL GROUP BY tenant, project")
        .fetchall()
    )
    return {(r[0], r[1]): r[2] for r in rows}


def wait_until(condition, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ---- what one store runs ----------------------------------------------------------------


def test_a_store_never_counts_the_project_and_runs_one_write_transaction(service, sqlite_store):
    service.set_retention_limit("t", "p", {"retention_limit": 5})
    for n in range(3):
        service.store_memory("t", {"project": "p", "content": f"warm-up {n}"})
    statements: list[str] = []
    sqlite_store._conn().set_trace_callback(statements.append)
    service.store_memory("t", {"project": "p", "content": "the one traced store"})
    sqlite_store._conn().set_trace_callback(None)
    assert not [s for s in statements if "count(" in s.lower()], statements  # no scan of the project
    assert sum(s == "BEGIN IMMEDIATE" for s in statements) == 1, statements  # no embedding-cache write
    assert not [s for s in statements if "embedding_cache" in s], statements


def test_the_hashing_embedder_is_not_cached_and_a_model_is(sqlite_store, clock):
    from capsule.embedders.cached import CachedEmbedder

    calls = []

    class Model(HashingEmbedder):
        def embed(self, texts, *, kind="document"):
            calls.append(list(texts))
            return super().embed(texts, kind=kind)

    cheap = CachedEmbedder(HashingEmbedder(), sqlite_store, clock)
    cheap.embed(["a text"])
    assert sqlite_store._conn().execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == 0
    model = Model()
    model.worth_caching = True
    cached = CachedEmbedder(model, sqlite_store, clock)
    cached.embed(["a text"])
    cached.embed(["a text"])
    assert calls == [["a text"]]


def test_new_databases_use_8k_pages_and_the_checkpointer(sqlite_store):
    conn = sqlite_store._conn()
    assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 8192
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # no checkpoint inside a COMMIT
    assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == WAL_KEEP_BYTES  # the WAL cut back once reset


# ---- the kept counts ----------------------------------------------------------------------


def test_counts_follow_every_kind_of_change(service, sqlite_store, clock):
    service.set_retention_limit("t", "p", {"retention_limit": 4})
    ids = [service.store_memory("t", {"project": "p", "content": f"note {n}"}).memory.id for n in range(6)]
    service.store_memory("t", {"project": "q", "content": "another project"})
    service.store_memory("u", {"project": "p", "content": "another tenant"})
    assert counted(sqlite_store) == actual(sqlite_store) == {("t", "p"): 4, ("t", "q"): 1, ("u", "p"): 1}
    kept = [i for i in ids if i not in (ids[0], ids[1])]  # the two oldest were evicted
    service.forget("t", kept[0])
    assert counted(sqlite_store)[("t", "p")] == 3
    service.restore("t", kept[0])
    service.restore("t", ids[0])  # back over the limit: the count says so
    assert counted(sqlite_store) == actual(sqlite_store)
    service.forget("t", kept[1])
    clock.advance(days=400)
    sqlite_store.purge_forgotten(before=clock())
    service.feedback("t", kept[2], {"helpful": True})
    assert counted(sqlite_store) == actual(sqlite_store)
    sqlite_store._conn().execute("UPDATE memories SET tenant = 'v' WHERE tenant = 'u'")  # a tenant move
    sqlite_store._conn().execute("DELETE FROM memories WHERE project = 'q'")
    assert counted(sqlite_store) == actual(sqlite_store) == {("t", "p"): 4, ("v", "p"): 1}


def test_the_limit_is_kept_with_the_counts(service, sqlite_store):
    service.set_retention_limit("t", "p", {"retention_limit": 3})
    results = [service.store_memory("t", {"project": "p", "content": f"fact {n}"}) for n in range(5)]
    assert [len(r.evicted) for r in results] == [0, 0, 0, 1, 1]
    assert actual(sqlite_store)[("t", "p")] == 3


def test_counts_are_rebuilt_when_their_triggers_are_missing(service, sqlite_store):
    for n in range(3):
        service.store_memory("t", {"project": "p", "content": f"item {n}"})
    conn = sqlite_store._conn()
    for name in sqlite_counts.TRIGGERS:
        conn.execute(f"DROP TRIGGER {name}")  # as a migration that rebuilds the table would
    service.store_memory("t", {"project": "p", "content": "written while no trigger counted"})
    assert counted(sqlite_store)[("t", "p")] == 3
    sqlite_store.migrate()
    assert counted(sqlite_store) == actual(sqlite_store) == {("t", "p"): 4}
    service.store_memory("t", {"project": "p", "content": "counted again"})
    assert counted(sqlite_store)[("t", "p")] == 5


# ---- the write queue between processes ----------------------------------------------------

HOLDER = """
import sys
sys.path[:0] = [sys.argv[2]]
from capsule.store.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
with store._write() as conn:
    conn.execute("INSERT INTO job_state (name, state, updated_at) VALUES ('holder', 'x', 0)")
    print("holding", flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


def test_a_writer_waiting_on_another_process_is_woken_by_the_queue_not_the_busy_handler(sqlite_store, clock):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, sqlite_store.path, str(REPO / "layers")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        # SQLite's busy handler is off for this connection: reaching BEGIN IMMEDIATE while the
        # other process holds the database fails at once with "database is locked". The queue
        # lets it reach BEGIN only once the other has committed.
        done: list[object] = []
        queues = []

        def write() -> None:  # a thread of its own: its own connection and its own place in the queue
            sqlite_store._conn().execute("PRAGMA busy_timeout = 0")
            queues.append(getattr(sqlite_store._local, "write_lock", None))
            try:
                done.append(sqlite_store.insert([record("t", "p", 1, clock)], limit=10, dedupe_after=None, actor="t"))
            except Unavailable as exc:
                done.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        assert wait_until(lambda: (queues and queues[0] and queues[0].waits == 1) or done), done
        assert not done  # still waiting for the other process
        holder.stdin.write("\n")
        holder.stdin.flush()
        writer.join(30)
        assert holder.stdout.readline().strip() == "released"
        assert len(done) == 1 and not isinstance(done[0], Exception), done
        assert sqlite_store.get("t", "p-1").content == "memory 1 of p"
    finally:
        holder.kill()
        holder.wait(30)


def test_a_writer_gives_up_after_its_wait_and_the_lock_is_not_left_taken(tmp_path, clock):
    store = SQLiteStore(tmp_path / "capsule.db", busy_timeout_s=0.2)
    store.migrate()
    other = SQLiteStore(tmp_path / "capsule.db", busy_timeout_s=0.2)
    release, taken = threading.Event(), threading.Event()

    def hold() -> None:
        with other._write():
            taken.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(30)
        with pytest.raises(Unavailable, match="busy"):
            store.insert([record("t", "p", 1, clock)], limit=10, dedupe_after=None, actor="t")
    finally:
        release.set()
        holder.join(30)
    # The given-up wait ends (the holder let go) and lets go at once: the next write goes through.
    assert wait_until(lambda: _free(store))
    store.insert([record("t", "p", 2, clock)], limit=10, dedupe_after=None, actor="t")
    assert store.get("t", "p-2").id == "p-2"
    store.close()
    other.close()


def _free(store: SQLiteStore) -> bool:
    probe = SQLiteStore(store.path, busy_timeout_s=0.05)
    try:
        with probe._write():
            return True
    except Unavailable:
        return False
    finally:
        probe.close()


# ---- checkpoints --------------------------------------------------------------------------


def test_the_wal_is_checkpointed_by_the_checkpointer_thread(sqlite_store, clock, monkeypatch):
    monkeypatch.setattr(sqlite_store._checkpointer, "_every", 8)
    for n in range(8):
        sqlite_store.insert([record("t", "p", n, clock)], limit=100, dedupe_after=None, actor="t")
    assert wait_until(lambda: sqlite_store._checkpointer.runs >= 1)
    probe = sqlite3.connect(sqlite_store.path)
    busy, frames, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    probe.close()
    assert busy == 0 and frames == copied  # nothing left that the thread did not copy
    threads = [t.name for t in threading.enumerate()]
    assert "capsule-checkpoint" in threads
    sqlite_store.close()
    assert "capsule-checkpoint" not in [t.name for t in threading.enumerate()]


def test_a_bulk_insert_is_checkpointed_by_the_rows_it_wrote_not_its_one_commit(sqlite_store, clock):
    """A batch of EVERY_ROWS rows is one commit but megabytes of WAL: it wakes the checkpointer
    (counted in commits only, a 1M import's 100 commits left a WAL larger than the database)."""
    batch = [record("t", "p", n, clock) for n in range(sqlite_store._checkpointer._every_rows)]
    sqlite_store.insert_bulk(batch, limit=10 * len(batch), dedupe_after=None, actor="t")
    assert wait_until(lambda: sqlite_store._checkpointer.runs >= 1)
    probe = sqlite3.connect(sqlite_store.path)
    busy, frames, copied = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    probe.close()
    assert busy == 0 and frames == copied


# ---- durability: kill -9 while storing ------------------------------------------------------

STORER = """
import sys
sys.path[:0] = [sys.argv[2]]
from capsule.config import Settings
from capsule.runtime.service import build_service
from pathlib import Path
service = build_service(Settings(data_dir=Path(sys.argv[1]), embedder="hashing", retention_limit=150))
for i in range(100_000):
    result = service.store_memory("t", {"project": "p", "content": f"acknowledged write {i}"})
    print(result.memory.id, flush=True)  # acknowledged only once store_memory has returned
"""


@pytest.mark.parametrize("round_", range(3))
def test_every_acknowledged_store_survives_kill_9(tmp_path, round_):
    process = subprocess.Popen(
        [sys.executable, "-c", STORER, str(tmp_path), str(REPO / "layers")], stdout=subprocess.PIPE, text=True
    )
    acknowledged = []
    try:
        for line in process.stdout:
            acknowledged.append(line.strip())
            if len(acknowledged) >= 200 + 37 * round_:  # past the limit and past a checkpoint
                break
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
    acknowledged += [line.strip() for line in process.stdout.read().splitlines()]
    store = SQLiteStore(tmp_path / "capsule.db")
    try:
        assert store._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        kept = [store.get("t", mid, include_forgotten=True).id for mid in acknowledged]
        assert kept == acknowledged
        assert counted(store) == actual(store) == {("t", "p"): 150}
    finally:
        store.close()


# ---- the stored memory is returned without reading it back ---------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"occurred_at": "2025-03-04T05:06:07.891234+05:30", "path": "src/a.py", "explanation": "why"},
        {"pinned": True, "meta": {"tags": ["a", "b"], "session": "s1", "nested": {"x": [1, 2.5, None]}}},
        {"retention": "ephemeral", "ttl": 3600},
        {"retention": "permanent", "meta": {"author": "me"}},
        {"content": "mail me at someone@example.com about it"},
    ],
)
def test_a_store_answers_the_memory_a_get_reads(service, sqlite_store, extra):
    statements: list[str] = []
    sqlite_store._conn().set_trace_callback(statements.append)
    stored = service.store_memory("t", {"project": "p", "content": "a memory to read back", **extra})
    sqlite_store._conn().set_trace_callback(None)
    assert not [s for s in statements if s.startswith("SELECT id, tenant")], statements  # not read back
    read = service.get("t", stored.memory.id)
    assert stored.memory.model_dump() == read.memory.model_dump()
    assert stored.memory.model_dump_json() == read.memory.model_dump_json()
