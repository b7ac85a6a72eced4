"""SQLite's bulk insert (``insert_bulk``, capsule.store.sqlite_bulk) writes the rows the
row-by-row insert writes: the same values for every column (sign bits made in one pass,
keyword hashes a word at a time), the same dedupe and eviction, and the connection's page
cache put back afterwards. The contract suite runs ``insert_bulk`` on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.records import MemoryRecord
from capsule.search import terms
from capsule.store import sqlite_bulk
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_rows import record_params

BASE = datetime(2025, 1, 1, tzinfo=UTC)
TEXTS = [
    "Fix ECONNREFUSED in getUserById (HTTP 503) on redis.railway.internal",
    "the cat and the dog went to the market and bought apples",
    "SQLSTATE 40001 serialization_failure retry; see docs/retry-policy.md",
    "",
    "a",
    "de-stress before the deploy: don't",
    "x" * 300,
    "camelCase snake_case kebab-case 42 007",
]


def rows(count: int, dim: int = 96, project: str = "p", sha=lambda i: f"{i:064x}") -> list[MemoryRecord]:
    rng = np.random.default_rng(count)
    out = []
    for i in range(count):
        at = BASE + timedelta(seconds=i)
        vector = None if i % 7 == 3 else rng.standard_normal(dim if i % 11 != 5 else 32).astype(np.float32)
        meta = {"component": "api", "session": "s1", "author": "ann"} if i % 2 else {}
        out.append(
            MemoryRecord(
                id=f"m{i:05d}",
                tenant="t",
                project=project,
                content=TEXTS[i % len(TEXTS)] + f" {i}",
                sha256=sha(i),
                occurred_at=at,
                created_at=at,
                updated_at=at,
                embedding=vector,
                model=None if vector is None else "m",
                meta=meta,
                pinned=i % 5 == 0,
            )
        )
    return out


def test_term_hashes_made_a_word_at_a_time_are_the_tokens_hashes():
    for text in [*TEXTS, "Went to GET /api/v2/users?id=3 & HTTP 404 then ERR_TIMEOUT 5000 ms"]:
        assert terms.encode(text) == terms.hashes(text).astype("<i8").tobytes()


def test_bulk_params_are_the_row_by_row_params():
    records = rows(200)
    assert sqlite_bulk.bulk_params(records) == [record_params(r) for r in records]


def columns(store: SQLiteStore) -> list[tuple]:
    conn = store._conn()
    names = [r[1] for r in conn.execute("PRAGMA table_info(memories)") if r[1] not in ("seq",)]
    return [tuple(row) for row in conn.execute(f"SELECT {', '.join(names)} FROM memories ORDER BY id")]


@pytest.mark.parametrize("dedupe", [False, True])
def test_the_stored_rows_dedupe_and_eviction_are_those_of_insert(tmp_path, dedupe):
    same_hash = lambda i: f"{i % 40:064x}"  # noqa: E731  repeats within a batch and across batches
    stores = {name: SQLiteStore(tmp_path / f"{name}.db") for name in ("rows", "bulk")}
    outcomes = {}
    try:
        for name, store in stores.items():
            store.migrate()
            write = store.insert if name == "rows" else store.insert_bulk
            after = BASE - timedelta(days=1) if dedupe else None
            first = write(rows(120, sha=same_hash), limit=90, dedupe_after=after, actor="x")
            more = [r for r in rows(160, sha=same_hash)[120:]]
            second = write(more, limit=90, dedupe_after=after, actor="x")
            outcomes[name] = (first, second)
        assert columns(stores["rows"]) == columns(stores["bulk"])
        assert outcomes["rows"] == outcomes["bulk"]
        assert outcomes["bulk"][1].evicted or dedupe  # the limit was reached
    finally:
        for store in stores.values():
            store.close()


def test_the_page_cache_is_put_back(tmp_path):
    store = SQLiteStore(tmp_path / "c.db")
    store.migrate()
    try:
        before = store._conn().execute("PRAGMA cache_size").fetchone()[0]
        store.insert_bulk(rows(50), limit=1000, dedupe_after=None, actor="x")
        assert store._conn().execute("PRAGMA cache_size").fetchone()[0] == before
    finally:
        store.close()
