"""Global search (``"global": true``) chooses its candidates across every project in one pass
(capsule.search.globalsearch), and answers what the per-project path answers: the same hits with the
same scores on a seeded multi-project corpus, with filters, with a project of a few rows
beside large ones, recall@10 >= 0.99 against exact float32 at each first stage, and a number
of rows scored that follows the candidates asked for, not the number of projects. Sizes are
small; no timing is asserted."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.records import ChangeSet, Filters, MemoryRecord
from capsule.search import globalsearch, hamming, tenantpostings
from capsule.search.globalsearch import TenantCodes, candidate_rows, search_global
from capsule.search.hybrid import (
    SearchOptions,
    _keyword_stage,
    _query_vector,
    _vector_ok,
    _views,
    search_indexes,
)
from capsule.search.index import ProjectIndex
from capsule.search.tenantpostings import TenantPostings
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from capsule_cli.bench_data import TableEmbedder, exact_top, make_dataset

PROJECTS, PER, DIM, QUERIES = 12, 800, 256, 40
MODEL = f"bench-{DIM}"
BASE = datetime(2025, 1, 1, tzinfo=UTC)
NOW = datetime(2025, 6, 1, tzinfo=UTC)
WEIGHTS = Settings().weights
needs_faiss = pytest.mark.skipif(not hamming.available(), reason="faiss-cpu is not installed")


@pytest.fixture(scope="module")
def data():
    return make_dataset(PROJECTS * PER, DIM, QUERIES, seed=5)


def record(data, i: int, project: str) -> MemoryRecord:
    at = BASE + timedelta(hours=i)
    meta = {"component": "api" if i % 3 == 0 else "web"}
    return MemoryRecord(
        id=f"m{i:07d}",
        tenant="t",
        project=project,
        content=data.texts[i],
        sha256=f"{i:064x}",
        occurred_at=at,
        created_at=at,
        updated_at=at,
        embedding=data.vectors[i].copy(),
        model=MODEL,
        meta=meta,
    )


def project_of(i: int) -> str:
    return f"p{i % PROJECTS:02d}"


def build_indexes(data) -> list[ProjectIndex]:
    by_project: dict[str, list[MemoryRecord]] = {}
    for i in range(len(data.texts)):
        by_project.setdefault(project_of(i), []).append(record(data, i, project_of(i)))
    out = []
    for project in sorted(by_project):
        index = ProjectIndex("t", project, MODEL)
        index.apply(ChangeSet(version=1, changed=by_project[project], reset=True))
        out.append(index)
    return out


@pytest.fixture(scope="module")
def indexes(data):
    return build_indexes(data)


def both(indexes, data, q: int, *, filters=Filters(), weights=WEIGHTS, options=SearchOptions(), k=10):
    args = dict(
        filters=filters,
        query=data.query_texts[q],
        query_vector=data.queries[q],
        model_id=MODEL,
        now=NOW,
        weights=weights,
        k=k,
        options=options,
    )
    return search_indexes(indexes, **args), search_global(indexes, **args)


def same(per_project, global_) -> None:
    (old, old_n), (new, new_n) = per_project, global_
    assert new_n == old_n
    assert [h.record.id for h in new] == [h.record.id for h in old]
    assert [h.score for h in new] == pytest.approx([h.score for h in old], abs=1e-12)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "bm25"])
def test_the_same_hits_and_scores_as_the_per_project_path(indexes, data, mode):
    weights = {"hybrid": WEIGHTS, "vector": WEIGHTS.replace(bm25=0.0), "bm25": WEIGHTS.replace(vector=0.0)}[mode]
    for q in range(QUERIES):
        same(*both(indexes, data, q, weights=weights))


def test_the_same_with_filters_and_every_hit_passes_them(indexes, data):
    filters = Filters(component="api", since=BASE + timedelta(hours=2000), until=BASE + timedelta(hours=8000))
    for q in range(0, QUERIES, 4):
        old, new = both(indexes, data, q, filters=filters)
        same(old, new)
        assert new[1] < PROJECTS * PER
        for hit in new[0]:
            assert hit.record.meta["component"] == "api"
            assert filters.since <= hit.record.occurred_at < filters.until


def test_a_project_of_a_few_rows_beside_large_ones(indexes, data):
    tiny = ProjectIndex("t", "tiny", MODEL)
    rng = np.random.default_rng(3)
    rows, vectors = [], []
    for j in range(3):
        vector = rng.standard_normal(DIM).astype(np.float32)
        vector /= np.linalg.norm(vector)
        vectors.append(vector.copy())  # an index keeps a record's vector in its matrix, not the record
        at = BASE + timedelta(days=j)
        rows.append(
            MemoryRecord(
                id=f"tiny{j}",
                tenant="t",
                project="tiny",
                content=f"zephyr{j} note",
                sha256=f"{j:064x}",
                occurred_at=at,
                created_at=at,
                updated_at=at,
                embedding=vector,
                model=MODEL,
            )
        )
    tiny.apply(ChangeSet(version=1, changed=rows, reset=True))
    everything = [*indexes, tiny]
    for j in range(len(rows)):
        args = dict(
            filters=Filters(),
            query=f"zephyr{j}",
            query_vector=vectors[j],
            model_id=MODEL,
            now=NOW,
            weights=WEIGHTS,
            k=10,
        )
        hits, _ = search_global(everything, **args)
        assert hits[0].record.id == f"tiny{j}"
        assert hits[0].vector == pytest.approx(1.0, abs=1e-6)  # its exact float32 cosine
        old, _ = search_indexes(everything, **args)
        assert (old[0].record.id, old[0].score) == (hits[0].record.id, pytest.approx(hits[0].score, abs=1e-12))


STAGES = {
    "numpy, one pass": SearchOptions(library_from=10**9, prefix_words=8),
    "numpy, leading bits then all": SearchOptions(library_from=10**9, prefix_words=2),
    "faiss, leading bits then all": SearchOptions(library_from=1, prefix_words=2),
    "exact": SearchOptions(exact=True),
}


@pytest.mark.parametrize("stage", list(STAGES))
def test_recall_at_10_against_exact_float32_at_every_stage(indexes, data, stage):
    options = STAGES[stage]
    if "faiss" in stage and not hamming.available():
        pytest.skip("faiss-cpu is not installed")
    truth = exact_top(data.vectors, data.queries)
    weights = WEIGHTS.replace(bm25=0.0, time=0.0, feedback=0.0)
    hits = 0
    for q in range(QUERIES):
        found, _ = search_global(
            indexes,
            filters=Filters(),
            query=data.query_texts[q],
            query_vector=data.queries[q],
            model_id=MODEL,
            now=NOW,
            weights=weights,
            k=10,
            options=options,
        )
        got = {int(h.record.id[1:]) for h in found}
        hits += len(got & set(truth[q].tolist()))
        # Returned scores are exact float32 cosines.
        for h in found:
            assert h.vector == pytest.approx(
                float(np.clip(data.vectors[int(h.record.id[1:])] @ data.queries[q], 0, 1)), abs=1e-5
            )
    assert hits / (10 * QUERIES) >= 0.99


def test_rows_scored_follow_the_candidates_not_the_projects(indexes, data):
    """Per project, each of 12 projects would re-score its own 100 vector and 100 keyword
    candidates (up to 2,400 rows); across projects, at most 100 of each stage in all."""
    options = SearchOptions(candidates=100)
    views, _ = _views(indexes, Filters())
    q = _query_vector(data.queries[0], WEIGHTS)
    top = _keyword_stage(views, data.query_texts[0], WEIGHTS, options)
    capable = [_vector_ok(v.index, q, MODEL) for v in views]
    chosen = candidate_rows(views, capable, q, options, top, [], TenantCodes())
    total = sum(rows.size for rows in chosen)
    assert 100 <= total <= 200
    assert sum(1 for rows in chosen if rows.size) > 1  # candidates come from several projects


def test_tenant_codes_are_rebuilt_when_an_index_changes(indexes, data):
    codes = TenantCodes()
    first = codes.of(indexes, 2)
    assert codes.of(indexes, 2) is first
    extra = ProjectIndex("t", "extra", MODEL)
    extra.apply(ChangeSet(version=1, changed=[record(data, 0, "extra")], reset=True))
    grown = codes.of([*indexes, extra], 2)
    assert grown is not first and grown.prefix.shape[0] == first.prefix.shape[0] + 1
    extra.apply(ChangeSet(version=2, changed=[record(data, 1, "extra")]))
    assert codes.of([*indexes, extra], 2).prefix.shape[0] == first.prefix.shape[0] + 2


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_the_same_where_the_tenant_is_too_large_to_join(indexes, data, mode, monkeypatch):
    """Above JOIN_MAX each index's codes and vectors are read on their own (the corpus above
    is joined): the same hits and scores either way."""
    monkeypatch.setattr(globalsearch, "JOIN_MAX", 0)
    assert TenantCodes().columns(indexes).joined(indexes, "matrix", DIM) is None
    weights = WEIGHTS if mode == "hybrid" else WEIGHTS.replace(bm25=0.0)
    for q in range(0, QUERIES, 4):
        same(*both(indexes, data, q, weights=weights))


def test_a_small_tenant_joins_its_codes_and_vectors_once(indexes, data):
    columns = TenantCodes().columns(indexes)
    matrix = columns.joined(indexes, "matrix", DIM)
    assert matrix.shape == (PROJECTS * PER, DIM)
    assert np.array_equal(matrix[PER : 2 * PER], indexes[1].vectors(np.arange(PER)))
    assert columns.joined(indexes, "matrix", DIM) is matrix  # kept with the columns
    assert columns.joined(indexes, "row_codes", indexes[0].words).shape[0] == PROJECTS * PER
    assert columns.joined(indexes, "matrix", DIM + 1) is None  # another model's width: each read alone


def test_an_index_with_vectors_still_in_the_store_is_not_joined(indexes, data):
    lazy = ProjectIndex("t", "lazy", MODEL)
    lazy.apply(ChangeSet(version=1, changed=[record(data, 0, "lazy")], reset=True))
    lazy.deferred, lazy.filled = object(), np.zeros(lazy.n, dtype=bool)  # as an index loaded as columns is
    both_kinds = [*indexes, lazy]
    columns = TenantCodes().columns(both_kinds)
    assert columns.joined(both_kinds, "matrix", DIM) is None
    lazy.deferred, lazy.filled = None, np.ones(lazy.n, dtype=bool)  # read beside the searches (settle)
    assert columns.joined(both_kinds, "matrix", DIM).shape == (PROJECTS * PER + 1, DIM)  # no stamp changed


def same_with(codes: TenantCodes, indexes, data, queries) -> None:
    """The per-project path and a global search through ``codes`` (its kept tables), alike."""
    for q in queries:
        args = dict(
            filters=Filters(),
            query=data.query_texts[q],
            query_vector=data.queries[q],
            model_id=MODEL,
            now=NOW,
            weights=WEIGHTS,
            k=10,
            options=SearchOptions(),
        )
        same(search_indexes(indexes, **args), search_global(indexes, codes=codes, **args))


def test_a_write_keeps_the_sorted_postings_and_the_answers_stay_the_same(data):
    """Sorting a tenant's postings is what a global search after a write paid for (2-3 s at 1M):
    the table is kept, and the indexes changed since are read from their own postings."""
    indexes = build_indexes(data)
    codes = TenantCodes()
    table = codes.columns(indexes).postings.table
    fact = replace(
        record(data, 0, indexes[3].project),
        id="new-fact",
        content=data.query_texts[0],
        embedding=data.queries[0].copy(),
    )
    indexes[3].apply(ChangeSet(version=2, changed=[fact]))
    gone = next(iter(indexes[5].row_of))
    indexes[5].apply(ChangeSet(version=2, removed=[gone]))
    postings = codes.columns(indexes).postings
    assert postings.table is table and postings.stale == (3, 5)
    same_with(codes, indexes, data, range(0, QUERIES, 4))
    hits, _ = search_global(
        indexes,
        filters=Filters(),
        query=data.query_texts[0],
        query_vector=data.queries[0],
        model_id=MODEL,
        now=NOW,
        weights=WEIGHTS,
        k=10,
        codes=codes,
    )
    assert hits[0].record.id == "new-fact"  # found through index 3's own postings
    assert gone not in {h.record.id for h in hits}


def test_a_new_project_is_read_on_its_own_until_the_postings_are_sorted_again(data, monkeypatch):
    indexes = build_indexes(data)
    codes = TenantCodes()
    table = codes.columns(indexes).postings.table
    extra = ProjectIndex("t", "p-new", MODEL)
    extra.apply(ChangeSet(version=1, changed=[replace(record(data, 7, "p-new"), id="new-project-row")], reset=True))
    grown = [*indexes[:4], extra, *indexes[4:]]
    postings = codes.columns(grown).postings
    assert postings.table is table and postings.stale == (4,)
    same_with(codes, grown, data, range(1, QUERIES, 4))
    monkeypatch.setattr(tenantpostings, "STALE_MAX", 2)
    for index in grown[:3]:
        index.apply(
            ChangeSet(version=3, changed=[replace(record(data, 11, index.project), id=f"late-{index.project}")])
        )
    postings = codes.columns(grown).postings
    assert postings.table is not table and postings.stale == ()  # 4 read on their own: sorted again
    same_with(codes, grown, data, range(2, QUERIES, 4))


def test_past_stale_max_the_postings_are_sorted_beside_the_searches(data, monkeypatch):
    """With a thread to run it on (the service's), the new sort does not hold up a search:
    the changed indexes are read on their own until the new table is ready."""
    monkeypatch.setattr(tenantpostings, "STALE_MAX", 2)
    indexes = build_indexes(data)
    tasks: list = []
    codes = TenantCodes(tasks.append)
    table = codes.columns(indexes).postings.table
    for index in indexes[:3]:
        index.apply(
            ChangeSet(version=3, changed=[replace(record(data, 13, index.project), id=f"late-{index.project}")])
        )
    postings = codes.columns(indexes).postings
    assert postings.table is table and postings.stale == (0, 1, 2) and len(tasks) == 1
    same_with(codes, indexes, data, range(0, QUERIES, 4))
    assert len(tasks) == 1  # one sort at a time
    tasks.pop()()  # the background thread runs it
    postings = codes.columns(indexes).postings
    assert postings.table is not table and postings.stale == ()
    same_with(codes, indexes, data, range(1, QUERIES, 4))


def test_a_large_tenants_first_table_is_sorted_beside_the_searches(data, monkeypatch):
    """Sorting a large tenant's first table held up its first global search (23M postings at
    1M memories: 4.4 s); meanwhile every index is read from its own postings."""
    monkeypatch.setattr(tenantpostings, "SORT_BESIDE_FROM", 1)
    indexes = build_indexes(data)
    tasks: list = []
    codes = TenantCodes(tasks.append)
    postings = codes.columns(indexes).postings
    assert postings.stale == tuple(range(len(indexes))) and not postings.table.places and len(tasks) == 1
    same_with(codes, indexes, data, range(0, QUERIES, 4))
    assert len(tasks) == 1 and codes.columns(indexes).postings is postings  # kept, not sorted again
    tasks.pop()()
    postings = codes.columns(indexes).postings
    assert postings.stale == () and len(postings.table.places) == len(indexes)
    same_with(codes, indexes, data, range(1, QUERIES, 4))


def test_a_table_of_other_indexes_is_not_kept(data):
    tasks: list = []
    codes = TenantCodes(tasks.append)
    first = codes.columns(build_indexes(data)[:6]).postings.table
    others = build_indexes(data)[6:]
    postings = codes.columns(others).postings
    assert postings.table is not first and postings.stale == () and not tasks  # sorted at once: nothing to keep
    same_with(codes, others, data, range(0, QUERIES, 8))


def test_the_service_answers_global_searches_from_one_pass(tmp_path, data):
    store = SQLiteStore(tmp_path / "g.db")
    store.migrate()
    for p in range(4):
        rows = [record(data, i, f"p{p}") for i in range(p, 2000, 4)]
        store.insert(rows, limit=10_000, dedupe_after=None, actor="test")
    table = dict(zip(data.query_texts, data.queries))
    service = MemoryService(
        store, TableEmbedder(table, DIM), settings=Settings(data_dir=tmp_path, query_cache_entries=0)
    )
    try:
        for q in range(5):
            answer = service.search("t", {"global": True, "query": data.query_texts[q], "k": 10})
            indexes = [service.indexes.get("t", f"p{p}", MODEL) for p in range(4)]
            expected, _ = search_indexes(
                indexes,
                filters=Filters(),
                query=data.query_texts[q],
                query_vector=data.queries[q],
                model_id=MODEL,
                now=service.clock(),
                weights=WEIGHTS,
                k=10,
            )
            assert [h.id for h in answer.results] == [h.record.id for h in expected]
            assert len(service._tenant_codes._kept) == 1  # the tenant's codes kept between searches
            assert service._tenant_codes._resorter is not None  # postings sorted again on the index thread
    finally:
        store.close()


@pytest.fixture(scope="module")
def mixed(data, indexes):
    """Besides the plain projects, two of chat turns (sessions of 8, two authors: the session
    window, the chat priors and the author boost apply there) and one of long memories."""
    out = list(indexes[:6])
    for p in range(2):
        index = ProjectIndex("t", f"chat{p}", MODEL)
        rows = []
        for j, i in enumerate(range(p, 1600, 2)):
            r = record(data, i, f"chat{p}")
            r.id = f"c{p}{i:06d}"
            r.meta = {"session": f"s{j // 8}", "author": "ann" if j % 2 else "bob"}
            r.content = r.content + ("?" if j % 5 == 0 else "")
            rows.append(r)
        index.apply(ChangeSet(version=1, changed=rows, reset=True))
        out.append(index)
    long = ProjectIndex("t", "long", MODEL)
    rows = []
    for i in range(300):
        r = record(data, i, "long")
        r.id = f"l{i:06d}"
        r.content = " ".join(data.texts[i : i + 5])  # about 70 tokens: the long-memory prior applies
        rows.append(r)
    long.apply(ChangeSet(version=1, changed=rows, reset=True))
    out.append(long)
    return out


@pytest.mark.parametrize("suffix", ["", " ann", " on March 3, 2025"])
def test_the_same_over_projects_with_their_own_ranking_aids(mixed, data, suffix):
    """Every row a candidate (the per-project path re-scores 500 of each project's 800, the
    global one 500 of all): the scores, aids included, are then compared row for row."""
    options = SearchOptions(candidates=8000)
    for q in range(0, QUERIES, 2):
        args = dict(
            filters=Filters(),
            query=data.query_texts[q] + suffix,
            query_vector=data.queries[q],
            model_id=MODEL,
            now=NOW,
            weights=WEIGHTS,
            k=10,
            options=options,
        )
        same(search_indexes(mixed, **args), search_global(mixed, **args))


def test_a_time_named_query_finds_what_happened_then_in_every_project(indexes, data):
    args = dict(
        filters=Filters(),
        query="what happened on March 3, 2025",
        query_vector=None,
        model_id=MODEL,
        now=NOW,
        weights=WEIGHTS,
        k=30,
    )
    old, new = search_indexes(indexes, **args), search_global(indexes, **args)
    same(old, new)
    assert len({h.record.project for h in new[0]}) == PROJECTS  # 24 hours: two rows of each project
    # "2025" is also a keyword of some memories (w2025): most hits, not all, are of that day.
    assert sum(h.record.occurred_at.date().isoformat() == "2025-03-03" for h in new[0]) >= 20


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_project_without_vectors_beside_others(indexes, data, mode):
    """A project whose memories have no vector yet (pending embedding: an index of zero code
    words) searched with projects that have them: its rows are left to the keyword stage, and
    the two-pass vector stage skips it (it answered 500 under fuzzing)."""
    bare = ProjectIndex("t", "pending", MODEL)
    rows = [record(data, i, "pending") for i in range(5)]
    for r in rows:
        r.embedding, r.model, r.status = None, None, "pending_embedding"
    bare.apply(ChangeSet(version=1, changed=rows, reset=True))
    assert bare.words == 0
    weights = WEIGHTS if mode == "hybrid" else WEIGHTS.replace(bm25=0.0)
    for q in range(3):
        for options in (SearchOptions(), SearchOptions(prefix_words=2)):  # one pass, and two
            same(*both([*indexes[:3], bare], data, q, weights=weights, options=options))


def test_kept_term_scores_give_the_same_answers_and_go_with_a_change(data, monkeypatch):
    indexes = build_indexes(data)
    codes = TenantCodes()

    def args(q):
        return dict(
            filters=Filters(),
            query=data.query_texts[q],
            query_vector=data.queries[q],
            model_id=MODEL,
            now=NOW,
            weights=WEIGHTS,
            k=10,
        )

    looked = []
    original = TenantPostings.rows_of
    monkeypatch.setattr(TenantPostings, "rows_of", lambda self, *a: looked.append(1) or original(self, *a))
    first = [search_global(indexes, codes=codes, **args(q)) for q in range(QUERIES)]
    cold = len(looked)
    again = [search_global(indexes, codes=codes, **args(q)) for q in range(QUERIES)]
    assert len(looked) == cold and codes.columns(indexes).scores.bytes > 0  # every term was kept
    for one, two, q in zip(first, again, range(QUERIES)):
        assert [(h.record.id, h.score) for h in one[0]] == [(h.record.id, h.score) for h in two[0]]
        same(search_indexes(indexes, **args(q)), one)
    indexes[0].apply(ChangeSet(version=2, changed=[record(data, 1, indexes[0].project)]))
    assert codes.columns(indexes).scores.bytes == 0  # the change made new columns
    for q in range(QUERIES):
        kept = search_global(indexes, codes=codes, **args(q))
        assert [(h.record.id, h.score) for h in kept[0]] == [
            (h.record.id, h.score) for h in search_global(indexes, codes=TenantCodes(), **args(q))[0]
        ]


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_the_sparse_keyword_stage_gives_the_same_global_answers(data, mode, monkeypatch):
    indexes = build_indexes(data)
    weights = {"hybrid": WEIGHTS, "bm25": WEIGHTS.replace(vector=0.0)}[mode]
    taken = []
    original = globalsearch.sparse_keyword
    monkeypatch.setattr(globalsearch, "sparse_keyword", lambda *a: taken.append(1) or original(*a))
    for q in range(QUERIES):
        answers = []
        for sparse_from in (0, 10**9):
            found, n = search_global(
                indexes,
                filters=Filters(),
                query=data.query_texts[q],
                query_vector=data.queries[q],
                model_id=MODEL,
                now=NOW,
                weights=weights,
                k=10,
                options=SearchOptions(candidates=40, sparse_from=sparse_from),
            )
            answers.append(([(h.record.id, h.score, h.bm25, h.vector) for h in found], n))
        assert answers[0] == answers[1], q
    assert len(taken) == QUERIES


def test_the_sparse_keyword_stage_over_projects_with_their_own_aids(mixed, data, monkeypatch):
    """Plain projects beside one of long memories (its own b and length prior, scored on its
    own): the sparse stage is taken (no chat of short turns) and answers as the per-row one."""
    views = [i for i in mixed if not i.project.startswith("chat")]
    taken = []
    original = globalsearch.sparse_keyword
    monkeypatch.setattr(globalsearch, "sparse_keyword", lambda *a: taken.append(original(*a)) or taken[-1])
    for q in range(QUERIES):
        answers = []
        for sparse_from in (0, 10**9):
            found, _ = search_global(
                views,
                filters=Filters(),
                query=data.query_texts[q],
                query_vector=data.queries[q],
                model_id=MODEL,
                now=NOW,
                weights=WEIGHTS,
                k=10,
                options=SearchOptions(candidates=60, sparse_from=sparse_from),
            )
            answers.append([(h.record.id, h.score, h.bm25, h.vector, h.boost) for h in found])
        assert answers[0] == answers[1], q
    assert any(t is not None for t in taken)


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_int8_copies_give_the_same_answers_reading_few_vectors(data, mode, monkeypatch):
    """Where indexes have int8 copies (capsule.search.quantized), the tenant's candidates are
    re-scored from their bounds and only those that can be among the k best read their float32
    vectors: the very same hits and scores. Indexes without a copy, and rows a copy does not
    hold (added after it), are read exactly beside them."""
    from capsule.search import quantized

    monkeypatch.setattr(quantized, "QUANT_FROM", 100)
    monkeypatch.setattr(globalsearch, "JOIN_MAX", 0)  # each index read on its own, as at 1M
    plain, copied = build_indexes(data), build_indexes(data)
    for index in copied[:-2]:  # the last two without a copy
        assert index.quantize()
    late = [record(data, i, copied[0].project) for i in range(PER * PROJECTS - 30, PER * PROJECTS)]
    for index in (plain[0], copied[0]):  # rows the copy does not hold
        index.apply(ChangeSet(version=2, changed=[replace(r, id=r.id + "x") for r in late]))
    assert copied[0].quant.n < copied[0].n
    weights = WEIGHTS if mode == "hybrid" else WEIGHTS.replace(bm25=0.0)
    queries = range(0, QUERIES, 2)
    expected = [both(plain, data, q, weights=weights)[1][0] for q in queries]  # every vector read
    read = []
    real = globalsearch._plain_dots

    def counted(views, columns, rows, with_vec, q):
        read.append((int(with_vec.sum()), rows.size))
        return real(views, columns, rows, with_vec, q)

    monkeypatch.setattr(globalsearch, "_plain_dots", counted)
    for q, want in zip(queries, expected):
        per_project, global_ = both(copied, data, q, weights=weights)
        same(per_project, global_)
        assert [(h.record.id, h.score, h.vector) for h in global_[0]] == [
            (h.record.id, h.score, h.vector) for h in want
        ]
    assert read and all(exact < candidates / 4 for exact, candidates in read)


def test_a_postings_table_keeps_each_term_once_and_finds_every_posting():
    from capsule.search.tenantpostings import PostingsTable

    one = (np.array([3, 3, 7, 9]), np.array([0, 4, 1, 2], dtype=np.int32), np.array([1, 2, 1, 3], dtype=np.float32))
    two = (np.array([-5, 3, 9]), np.array([7, 8, 9], dtype=np.int32), np.array([4, 5, 6], dtype=np.float32))
    table = PostingsTable.of_parts([((1, 0), one), ((2, 0), two)])
    assert table.terms.tolist() == [-5, 3, 7, 9] and table.offsets.tolist() == [0, 1, 4, 5, 7]
    found = {
        h: sorted(
            zip(
                table.owner[slice(*table.span(h))].tolist(),
                table.local[slice(*table.span(h))].tolist(),
                table.counts[slice(*table.span(h))].tolist(),
            )
        )
        for h in (-5, 3, 7, 9, 4, 10, -9)
    }
    assert found == {
        -5: [(1, 7, 4.0)],
        3: [(0, 0, 1.0), (0, 4, 2.0), (1, 8, 5.0)],
        7: [(0, 1, 1.0)],
        9: [(0, 2, 3.0), (1, 9, 6.0)],
        4: [],
        10: [],
        -9: [],
    }
    assert PostingsTable.of_parts([]).span(3) == (0, 0)
