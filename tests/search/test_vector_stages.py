"""The vector stage at every path it can take keeps recall@10 >= 0.99 against exact float32,
and what it returns is scored exactly: numpy's one pass over every sign bit, numpy's two
passes (leading bits, then all), faiss's pass over the leading bits (capsule.search.hamming), each
with and without a filter; over an index in RAM, one loaded from a snapshot (mapped files),
one with rows added after its snapshot (mapped rows + RAM rows), and one whose matrix was read
from the store into a file (spilled). Sizes are small (20k x 256); no timing is asserted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.records import ChangeSet, Filters, MemoryRecord
from capsule.search import hamming, indexload
from capsule.search.hybrid import SearchOptions, _vector_rows, _View
from capsule.search.index import ProjectIndex
from capsule.search.matrix import SplitRows, is_mapped
from capsule.search.snapshot import Snapshots
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from capsule_cli.bench_data import TableEmbedder, exact_top, make_dataset

N, DIM, QUERIES = 20_000, 256, 60
MODEL = f"bench-{DIM}"
BASE = datetime(2025, 1, 1, tzinfo=UTC)
needs_faiss = pytest.mark.skipif(not hamming.available(), reason="faiss-cpu is not installed")


@pytest.fixture(scope="module")
def data():
    return make_dataset(N + 2000, DIM, QUERIES, seed=11)


def records(data, start: int, stop: int, project: str = "p") -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=f"m{i:07d}",
            tenant="t",
            project=project,
            content=data.texts[i],
            sha256=f"{i:064x}",
            occurred_at=BASE + timedelta(seconds=i),
            created_at=BASE + timedelta(seconds=i),
            updated_at=BASE + timedelta(seconds=i),
            embedding=data.vectors[i].copy(),
            model=MODEL,
        )
        for i in range(start, stop)
    ]


def built(data, rows: int = N) -> ProjectIndex:
    index = ProjectIndex("t", "p", MODEL)
    index.apply(ChangeSet(version=1, changed=records(data, 0, rows), reset=True))
    return index


STAGES = {
    "numpy, one pass": SearchOptions(library_from=10**9),
    "numpy, leading bits then all": SearchOptions(library_from=10**9, prefix_words=2),
    "faiss, leading bits then all": SearchOptions(library_from=1, prefix_words=2),
    "faiss, default prefix": SearchOptions(library_from=1),
}


def ids_of(index: ProjectIndex) -> np.ndarray:
    return np.array([int(i[1:]) if i else -1 for i in index.records.ids()[: index.n]])


def stage_recall(index: ProjectIndex, data, options: SearchOptions, mask: np.ndarray | None = None) -> float:
    """recall@10 of the stage's candidates re-scored exactly, against exact float32 over the
    rows the mask allows; and every returned score is the exact float32 dot product."""
    ids = ids_of(index)
    allowed = index.mask(Filters()) if mask is None else mask
    vectors = np.stack([data.vectors[i] for i in ids[np.flatnonzero(allowed)]])
    truth_rows = np.flatnonzero(allowed)[exact_top(vectors, data.queries)]
    hits = 0
    for q, truth in zip(data.queries, truth_rows):
        rows = _vector_rows(_View(index, allowed), q, options)
        assert allowed[rows].all()
        scores = np.einsum("ij,j->i", index.vectors(rows), q)
        top = rows[np.argsort(-scores, kind="stable")[:10]]
        exact = np.array([np.float32(data.vectors[ids[r]] @ q) for r in top])
        np.testing.assert_allclose(np.sort(scores)[::-1][:10], exact, rtol=1e-6)
        hits += len(set(top.tolist()) & set(truth.tolist()))
    return hits / (10 * len(data.queries))


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_stage_keeps_recall(data, stage):
    if stage.startswith("faiss") and not hamming.available():
        pytest.skip("faiss-cpu is not installed")
    index = built(data)
    assert stage_recall(index, data, STAGES[stage]) >= 0.99
    odd = index.mask(Filters()) & (np.arange(index.n) % 2 == 1)  # a filter: half the rows
    assert stage_recall(index, data, STAGES[stage], odd) >= 0.99


@needs_faiss
def test_the_faiss_pass_picks_what_numpy_ranks_best(data):
    """The same nearest rows by the leading bits as numpy's ranking (ties aside)."""
    index = built(data, 5000)
    prefix = index.prefix_codes(2)
    assert prefix.flags.c_contiguous and prefix.shape == (5000, 2)
    from capsule.search.index import sign_codes

    for q in data.queries[:10]:
        code = sign_codes(q[None, :], index.words)[0][:2]
        distance = np.bitwise_count(prefix ^ code).sum(axis=1)
        rows = hamming.nearest(prefix, code, 300, None)
        assert distance[rows].max() <= np.sort(distance)[299]
        assert len(set(rows.tolist())) == 300


@needs_faiss
def test_snapshot_and_rows_added_after_it(data, tmp_path):
    """Loaded from a snapshot the matrix and codes are mapped files; rows added later go to RAM
    after them (the files are not copied) and are found like the others."""
    index = built(data)
    snapshots = Snapshots(tmp_path, "db", min_rows=1)
    assert snapshots.save(index)
    assert is_mapped(index.matrix)  # the writer reads its own snapshot's files too
    loaded = ProjectIndex("t", "p", MODEL)
    assert snapshots.load(loaded)
    assert is_mapped(loaded.matrix) and is_mapped(loaded.row_codes)
    options = STAGES["faiss, leading bits then all"]
    assert stage_recall(loaded, data, options) >= 0.99
    loaded.apply(ChangeSet(version=2, changed=records(data, N, N + 2000)))
    assert isinstance(loaded.matrix, SplitRows) and loaded.matrix.split == N
    assert loaded.matrix.base is not None and is_mapped(loaded.matrix.base)
    assert stage_recall(loaded, data, options) >= 0.99
    assert stage_recall(loaded, data, STAGES["numpy, one pass"]) >= 0.99


