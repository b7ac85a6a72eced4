"""An index loaded from SQLite as columns (stored term hashes, records fetched only for hits)
searches exactly like one built from whole records, before and after later changes."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.records import Filters, MemoryRecord
from capsule.embedders.hashing import HashingEmbedder
from capsule.search import terms
from capsule.search.hybrid import search_indexes
from capsule.search.index import ProjectIndex, store_fetcher
from capsule.search.ranking import Weights
from capsule.store.sqlite import SQLiteStore

NOW = datetime(2026, 3, 1, tzinfo=UTC)
WORDS = "deploy redis worker timeout mongo gateway cache token retry queue schema getUserById HTTP 503".split()
QUERIES = ["redis timeout", "getUserById schema", "HTTP 503 gateway", "cache token retry"]
EMBEDDER = HashingEmbedder()


def memories(count: int, seed: int = 3) -> list[MemoryRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + f" n{i}"
        at = NOW - timedelta(hours=i)
        meta = (
            {
                "component": rng.choice(["api", "db"]),
                "session": f"s{i // 5}",
                "author": rng.choice(["Ann", "Bo"]),
                "outcome_status": rng.choice(["success", "failure", "unknown"]),
            }
            if i % 3
            else {}
        )
        vector, model = EMBEDDER.embed([text])[0], EMBEDDER.model_id
        if i % 11 == 0:
            vector, model = None, None  # no embedding yet
        elif i % 13 == 0:
            model = "another-model"
        elif i % 17 == 0:
            vector = np.full(8, 8**-0.5, dtype=np.float32)  # another size: left out of the matrix
        out.append(
            MemoryRecord(
                id=f"m{i:04d}",
                tenant="t",
                project="p",
                content=text,
                sha256=f"h{i}",
                occurred_at=at,
                created_at=at,
                updated_at=at,
                embedding=vector,
                model=model,
                meta=meta,
                status="ready" if vector is not None else "pending_embedding",
            )
        )
    return out


@pytest.fixture
def store(tmp_path):
    store = SQLiteStore(tmp_path / "cols.db")
    store.migrate()
    store.insert(memories(120), limit=10_000, dedupe_after=None, actor="test")
    yield store
    store.close()


def by_columns(store) -> ProjectIndex:
    index = ProjectIndex("t", "p", EMBEDDER.model_id, store_fetcher(store), eager_records=0)
    index.apply(store.changes_since("t", "p", 0, columns=True))
    return index


def by_records(store) -> ProjectIndex:
    index = ProjectIndex("t", "p", EMBEDDER.model_id)
    index.apply(store.changes_since("t", "p", 0))
    return index


def results(index: ProjectIndex, query: str, filters: Filters = Filters()) -> list[tuple]:
    hits, searched = search_indexes(
        [index],
        filters=filters,
        query=query,
        query_vector=EMBEDDER.embed([query])[0],
        model_id=EMBEDDER.model_id,
        now=NOW,
        weights=Weights(),
        k=8,
    )
    return [searched] + [
        (h.record.id, h.record.content, h.record.meta, h.score, h.vector, h.bm25, h.boost) for h in hits
    ]


def assert_same(a: ProjectIndex, b: ProjectIndex) -> None:
    for query in QUERIES:
        for filters in (Filters(), Filters(component="api")):
            got = results(a, query, filters)
            assert len(got) > 3 and got == results(b, query, filters), (query, filters)


def test_columns_search_like_records(store):
    columns, records = by_columns(store), by_records(store)
    assert not columns.records.loaded(0)  # records are fetched only when needed
    assert_same(columns, records)
    assert columns.n == records.n == 120
    assert np.array_equal(columns.has_vec[:120], records.has_vec[:120])
    assert columns.has_vec[:120].sum() < 120 - 10  # no vector, another model, another size


def test_columns_stay_equal_through_later_changes(store):
    columns, records = by_columns(store), by_records(store)
    version = columns.version
    store.add_feedback("t", "m0005", helpful=True, context=None, at=NOW)  # a row only held by id
    store.forget("t", "m0007", at=NOW, actor="t", reason="r")
    store.set_pinned("t", "m0008", True, at=NOW, actor="t")
    extra = replace(memories(1, seed=9)[0], id="n0001", content="redis timeout getUserById again")
    extra.embedding = EMBEDDER.embed([extra.content])[0]
    extra.model = EMBEDDER.model_id
    store.insert([extra], limit=10_000, dedupe_after=None, actor="test")
    for index in (columns, records):
        index.apply(store.changes_since("t", "p", version))
    assert_same(columns, records)
    assert_same(columns, by_records(store))


def test_stale_term_hashes_are_recomputed_and_kept(store, tmp_path):
    fresh = by_records(store)
    conn = sqlite3.connect(tmp_path / "cols.db")
    with conn:
        conn.execute("UPDATE memories SET terms = NULL, terms_version = NULL, sort_key = NULL WHERE seq % 2 = 0")
        conn.execute("UPDATE memories SET terms = x'00', terms_version = 'an-older-tokenizer' WHERE seq % 5 = 0")
    assert_same(by_columns(store), fresh)
    versions = {v for (v,) in conn.execute("SELECT DISTINCT terms_version FROM memories")}
    assert versions == {terms.TOKENIZER}
    assert conn.execute("SELECT count(*) FROM memories WHERE sort_key IS NULL").fetchone()[0] == 0
    conn.close()
    assert_same(by_columns(store), fresh)


def test_term_hashes_are_stable_and_match_the_tokenizer():
    assert terms.term_hash("redis") == terms.term_hash("redis") and terms.term_hash("redis") != terms.term_hash("Redis")
    assert 0 <= terms.term_hash("x") < 2**63
    text = "Fix ECONNREFUSED in getUserById (HTTP 503)"
    hashed = np.frombuffer(terms.encode(text), dtype="<i8")
    from capsule.core.text import tokens

    assert hashed.tolist() == [terms.term_hash(t) for t in tokens(text)]


def test_reading_many_rows_one_by_one_fetches_the_rest_at_once(store):
    reads = []
    fetch = store_fetcher(store)
    index = ProjectIndex(
        "t", "p", EMBEDDER.model_id, lambda *args: reads.append(len(args[2])) or fetch(*args), eager_records=0
    )
    index.apply(store.changes_since("t", "p", 0, columns=True))
    contents = [index.records[row].content for row in range(index.n)]  # as a ranking aid might
    assert contents == [r.content for r in memories(120)]
    assert len(reads) == index.records.SINGLE_FETCHES + 1 and reads[-1] == 120 - index.records.SINGLE_FETCHES
