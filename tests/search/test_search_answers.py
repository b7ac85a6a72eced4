"""What a search gives out shares nothing with the index or the cache, and the exact re-score's
gather (matrix.row_dots) sums exactly what einsum over the rows read gives, and a global
search's gather of many arrays' rows (matrix.take_parts) is their rows one after another."""

from __future__ import annotations

import numpy as np

from capsule.search.matrix import SplitRows, read_rows, row_dots, take_parts


def test_a_caller_changing_its_hits_changes_no_later_search(make_service):
    service = make_service(query_cache_entries=0)  # every search ranks again, from the index's records
    service.store_memory("t", {"project": "p", "content": "redis timeout on deploy", "meta": {"k": [1]}})
    first = service.search("t", {"project": "p", "query": "redis"})
    expected = first.model_dump_json()
    first.results[0].meta["k"].append(2)
    first.results[0].meta["new"] = True
    assert service.search("t", {"project": "p", "query": "redis"}).model_dump_json() == expected


def test_row_dots_are_einsum_over_the_rows_read(tmp_path):
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((3000, 384)).astype(np.float32)
    np.save(tmp_path / "m.npy", matrix)
    from capsule.search.matrix import map_npy

    mapped = map_npy(tmp_path / "m.npy")  # small: read through the mapping
    read = map_npy(tmp_path / "m.npy", pread_from=0)  # a system call per row, as a large file's
    assert not hasattr(mapped, "_rows_fd") and hasattr(read, "_rows_fd")
    split = SplitRows(read[:2000], 3000)
    split[np.arange(2000, 3000)] = matrix[2000:]
    query = rng.standard_normal(384).astype(np.float32)
    for size in (0, 1, 7, 900, 2500, 1200):  # the buffer grows, then is reused by a smaller call
        rows = np.sort(rng.choice(3000, size, replace=False))
        want = np.einsum("ij,j->i", matrix[rows], query)
        for values in (matrix, mapped, read, split):
            got = row_dots(values, rows, query)
            assert got.dtype == np.float32 and np.array_equal(got, want)
            assert np.array_equal(np.einsum("ij,j->i", read_rows(values, rows), query), want)
        kept = row_dots(matrix, rows, query)
        row_dots(matrix, rows[::-1].copy(), query)  # a later call does not change an earlier answer
        assert np.array_equal(kept, want)


def test_the_rows_of_many_arrays_are_gathered_one_after_another(tmp_path):
    from capsule.search.matrix import map_npy

    rng = np.random.default_rng(6)
    matrix = rng.standard_normal((500, 64)).astype(np.float32)
    np.save(tmp_path / "m.npy", matrix)
    split = SplitRows(map_npy(tmp_path / "m.npy", pread_from=0)[:300], 500)
    split[np.arange(300, 500)] = matrix[300:]
    sources = [
        matrix,
        map_npy(tmp_path / "m.npy"),
        map_npy(tmp_path / "m.npy", pread_from=0),
        split,
        matrix.astype(np.float64),
    ]  # another dtype: read, then cast like a concatenation
    picks = [np.sort(rng.choice(500, size, replace=False)) for size in (3, 0, 40, 1, 7)]
    parts = [(values, rows) for values, rows in zip(sources, picks)] + [(matrix[:5], None)]  # read already
    got = take_parts(parts, 64, np.float32)
    want = np.concatenate([matrix[rows] for rows in picks] + [matrix[:5]])
    assert got.dtype == np.float32 and np.array_equal(got, want)
    assert take_parts([], 64, np.float32).shape == (0, 64)