@needs_faiss
def test_a_large_matrix_read_from_the_store_goes_to_a_file(data, tmp_path, monkeypatch):
    """Above RESIDENT_MAX (lowered here) the vectors read after the first search are written
    to a file beside the snapshots and mapped read-only; the snapshot keeps that very file.
    Answers are those of an index held in RAM."""
    monkeypatch.setattr(indexload, "RESIDENT_MAX", 0)  # read where a load decides
    db = tmp_path / "capsule.db"
    store = SQLiteStore(db, defer_vectors_from=1000)
    store.migrate()
    store.insert(records(data, 0, 5000), limit=1_000_000, dedupe_after=None, actor="t")
    table = dict(zip(data.query_texts, data.queries))

    def service(snapshot_min: int) -> MemoryService:
        settings = Settings(
            data_dir=tmp_path, retention_limit=1_000_000, query_cache_entries=0, index_snapshot_min=snapshot_min
        )
        return MemoryService(SQLiteStore(db, defer_vectors_from=1000), TableEmbedder(table, DIM), settings=settings)

    def answers(s: MemoryService) -> list:
        return [
            [(h.id, h.score) for h in s.search("t", {"project": "p", "query": text, "k": 10}).results]
            for text in data.query_texts[:15]
        ]

    lazy, resident = service(1), service(0)
    first = answers(lazy)
    lazy.settle()
    index = lazy.indexes.get("t", "p", MODEL)
    assert index.deferred is None and is_mapped(index.matrix)
    assert index.matrix_file is not None and index.matrix_file.name.endswith(".matrix.npy")
    kept = sorted(p.name for p in tmp_path.glob("index/*.matrix.npy"))
    assert kept == [index.matrix_file.name]  # the snapshot kept the spilled file, no second copy
    assert first == answers(lazy) == answers(resident)
    for s in (lazy, resident):
        s.store.close()
    store.close()


@needs_faiss
def test_a_full_disk_keeps_a_large_matrix_read_from_the_store_in_ram(data, tmp_path, monkeypatch):
    """With no room for the spill file (its blocks are allocated first: ENOSPC, not a SIGBUS
    at the first row written), the vectors are read into RAM and the answers are the same."""
    import errno
    import os

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(indexload, "RESIDENT_MAX", 0)
    db = tmp_path / "capsule.db"
    store = SQLiteStore(db, defer_vectors_from=1000)
    store.migrate()
    store.insert(records(data, 0, 5000), limit=1_000_000, dedupe_after=None, actor="t")
    table = dict(zip(data.query_texts, data.queries))
    settings = Settings(data_dir=tmp_path, retention_limit=1_000_000, query_cache_entries=0, index_snapshot_min=0)
    resident = MemoryService(SQLiteStore(db, defer_vectors_from=1000), TableEmbedder(table, DIM), settings=settings)
    expected = [resident.search("t", {"project": "p", "query": text, "k": 10}).results for text in data.query_texts[:5]]

    monkeypatch.setattr(os, "posix_fallocate", full)
    settings = Settings(data_dir=tmp_path, retention_limit=1_000_000, query_cache_entries=0, index_snapshot_min=1)
    lazy = MemoryService(SQLiteStore(db, defer_vectors_from=1000), TableEmbedder(table, DIM), settings=settings)
    got = [lazy.search("t", {"project": "p", "query": text, "k": 10}).results for text in data.query_texts[:5]]
    lazy.settle()
    assert [[(h.id, h.score) for h in r] for r in got] == [[(h.id, h.score) for h in r] for r in expected]
    index = lazy.indexes.get("t", "p", MODEL)
    assert index.deferred is None and not is_mapped(index.matrix)
    assert not list(tmp_path.glob("index/*.npy"))  # nothing half-written left behind
    for s in (lazy, resident):
        s.store.close()
    store.close()


def test_workers_share_the_snapshot_and_never_answer_from_before_a_write(data, tmp_path):
    """Two services over one database (two workers): the second maps the snapshot the first
    wrote; a write acknowledged by the first is in the second's next answer (the delta since
    the snapshot's version, applied in-process), its mapped rows untouched."""
    db = tmp_path / "capsule.db"
    store = SQLiteStore(db)
    store.migrate()
    store.insert(records(data, 0, 3000), limit=1_000_000, dedupe_after=None, actor="t")
    table = dict(zip(data.query_texts + [data.texts[N]], [*data.queries, data.vectors[N]]))

    def worker() -> MemoryService:
        settings = Settings(data_dir=tmp_path, retention_limit=1_000_000, query_cache_entries=0, index_snapshot_min=1)
        return MemoryService(SQLiteStore(db), TableEmbedder(table, DIM), settings=settings)

    one, two = worker(), worker()
    one.search("t", {"project": "p", "query": data.query_texts[0], "k": 10})
    one.settle()
    two.search("t", {"project": "p", "query": data.query_texts[0], "k": 10})
    shared = two.indexes.get("t", "p", MODEL)
    assert is_mapped(shared.matrix)
    new = records(data, N, N + 1)[0]
    new.project = "p"
    one.store.insert([new], limit=1_000_000, dedupe_after=None, actor="t")  # acknowledged
    hits = two.search("t", {"project": "p", "query": data.texts[N], "k": 10, "mode": "vector"}).results
    assert hits[0].id == new.id
    assert isinstance(shared.matrix, SplitRows) and is_mapped(shared.matrix.base)
    for s in (one, two):
        s.store.close()
    store.close()
