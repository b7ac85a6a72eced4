"""A large index's keyword stage summed only where the query's strong terms reach
(capsule.search.keywordsparse) gives exactly what summing every term into every row gives: the
same candidates, the same best score, the same score for any row read, and the same hits."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np

from capsule.core.records import ChangeSet, Filters, MemoryRecord
from capsule.search import keywordsparse
from capsule.search.hybrid import SearchOptions, _top_positive, search_indexes
from capsule.search.index import ProjectIndex
from capsule.search.ranking import Weights

from .test_cold_columns import EMBEDDER, NOW


def _per_row(parts, size: int) -> np.ndarray:
    """The plain computation the sparse one stands for (as capsule.search.hybrid does it)."""
    out = np.zeros(size)
    for rows, scores, _ in parts:
        if rows is None:
            out += scores
        elif rows.size:
            out[rows] += scores
    return out


def _parts(rng, size: int) -> list:
    parts = []
    for _ in range(int(rng.integers(1, 6))):
        kind = rng.random()
        if kind < 0.25:  # a frequent term: one score per row
            dense = np.where(rng.random(size) < 0.6, rng.random(size) * 0.8, 0.0)
            parts.append((None, dense, float(dense.max())))
            continue
        df = int(rng.integers(0, size // 3)) if kind < 0.8 else int(rng.integers(0, 40))
        rows = np.sort(rng.choice(size, df, replace=False)).astype(np.int32)
        if kind > 0.95 and df > 2:  # rows from two sources: not ascending, one repeated
            rows = np.concatenate((rows[df // 2 :], rows[: df // 2 + 1]))
        scores = rng.random(rows.size) * float(rng.choice([1.0, 5.0, 10.0])) + 0.01
        parts.append((rows, scores, float(scores.max()) if scores.size else 0.0))
    return parts


def test_the_sparse_sums_are_the_per_row_sums():
    rng = np.random.default_rng(16)
    taken = refused = 0
    for trial in range(300):
        size = int(rng.integers(50, 6000))
        parts = _parts(rng, size)
        keys = rng.permutation(4 * size)[:size].astype(np.int64)
        count = int(rng.integers(1, 200))
        full = _per_row(parts, size)
        found = keywordsparse.sparse_keyword(parts, size, keys, count, _top_positive)
        if found is None:
            refused += 1
            continue
        taken += 1
        assert np.array_equal(np.sort(found.best), np.sort(_top_positive(full, count, keys))), trial
        assert found.max() == full.max(), trial
        some = np.sort(rng.choice(size, min(size, 300), replace=False))
        assert np.array_equal(found[some], full[some]), trial
        assert np.array_equal(found[found.rows], full[found.rows]), trial
    assert taken > 150 and refused > 10  # both ways were taken


def test_many_rows_summed_through_the_row_map_give_the_same(monkeypatch):
    monkeypatch.setattr(keywordsparse, "MAP_FROM", 8)
    test_the_sparse_sums_are_the_per_row_sums()


def _zipf_memories(count: int, seed: int = 5) -> list[MemoryRecord]:
    rng = np.random.default_rng(seed)
    vocab = [f"word{i}" for i in range(400)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    picks = rng.choice(len(vocab), size=(count, 10), p=weights / weights.sum())
    out = []
    for i, row in enumerate(picks):
        text = " ".join(vocab[w] for w in row)
        at = NOW - timedelta(minutes=i)
        out.append(
            MemoryRecord(
                id=f"z{i:05d}",
                tenant="t",
                project="p",
                content=text,
                sha256=f"h{i}",
                occurred_at=at,
                created_at=at,
                updated_at=at,
                embedding=EMBEDDER.embed([text])[0],
                model=EMBEDDER.model_id,
            )
        )
    return out


def test_a_search_by_the_sparse_stage_returns_what_the_per_row_stage_does(monkeypatch):
    records = _zipf_memories(3000)
    index = ProjectIndex("t", "p", EMBEDDER.model_id)
    index.apply(ChangeSet(version=1, changed=[replace(r) for r in records], reset=True))
    calls = []
    original = keywordsparse.sparse_keyword

    def counted(*args):
        found = original(*args)
        calls.append(found is not None)
        return found

    import capsule.search.hybrid as search

    monkeypatch.setattr(search, "sparse_keyword", counted)
    rng = np.random.default_rng(9)
    for q in range(40):
        words = rng.choice(400, int(rng.integers(1, 5)), p=None if q % 2 else np.r_[[0.2] * 4, [0.2 / 396] * 396])
        query = " ".join(f"word{w}" for w in words)
        vector = EMBEDDER.embed([query])[0]
        answers = []
        for sparse_from in (0, 10**9):
            found, _ = search_indexes(
                [index],
                filters=Filters(),
                query=query,
                query_vector=vector,
                model_id=EMBEDDER.model_id,
                now=NOW,
                weights=Weights(),
                k=10,
                options=SearchOptions(candidates=50, sparse_from=sparse_from),
            )
            answers.append([(h.record.id, h.score, h.bm25, h.vector) for h in found])
        assert answers[0] == answers[1], query
    assert any(calls) and not all(calls)  # the sparse stage answered, and refused where it must
