"""A large project's index is loaded from packed rows (key, times, sign bits) without its
vectors; candidates' vectors are read when a search needs them and the rest in the background.
Every search in between returns exactly what an index built from whole records returns."""

from __future__ import annotations

import random
import sqlite3
import threading
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.embedders.hashing import HashingEmbedder
from capsule.search.index import ProjectIndex, store_fetcher
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore

from .test_cold_columns import EMBEDDER, NOW, assert_same, by_records, memories


@pytest.fixture
def store(tmp_path):
    store = SQLiteStore(tmp_path / "deferred.db", defer_vectors_from=1)
    store.migrate()
    store.insert(memories(120), limit=10_000, dedupe_after=None, actor="test")
    yield store
    store.close()


def deferred(store) -> ProjectIndex:
    index = ProjectIndex("t", "p", EMBEDDER.model_id, store_fetcher(store), eager_records=0)
    changes = store.changes_since("t", "p", 0, columns=True)
    assert changes.columns.deferred is not None and not changes.columns.vectors
    index.apply(changes)
    return index


def test_a_deferred_index_searches_like_records_before_and_after_completing(store):
    index, records = deferred(store), by_records(store)
    usable = records.has_vec[:120]
    assert np.array_equal(index.has_vec[:120], usable) and usable.sum() < 110  # mixed models and sizes
    assert np.array_equal(index.codes[:, :120], records.codes[:, :120])
    assert np.array_equal(index.row_codes[:120], records.row_codes[:120])
    assert np.array_equal(index.row_codes[:120].T, index.codes[:, :120])
    assert np.array_equal(index.key[:120], records.key[:120])
    assert np.array_equal(index.occurred[:120], records.occurred[:120])
    assert not index.filled[:120][usable].any()
    some = np.flatnonzero(usable)[[0, 5, 9]]
    assert np.array_equal(index.vectors(some), records.matrix[some])
    assert np.array_equal(np.flatnonzero(index.filled[:120] & usable), some)  # only those were read
    assert_same(index, records)
    index.complete()
    assert index.deferred is None and index.filled[:120].all()
    assert np.array_equal(index.matrix[:120][usable], records.matrix[:120][usable])
    assert_same(index, records)


def test_a_deferred_index_follows_later_changes(store):
    index = deferred(store)
    version = index.version
    store.add_feedback("t", "m0005", helpful=True, context=None, at=NOW)
    store.forget("t", "m0007", at=NOW, actor="t", reason="r")
    extra = replace(memories(1, seed=9)[0], id="n0001", content="redis timeout getUserById again")
    extra.embedding, extra.model = EMBEDDER.embed([extra.content])[0], EMBEDDER.model_id
    store.insert([extra], limit=10_000, dedupe_after=None, actor="test")
    pending = memories(200)[-1]  # written without a vector, embedded later
    pending = replace(pending, id="n0002", embedding=None, model=None, status="pending_embedding")
    store.insert([pending], limit=10_000, dedupe_after=None, actor="test")
    store.set_embedding("t", "n0002", EMBEDDER.embed([pending.content])[0], EMBEDDER.model_id)
    index.apply(store.changes_since("t", "p", version))
    assert_same(index, by_records(store))
    index.complete()
    assert_same(index, by_records(store))
    assert_same(deferred(store), by_records(store))  # the embedded row's packed row was rewritten


def test_a_row_forgotten_or_purged_before_its_vector_is_read(store):
    index = deferred(store)
    forgotten, purged = index.row_of["m0001"], index.row_of["m0002"]
    assert index.has_vec[forgotten] and index.has_vec[purged]
    store.forget("t", "m0001", at=NOW, actor="t", reason="r")
    store.forget("t", "m0002", at=NOW - timedelta(days=60), actor="t", reason="r")
    assert store.purge_forgotten(before=NOW - timedelta(days=30)) == 1
    # The index has not read these changes yet: the forgotten row is still read, the purged
    # one is searched without a vector until its removal is read.
    index.complete()
    assert index.has_vec[forgotten] and not index.has_vec[purged] and index.filled[:120].all()
    index.apply(store.changes_since("t", "p", index.version))
    assert_same(index, by_records(store))


def test_packed_rows_written_before_they_were_kept_are_recomputed(store, tmp_path):
    fresh = by_records(store)
    conn = sqlite3.connect(tmp_path / "deferred.db")
    with conn:
        conn.execute("UPDATE memories SET packed = NULL WHERE seq % 3 = 0")
        conn.execute("UPDATE memories SET sort_key = NULL WHERE seq % 6 = 0")
        conn.execute("UPDATE memories SET facets = NULL WHERE seq % 4 = 0")
        conn.execute("UPDATE memories SET terms = NULL, terms_version = NULL WHERE seq % 5 = 0")
    assert_same(deferred(store), fresh)
    assert (
        conn.execute(
            "SELECT count(*) FROM memories WHERE packed IS NULL OR facets IS NULL OR terms_version IS NULL"
        ).fetchone()[0]
        == 0
    )
    assert conn.execute("SELECT count(*) FROM memories WHERE facets != ''").fetchone()[0] > 50  # sessions, authors
    conn.close()
    assert_same(deferred(store), fresh)


