"""The int8 copy of a large index (capsule.search.quantized): its bounds hold the float32 dot the exact
re-score computes, a search that reads exact vectors only where they can decide the k best
returns exactly what reading them all returns, and the copy is kept beside the snapshot."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

import capsule.search.hybrid as search
import capsule.search.indexvectors as indexvectors
import capsule.search.quantized as quantized_module
from capsule.core.records import ChangeSet, Filters, MemoryRecord
from capsule.search.hybrid import SearchOptions, search_indexes
from capsule.search.index import ProjectIndex
from capsule.search.quantized import Quantized, build, quantize
from capsule.search.ranking import Weights

from .test_cold_columns import NOW
from .test_index_snapshot import fill


def test_the_bounds_hold_the_float32_dot():
    rng = np.random.default_rng(15)
    for dim in (1, 7, 384, 1024):
        rows = rng.standard_normal((400, dim)).astype(np.float32)
        rows[::7] *= 40.0  # rows far from unit length
        rows[::11] = 0.0  # and empty ones
        rows[3, :] = 0.0
        rows[3, 0] = 1e-30
        codes, meta = quantize(rows)
        copy = Quantized(codes, meta)
        residual = rows.astype(np.float64) - meta[:, :1].astype(np.float64) * codes
        for trial in range(24):
            query = rng.standard_normal(dim).astype(np.float32) * float(rng.choice([0.01, 1.0, 30.0]))
            if trial % 3 == 0:  # along a row's own rounding error: where Cauchy-Schwarz is tight
                query = (residual[int(rng.integers(0, 400))] * 1e3).astype(np.float32)
            at = rng.permutation(400)
            exact = np.einsum("ij,j->i", rows[at], query).astype(np.float64)
            low, high = copy.bounds(at, query)
            assert (low <= exact).all() and (exact <= high).all(), dim
            if dim >= 384 and trial % 3:  # tight enough to leave most rows out
                assert np.median(high - low) < 0.05 * np.linalg.norm(query) * np.median(np.linalg.norm(rows, axis=1))


def test_a_copy_in_files_is_the_copy_in_ram(tmp_path):
    rng = np.random.default_rng(4)
    matrix = rng.standard_normal((5000, 64)).astype(np.float32)
    in_ram, in_files = build(matrix, 4500), build(matrix, 4500, tmp_path / "m.quant")
    assert in_files.n == 4500 and not in_files.codes.flags.writeable
    assert np.array_equal(in_ram.codes, in_files.codes) and np.array_equal(in_ram.meta, in_files.meta)


def _records(count: int, dim: int, seed: int) -> list[MemoryRecord]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(60)]
    centres = rng.standard_normal((8, dim))
    out = []
    for i in range(count):
        vector = (centres[i % 8] + 0.6 * rng.standard_normal(dim)).astype(np.float32)
        vector /= np.linalg.norm(vector)
        text = " ".join(rng.choice(words, 6))
        at = NOW - timedelta(hours=i)
        out.append(
            MemoryRecord(
                id=f"q{i:05d}",
                tenant="t",
                project="p",
                content=text,
                sha256=f"h{i}",
                occurred_at=at,
                created_at=at,
                updated_at=at,
                model="m",
                meta={"component": ["api", "db"][i % 2], "outcome_status": ["success", "failure", "unknown"][i % 3]},
                embedding=None if i % 29 == 0 else vector,
            )
        )
    return out


@pytest.mark.parametrize("weights", [Weights(), Weights(vector=1.0, bm25=0.0, time=0.0, feedback=0.0)])
def test_a_search_with_the_copy_returns_what_one_without_it_does(monkeypatch, weights):
    dim = 96
    records = _records(2400, dim, seed=1)
    index = ProjectIndex("t", "p", "m")
    index.apply(ChangeSet(version=1, changed=[replace(r) for r in records[:2000]], reset=True))
    index.apply(ChangeSet(version=2, removed=[r.id for r in records[:2000:9]]))
    monkeypatch.setattr(quantized_module, "QUANT_FROM", 100)
    assert index.wants_quant() and index.quantize() and index.quant.n == 2000
    # Rows added after the copy was made: read exactly, as every row is without one.
    index.apply(ChangeSet(version=3, changed=[replace(r) for r in records[2000:]]))
    assert index.quant.n == 2000 < index.n
    calls, exact_rows = [], []
    original = search._vector_where_it_counts

    def counted(*args):
        vector, need = original(*args)
        calls.append(1)
        exact_rows.append(int(need.sum()))
        return vector, need

    monkeypatch.setattr(search, "_vector_where_it_counts", counted)
    rng = np.random.default_rng(2)
    made, found_some = index.quant, 0
    for trial in range(30):
        query_vector = records[int(rng.integers(0, 2400))].embedding
        query_vector = query_vector if query_vector is not None else records[1].embedding
        query = " ".join(rng.choice([f"w{i}" for i in range(60)], 2))
        filters = Filters(component="api") if trial % 4 == 0 else Filters()
        options = SearchOptions(candidates=200, min_relevance=[0.15, 0.0, 0.5][trial % 3])
        answers = []
        for copy in (made, None):
            index.quant = copy
            found, _ = search_indexes(
                [index],
                filters=filters,
                query=query,
                query_vector=query_vector,
                model_id="m",
                now=NOW,
                weights=weights,
                k=10,
                options=options,
            )
            answers.append([(h.record.id, h.score, h.vector, h.bm25) for h in found])
        index.quant = made
        assert answers[0] == answers[1], trial
        found_some += bool(answers[0])
    assert len(calls) == 30 and found_some >= 20
    assert np.median(exact_rows) < 100  # most of the 200-400 candidates were never read exactly


def test_the_copy_is_made_beside_the_snapshot_and_loaded_with_it(make_service, db_path, monkeypatch):
    monkeypatch.setattr(quantized_module, "QUANT_FROM", 50)
    first = make_service(index_snapshot_min=10)
    fill(first, 300)
    query = {"project": "p", "query": "redis timeout", "k": 5}
    before = first.search("t", query)
    first.settle()  # the copy is made in the background, after the snapshot
    index = first.indexes.get("t", "p", first.embedder.model_id)
    assert index.quant is not None and index.quant.n == 300
    copies = sorted(p.name for p in (db_path.parent / "index").glob("*.quant.*.npy"))
    assert len(copies) == 2 and all(".matrix.quant." in name for name in copies)
    fill(make_service(index_snapshot_min=0), 20, seed=2)  # another process adds rows
    fresh = make_service(index_snapshot_min=10)
    taken = []
    original = search._vector_where_it_counts
    monkeypatch.setattr(search, "_vector_where_it_counts", lambda *a: taken.append(1) or original(*a))
    again = fresh.search("t", query)
    loaded = fresh.indexes.get("t", "p", fresh.embedder.model_id)
    assert loaded.quant is not None and loaded.quant.n == 300 and loaded.n == 320 and taken
    plain = make_service(index_snapshot_min=0)
    monkeypatch.setattr(quantized_module, "QUANT_FROM", 10**9)
    assert again.model_dump() == plain.search("t", query).model_dump()
    assert before.results and again.results  # the searches found something to compare


def test_the_copy_goes_when_rows_are_renumbered_and_is_made_again_only_for_many_new_rows(monkeypatch):
    monkeypatch.setattr(quantized_module, "QUANT_FROM", 100)
    records = _records(2600, 32, seed=3)
    index = ProjectIndex("t", "p", "m")
    index.apply(ChangeSet(version=1, changed=[replace(r) for r in records[:2000]], reset=True))
    assert index.quantize() and not index.wants_quant()
    index.apply(ChangeSet(version=2, changed=[replace(r) for r in records[2000:2100]]))
    assert index.quant.n == 2000 and not index.wants_quant()  # a few rows: read exactly
    index.apply(ChangeSet(version=3, changed=[replace(r) for r in records[2100:]]))
    assert index.wants_quant()  # over an eighth of the rows added since
    index.apply(ChangeSet(version=4, removed=[r.id for r in records[:1500]]))  # compacted
    assert index.quant is None and index.n == 1100


def test_a_copy_that_could_not_be_made_is_not_tried_again_on_every_search(monkeypatch, tmp_path):
    monkeypatch.setattr(quantized_module, "QUANT_FROM", 100)
    records = _records(1000, 16, seed=5)
    index = ProjectIndex("t", "p", "m")
    index.apply(ChangeSet(version=1, changed=[replace(r) for r in records[:800]], reset=True))

    def full_disk(*args):
        raise OSError("No space left on device")

    monkeypatch.setattr(indexvectors, "build", full_disk)
    with pytest.raises(OSError):
        index.quantize(tmp_path / "m.quant")
    assert index.quant is None and not index.wants_quant()  # not at this size again
    index.apply(ChangeSet(version=2, changed=[replace(r) for r in records[800:]]))
    assert index.wants_quant()  # a quarter more rows since: worth another attempt


def test_a_copy_cut_short_leaves_no_file(tmp_path, monkeypatch):
    import capsule.search.matrix as matrix

    calls = []

    def failing(values, start, stop):
        calls.append(start)
        if len(calls) > 1:
            raise OSError("No space left on device")
        return np.asarray(values[start:stop])

    monkeypatch.setattr(matrix, "read_block", failing)
    with pytest.raises(OSError):
        build(np.ones((10_000, 8), dtype=np.float32), 10_000, tmp_path / "m.quant")
    assert len(calls) == 2 and not list(tmp_path.iterdir())


def test_copies_of_one_index_made_at_once_in_one_process_do_not_share_a_file(tmp_path):
    # Two services over one folder (a test's, or serve's HTTP and MCP sides) may copy the same
    # index at once: a file named only for the process was truncated under the other's
    # mapping, and the write into it killed the process (SIGBUS).
    import threading

    matrix = np.random.default_rng(6).standard_normal((20_000, 64)).astype(np.float32)
    made, start = [], threading.Barrier(4)

    def copy() -> None:
        start.wait()
        made.append(build(matrix, 20_000, tmp_path / "m.quant"))

    threads = [threading.Thread(target=copy) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 4 and all(m is not None and m.n == 20_000 for m in made)
    assert np.array_equal(made[0].codes, build(matrix, 20_000).codes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.quant.codes.npy", "m.quant.meta.npy"]


def test_a_full_disk_is_an_error_before_a_row_is_written(tmp_path, monkeypatch):
    # A row written through a mapping into a sparse file's hole on a full disk is a SIGBUS,
    # not an OSError: the files' blocks are allocated first, so a full disk fails there.
    import errno
    import os

    from capsule.search.matrix import Spill

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError):
        build(np.ones((5000, 8), dtype=np.float32), 5000, tmp_path / "m.quant")
    with pytest.raises(OSError):
        Spill(tmp_path / "s.npy", 5000, 8)
    assert not list(tmp_path.iterdir())


def test_a_file_system_without_allocation_still_gets_the_copy(tmp_path, monkeypatch):
    import errno
    import os

    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "posix_fallocate", unsupported)
    copy = build(np.ones((5000, 8), dtype=np.float32), 5000, tmp_path / "m.quant")
    assert copy is not None and copy.n == 5000
