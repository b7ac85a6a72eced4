"""The shortcuts of a warm search give exactly what the plain computation gives: candidates
from a sampled threshold, BM25 contributions kept per index version, and the work an index
does in the background (vectors read, matrix moved, postings sorted)."""

from __future__ import annotations

import numpy as np

from capsule.core.records import ChangeSet, Filters, IndexColumns
from capsule.search.hybrid import _best_rows, _top_positive, search_indexes
from capsule.search.index import ProjectIndex, TermScores, pack_row
from capsule.search.ranking import Weights

from .test_cold_columns import EMBEDDER, NOW, memories


def test_candidates_from_a_sampled_threshold_are_the_full_rankings():
    rng = np.random.default_rng(1)
    shortcuts = 0
    for trial in range(400):
        n = int(rng.integers(1, 60_000))
        kind = trial % 3
        if kind == 0:
            values = rng.random(n)
        elif kind == 1:
            values = np.round(rng.random(n) * 20) / 4  # many ties
        else:
            values = np.where(rng.random(n) < 0.05, rng.random(n), 0.0)  # few positives
        values[rng.random(n) < 0.3] = 0.0
        keys = rng.permutation(3 * n)[:n].astype(np.int64)
        count = int(rng.integers(1, 800)) if trial % 5 else int(rng.integers(1, 4))
        fast = _top_positive(values, count, keys)
        assert np.array_equal(fast, _best_rows(values, values > 0, count, keys, smaller_is_better=False)), trial
        shortcuts += values.size > 64 * count
    assert shortcuts > 100


def test_term_scores_stay_within_their_bound():
    scores = TermScores(max_bytes=10_000)
    for i in range(10):
        scores.put(("t", i), np.arange(100, dtype=np.int32), np.zeros(100), 0.0)  # 1,200 bytes each
    assert scores.bytes <= 10_000 and scores.get(("t", 0)) is None and scores.get(("t", 9)) is not None
    scores.put(("dense",), None, np.zeros(1000), 0.0)  # larger than a quarter of the bound: not kept
    assert scores.get(("dense",)) is None


def hits(index: ProjectIndex, query: str, filters: Filters = Filters()) -> list[tuple]:
    found, _ = search_indexes(
        [index],
        filters=filters,
        query=query,
        query_vector=EMBEDDER.embed([query])[0],
        model_id=EMBEDDER.model_id,
        now=NOW,
        weights=Weights(),
        k=10,
    )
    return [(h.record.id, h.score, h.bm25) for h in found]


def fresh(records) -> ProjectIndex:
    index = ProjectIndex("t", "p", EMBEDDER.model_id)
    index.apply(ChangeSet(version=1, changed=[r for r in records], reset=True))
    return index


def test_kept_term_scores_give_what_a_fresh_index_gives_and_go_with_a_change():
    records = memories(300)
    warm = fresh([*map(_copy, records)])
    for query in ("redis timeout", "redis timeout", "cache token retry", "redis cache"):
        assert hits(warm, query) == hits(fresh([*map(_copy, records)]), query)
    assert warm.scores.bytes > 0
    assert hits(warm, "redis timeout", Filters(component="api")) == hits(
        fresh([*map(_copy, records)]), "redis timeout", Filters(component="api")
    )
    extra = _copy(records[0])
    extra.id, extra.content = "extra", "redis redis timeout"
    warm.apply(ChangeSet(version=2, changed=[extra]))
    assert warm.scores.bytes == 0  # a change drops them
    assert hits(warm, "redis timeout") == hits(fresh([*map(_copy, records), _copy(extra)]), "redis timeout")


def _copy(record):
    from dataclasses import replace

    return replace(record)


class MemoryVectors:
    """A deferred-vector source over a dict (the contract of ``capsule.core.records.DeferredVectors``)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def some(self, ids, model):
        return {i: self.vectors[i].astype("<f4").tobytes() for i in ids if i in self.vectors}

    def chunks(self, model):
        items = [(i, v.astype("<f4").tobytes()) for i, v in self.vectors.items()]
        for start in range(0, len(items), 500):
            yield items[start : start + 500]


def test_settling_a_large_deferred_index_reads_moves_and_sorts_without_changing_results():
    rng = np.random.default_rng(2)
    n, dim = 2200, 512  # a matrix above 4 MB: its pages come a row at a time
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"r{i:05d}" for i in range(n)]
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    texts = [" ".join(rng.choice(words, 6)) for _ in range(n)]
    from capsule.search import terms

    packed = [pack_row(i, 1000.0 + i, 2000.0 + i, vectors[i]) for i in range(n)]
    columns = IndexColumns(
        ids=ids,
        keys=[],
        vectors=bytearray(),
        vector_sizes=[],
        models=["m"] * n,
        terms=[terms.encode(t) for t in texts],
        occurred=[],
        created=[],
        helpful=[0] * n,
        unhelpful=[0] * n,
        metas=[None] * n,
        packed=bytearray(b"".join(packed)),
        packed_lengths=[len(p) for p in packed],
        deferred=MemoryVectors(dict(zip(ids, vectors))),
    )
    from capsule.core.clock import from_epoch
    from capsule.core.records import MemoryRecord

    def fetch(tenant, project, wanted):
        at = {i: k for k, i in enumerate(ids)}
        return {
            i: MemoryRecord(
                id=i,
                tenant=tenant,
                project=project,
                content=texts[at[i]],
                sha256=i,
                occurred_at=from_epoch(1000.0 + at[i]),
                created_at=from_epoch(2000.0 + at[i]),
                updated_at=from_epoch(2000.0 + at[i]),
            )
            for i in wanted
        }

    index = ProjectIndex("t", "p", "m", fetch, eager_records=0)
    index.apply(ChangeSet(version=1, columns=columns, reset=True))
    lazy = index.matrix
    assert index.deferred is not None and lazy is index._lazy

    def top(query_vector, query="alpha beta"):
        found, _ = search_indexes(
            [index],
            filters=Filters(),
            query=query,
            query_vector=query_vector,
            model_id="m",
            now=NOW,
            weights=Weights(),
            k=10,
        )
        return [(h.record.id, h.score) for h in found]

    queries = [vectors[i] for i in (3, 700, 2100)]
    before = [top(q) for q in queries]
    index.settle()
    assert index.deferred is None and index.matrix is not lazy and not index._pending
    assert np.array_equal(index.matrix[:n], vectors)
    assert [top(q) for q in queries] == before
    assert before[0][0][0] == "r00003"  # the nearest vector, with its own words