def test_exact_search_reads_every_vector_first(store):
    from capsule.search.hybrid import SearchOptions, search_indexes
    from capsule.search.ranking import Weights

    def exact(index):
        hits, _ = search_indexes(
            [index],
            filters=Filters(),
            query="redis timeout",
            query_vector=EMBEDDER.embed(["redis timeout"])[0],
            model_id=EMBEDDER.model_id,
            now=NOW,
            weights=Weights(),
            k=8,
            options=SearchOptions(exact=True),
        )
        return [(h.record.id, h.score) for h in hits]

    from capsule.core.records import Filters

    index = deferred(store)
    assert exact(index) == exact(by_records(store))
    assert index.deferred is None


def service_on(path, defer: int, **settings) -> MemoryService:
    store = SQLiteStore(path, defer_vectors_from=defer)
    store.migrate()
    options = {"data_dir": path.parent, "retention_limit": 10_000, "query_cache_entries": 0, **settings}
    # One frozen "now" for every service on the file: with the wall clock, two services asked a
    # moment apart score recency 1.0 and 0.999999, and answers compared across them differ by that.
    return MemoryService(store, HashingEmbedder(), clock=FrozenClock(NOW), settings=Settings(**options))


WORDS = "deploy redis worker timeout mongo gateway cache retry queue schema lambda build".split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))


def answers(service) -> list:
    out = []
    for query in ("redis timeout", "gateway cache", "schema retry queue"):
        hits = service.search("t", {"project": "p", "query": query, "k": 10}).results
        out.append([(h.id, h.score, h.components) for h in hits])
    return out


def test_the_service_completes_in_the_background_and_then_keeps_its_snapshot(tmp_path):
    path = tmp_path / "svc.db"
    writer = service_on(path, 10**9)
    rng = random.Random(4)
    for _ in range(80):
        writer.store_memory("t", {"project": "p", "content": sentence(rng)})
    lazy = service_on(path, 1, index_snapshot_min=10)
    expected = answers(service_on(path, 10**9))
    assert answers(lazy) == expected
    lazy.settle()
    index = lazy.indexes.get("t", "p", lazy.embedder.model_id)
    assert index.deferred is None and index.filled[: index.n].all()
    assert list((tmp_path / "index").glob("*.snapshot"))  # written once the vectors were all read
    assert answers(lazy) == expected
    for service in (writer, lazy):
        service.store.close()


def test_searches_and_writes_while_the_vectors_are_read(tmp_path):
    path = tmp_path / "busy.db"
    writer = service_on(path, 10**9)
    rng = random.Random(5)
    ids = [writer.store_memory("t", {"project": "p", "content": sentence(rng)}).memory.id for _ in range(300)]
    lazy = service_on(path, 1)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(30):
                writer.store_memory("t", {"project": "p", "content": sentence(rng)})
                if i % 3 == 0:
                    writer.forget("t", ids[i])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    answers(lazy)  # the load: its vectors are now read in the background
    thread = threading.Thread(target=write)
    thread.start()
    for _ in range(5):
        answers(lazy)
    thread.join()
    lazy.settle()
    assert not errors, errors
    assert answers(lazy) == answers(service_on(path, 10**9))
    assert lazy.indexes.get("t", "p", lazy.embedder.model_id).deferred is None
    for service in (writer, lazy):
        service.store.close()


def test_dropping_dead_rows_before_the_vectors_are_read(store):
    index = deferred(store)
    version = index.version
    for i in range(0, 120, 2):
        store.forget("t", f"m{i:04d}", at=NOW, actor="t", reason="r")
    index.apply(store.changes_since("t", "p", version))
    index._compact()  # what apply does once most rows are dead (past a thousand of them)
    assert index.n == 60 and index.deferred is not None and not index.filled[:60].all()
    assert_same(index, by_records(store))
    index.settle()
    assert index.deferred is None and index._lazy is None
    assert_same(index, by_records(store))


class FlakyVectors:
    """A store's deferred vectors whose first full read fails (the store busy, say)."""

    def __init__(self, inner) -> None:
        self.inner, self.failures = inner, 1

    def some(self, ids, model):
        return self.inner.some(ids, model)

    def chunks(self, model):
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the store is busy")
        return self.inner.chunks(model)


class FlakyStore(SQLiteStore):
    def changes_since(self, tenant, project, since, *, columns=False):
        changes = super().changes_since(tenant, project, since, columns=columns)
        if changes.columns is not None and changes.columns.deferred is not None:
            changes.columns.deferred = FlakyVectors(changes.columns.deferred)
        return changes


def test_a_failed_background_read_is_tried_again_by_the_next_search(tmp_path, caplog):
    path = tmp_path / "flaky.db"
    writer = service_on(path, 10**9)
    rng = random.Random(6)
    for _ in range(60):
        writer.store_memory("t", {"project": "p", "content": sentence(rng)})
    lazy = MemoryService(
        FlakyStore(path, defer_vectors_from=1),
        HashingEmbedder(),
        clock=FrozenClock(NOW),
        settings=Settings(data_dir=tmp_path, query_cache_entries=0),
    )
    reference = service_on(path, 10**9)

    def one(service):
        hits = service.search("t", {"project": "p", "query": "redis timeout", "k": 10}).results
        return [(h.id, h.score) for h in hits]

    assert one(lazy) == one(reference)
    lazy.settle()
    index = lazy.indexes.get("t", "p", lazy.embedder.model_id)
    assert index.deferred is not None and "the store is busy" in caplog.text
    assert one(lazy) == one(reference)  # read its candidates' vectors, and scheduled the read again
    lazy.settle()
    assert index.deferred is None and one(lazy) == one(reference)
    for service in (writer, lazy, reference):
        service.store.close()
