"""Each operation's SQL work is flat in the data's size (issue 32): the same operations on a
project of 150 memories and on one of 1,500 (beside another tenant's), counted in SQLite
virtual-machine instructions (``set_progress_handler``), not in time, so the count is the same
on any machine and under any load. A statement that reads a range growing with the project
(``SQLiteStore.projects`` grouping the tenant's memories did: every restore, retention run and
export page) runs ten times the instructions on the larger store.

test_query_plans finds scans by their plan; this finds the ranges a plan calls a SEARCH.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.core.records import MemoryRecord
from capsule.core.text import sha256
from capsule.embedders import HashingEmbedder
from capsule.runtime.learning import build_jobs, build_learning
from capsule.service.memory_service import MemoryService
from capsule.store import sqlite_connection
from capsule.store.sides import transfer_store
from capsule.store.sqlite import SQLiteStore
from capsule.transfer.export import Sources, export_page

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SMALL, LARGE = 150, 1500
STEP = 10  # instructions per progress-handler call
# The largest ratio of a large store's count to a small one's: a deeper B-tree or a larger
# page of rows moves it a little; reading a range ten times as long moves it tenfold.
FLAT = 1.5


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return 0  # go on


def seeded(folder, size: int) -> SQLiteStore:
    store = SQLiteStore(folder / f"flat-{size}.db")
    store.migrate()
    embedder = HashingEmbedder()
    for tenant in ("t", "other"):
        texts = [f"{tenant} memory {i} about the lock timeout and retry number {i % 17}" for i in range(size)]
        vectors = embedder.embed(texts)
        store.insert_bulk(
            [
                MemoryRecord(
                    id=f"{tenant}-{i:05d}",
                    tenant=tenant,
                    project="p",
                    content=text,
                    sha256=sha256(text),
                    occurred_at=T0 + timedelta(minutes=i),
                    created_at=T0 + timedelta(minutes=i),
                    updated_at=T0 + timedelta(minutes=i),
                    embedding=vectors[i],
                    model=embedder.model_id,
                    meta={"type": "error"} if i % 10 == 0 else {},
                )
                for i, text in enumerate(texts)
            ],
            limit=1_000_000,
            dedupe_after=None,
            actor="seed",
        )
        for i in range(0, size, 10):  # forgotten ones, as a used store holds
            store.forget(tenant, f"{tenant}-{i:05d}", at=T0 + timedelta(days=1), actor="seed", reason="seed")
    store._conn().execute("ANALYZE")
    return store


def costs(store: SQLiteStore, folder) -> dict[str, int]:
    """Each operation's instructions, its second run counted (the first prepares statements)."""
    clock = FrozenClock(T0 + timedelta(days=2))
    settings = Settings(data_dir=folder, embedder="hashing", retention_limit=100_000)
    service = MemoryService(store, HashingEmbedder(), clock=clock, settings=settings)
    learning = build_learning(service)
    jobs = build_jobs(service, learning)
    sources = Sources(service.store, learning.store, transfer_store(service.store))
    ids = iter(f"t-{i:05d}" for i in range(3, SMALL, 10))
    ops = {
        "store": lambda k: service.store_memory("t", {"project": "p", "content": f"a new decision {k}"}),
        "ingest": lambda k: service.ingest(
            "t",
            {
                "project": "p",
                "text": "\n\n".join(
                    f"Part {c} of document {k}: " + "the retry waits for the lock. " * 60 for c in range(10)
                ),
            },
        ),
        "get": lambda k: service.get("t", next(ids)),
        "list page": lambda k: service.list_memories("t", {"project": "p", "limit": 20}),
        "pin": lambda k: service.pin("t", next(ids), True),
        "feedback": lambda k: service.feedback("t", next(ids), {"helpful": True}),
        "update": lambda k: service.history.update("t", next(ids), {"content": f"a revised note {k}"}),
        "forget and restore": lambda k: service.restore("t", service.forget("t", next(ids)).memory.id),
        "export page": lambda k: export_page(sources, "t", "p", None, max_bytes=20_000, page=20),
        "retention run": lambda k: jobs.run("retention"),
    }
    counter = Counter()
    original = sqlite_connection.SQLiteConnections._conn

    def counted(self):
        conn = original(self)
        conn.set_progress_handler(counter, STEP)
        return conn

    out = {}
    sqlite_connection.SQLiteConnections._conn = counted
    try:
        for name, op in ops.items():
            op(0)
            counter.calls = 0
            op(1)
            out[name] = counter.calls
    finally:
        sqlite_connection.SQLiteConnections._conn = original
        for conn in store._all:
            conn.set_progress_handler(None, 0)
    return out


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flat")
    out = {}
    for size in (SMALL, LARGE):
        store = seeded(folder, size)
        try:
            out[size] = costs(store, folder)
        finally:
            store.close()
    return out


def test_each_operations_sql_work_is_flat_in_the_projects_size(measured):
    small, large = measured[SMALL], measured[LARGE]
    assert all(small.values()), small  # every operation was counted
    grew = {
        name: f"{small[name] * STEP:,} -> {large[name] * STEP:,} instructions"
        for name in small
        if large[name] > FLAT * small[name] + 2
    }
    assert not grew, f"SQL work that grows with the data ({SMALL} -> {LARGE} memories): {grew}"


def test_the_ops_bench_seeds_apart_and_once(tmp_path):
    """``capsule bench --ops`` measures each size in a process that did not seed it: the same
    1M operations measured in the process that had just bulk-seeded the file cost 1.2-2.9x
    what they cost in one that had not, with the same read syscalls each (get 0.149 vs 0.054 ms
    CPU; bench-results/bench-ops-1k-1m.json's note). With ``--workdir`` the seed is kept and
    copied by later runs, so a million memories are seeded once."""
    import os

    from capsule_cli import bench_ops

    seeds = tmp_path / "seeds"
    first = bench_ops.seed(tmp_path / "a.db", 50, 1, seeds)
    assert first["seeded_by_pid"] != os.getpid() and not list(seeds.glob("*.part*"))
    kept = seeds / "seed-50-1.db"
    made = kept.stat().st_mtime_ns
    second = bench_ops.seed(tmp_path / "b.db", 50, 1, seeds)
    assert kept.stat().st_mtime_ns == made and second["seeded_by_pid"] == first["seeded_by_pid"]
    assert (tmp_path / "b.db").read_bytes() == kept.read_bytes()
    store = SQLiteStore(tmp_path / "b.db")
    try:
        assert store.get("bench", "m0000049").project == "bench"
    finally:
        store.close()
