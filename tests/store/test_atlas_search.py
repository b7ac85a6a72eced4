"""Hosted search as Atlas is meant to be used (issue 34), against the fake cluster.

scripts/atlas_fake.py answers ``$search`` per Atlas Search's documented semantics (the index's
custom analyzer run filter by filter, Lucene's BM25 over the whole index, exact filters on
mapped paths) and ``$listSearchIndexes`` with indexes that build before they are queryable.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")

from pymongo.errors import ExecutionTimeout, OperationFailure  # noqa: E402

from capsule.config import Settings  # noqa: E402
from capsule.core import text  # noqa: E402
from capsule.core.clock import FrozenClock  # noqa: E402
from capsule.core.errors import Conflict, Unavailable  # noqa: E402
from capsule.core.records import Filters, KeywordStats, MemoryRecord  # noqa: E402
from capsule.embedders import HashingEmbedder  # noqa: E402
from capsule.service.memory_service import MemoryService  # noqa: E402
from capsule.store import atlas_search, atlas_setup  # noqa: E402
from capsule.store import mongo_vector as vs  # noqa: E402
from capsule.store.mongo import MongoStore  # noqa: E402
from capsule.store.mongo_docs import record_to_doc  # noqa: E402
from capsule.store.sqlite import SQLiteStore  # noqa: E402
from scripts.atlas_fake import DocsCorpus, FakeAtlasDatabase, OperationCounter  # noqa: E402
from scripts.atlas_fake_search import Analyzer  # noqa: E402
from tests.store.test_atlas_shortlist import ready_records  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=UTC)
T1_SIZE = 1200  # several times the shortlist (<= 300), so the hosted answer is not the whole project re-ranked
EMBEDDER = HashingEmbedder(64)
SUBJECTS = [
    "the sqlite checkpoint deadlocked while workers were writing",
    "redis timeouts in the queue worker",
    "docker build cache misses after bumping the base image",
    "terraform state lock held by a crashed run",
    "python import cycles broke the loader",
    "getUserById returned stale rows from the replica",
    "the deploy went out before the migration ran",
    "ECONNREFUSED from redis.railway.internal on boot",
]
DETAILS = [
    "on monday",
    "again",
    "in staging",
    "during the release",
    "for the third time",
    "under load",
    "after the upgrade",
    "in ci",
]


def corpus_records(tenant: str, project: str, n: int, *, offset: int = 0) -> list[MemoryRecord]:
    texts = [
        f"{SUBJECTS[i % len(SUBJECTS)]} {DETAILS[(i * 3 + i // 8) % len(DETAILS)]} note {i}"
        for i in range(offset, offset + n)
    ]
    return ready_records(tenant, project, texts, start=offset)


def make_cluster(ready_after: int = 0):
    client = mongomock.MongoClient()
    corpus = DocsCorpus(EMBEDDER.dim)
    counter = OperationCounter()
    db = FakeAtlasDatabase(client.get_database("atlas"), corpus, [counter], ready_after=ready_after)
    store = MongoStore(db, transactions=False, vector_search_min=100)
    store.migrate()
    return store, db, corpus, counter


def fill(db, corpus, groups) -> None:
    seq = 0
    for tenant, project, n in groups:
        docs = []
        for record in corpus_records(tenant, project, n):
            seq += 1
            docs.append({**record_to_doc(record, seq=seq), "version": 1})
        corpus.add(docs)
        db["projects"].insert_one(
            {
                "tenant": tenant,
                "name": project,
                "version": 1,
                "purged_version": 0,
                "memories": n,
                "seq": n,
                "updated_at": 0.0,
            }
        )


@pytest.fixture
def cluster():
    store, db, corpus, counter = make_cluster()
    store.ensure_vector_index(EMBEDDER.dim)
    fill(db, corpus, (("t1", "big", T1_SIZE), ("t2", "big", 400)))
    counter.reset()
    return store, db, counter


def service(store, embedder=EMBEDDER):
    return MemoryService(
        store, embedder, clock=FrozenClock(T0), settings=Settings(embedder="hashing", query_cache_entries=0)
    )


# ---- 1. the analyzer agrees with the local tokenizer ---------------------------------------

AGREE = [
    "The workers went to fetch getUserById from redis.railway.internal and were timing out",
    "Caroline's dog didn't run fast; the sky was dry",
    "the ec2 ids: bought things, caught cries",
    "ECONNREFUSED on snake_case_names in src/app/main.py",
    "She thought the migrations were running slowly, and they ran twice",
    "retrying connections to postgres:5432 failed after 30 seconds",
]
# Where Lucene's filters cannot say what the local tokenizer says (see capsule.store.atlas_search).
DIFFER = {
    "HTTPServer": ({"httpserver"}, {"httpserver", "http", "server"}),
    "handleRequests": ({"handlerequest", "handl", "request"}, {"handlerequests", "handl", "request"}),
    "HTTP 503": ({"http", "503"}, {"http", "503", "http_503"}),
    "a de-stress": ({"de-stress", "de", "stress"}, {"de-stress", "destress", "de", "stress"}),
    "version 5": ({"version"}, {"version", "5"}),
}


def atlas_tokens(content: str) -> list[str]:
    return Analyzer(atlas_search.analyzer()).analyze(content)[0]


@pytest.mark.parametrize("content", AGREE)
def test_the_search_index_analyzer_tokenizes_as_the_local_bm25_does(content):
    assert Counter(atlas_tokens(content)) == Counter(text.tokens(content))


@pytest.mark.parametrize("content", sorted(DIFFER))
def test_the_known_differences_stay_as_documented(content):
    atlas, local = DIFFER[content]
    assert set(atlas_tokens(content)) == atlas and set(text.tokens(content)) == local


def test_the_analyzer_is_made_from_the_local_tokenizers_tables():
    found = atlas_search.analyzer()
    assert found["tokenizer"]["pattern"] == text._WORD.pattern
    stop = next(f for f in found["tokenFilters"] if f["type"] == "stopword")
    assert set(stop["tokens"]) == text.STOP_WORDS
    assert {"type": "snowballStemming", "stemmerName": "english"} in found["tokenFilters"]
    assert atlas_tokens("went") == ["go"] and atlas_tokens("brought") == ["bring"]


# ---- index definitions and pipeline shapes --------------------------------------------------


def test_the_search_index_maps_content_and_every_filter_field():
    index = atlas_search.search_index_definition()
    fields = index["definition"]["mappings"]["fields"]
    assert index["type"] == "search" and index["definition"]["mappings"]["dynamic"] is False
    assert fields["content"] == {
        "type": "string",
        "analyzer": atlas_search.ANALYZER,
        "searchAnalyzer": atlas_search.ANALYZER,
    }
    assert fields["tenant"] == fields["project"] == {"type": "token"}
    assert fields["active"] == {"type": "boolean"} and fields["occurred_at"] == {"type": "number"}
    assert set(fields["meta"]["fields"]) == {"component", "category", "tags"}


def test_the_vector_index_is_scalar_quantized_and_sized_per_embedder():
    for dims in (1536, 1024, 384):
        vector = vs.vector_index_definition(dims)["definition"]["fields"][0]
        assert (vector["numDimensions"], vector["quantization"]) == (dims, "scalar")
    assert (
        vs.vector_index_definition(1024, quantization="binary")["definition"]["fields"][0]["quantization"] == "binary"
    )
    with pytest.raises(ValueError):
        vs.vector_index_definition(1024, quantization="int4")


def test_num_candidates_is_twenty_times_the_limit_within_atlas_maximum():
    args = dict(
        tenant="t", projects=["p"], filters=Filters(), query_vector=np.ones(4, np.float32), model="m", index="v"
    )
    assert vs.vector_pipeline(**args)[0]["$vectorSearch"]["numCandidates"] == 20 * vs.VECTOR_LIMIT
    assert vs.vector_pipeline(**args, limit=1000)[0]["$vectorSearch"]["numCandidates"] == 10_000


def test_the_keyword_pipeline_filters_inside_the_index():
    filters = Filters(component="db", category="bug", tags=("a", "b"), path_prefix="src/", since=T0, until=T0)
    pipeline = atlas_search.keyword_pipeline(tenant="t1", projects=["p", "q"], filters=filters, query="redis")
    search = pipeline[0]["$search"]
    assert search["index"] == atlas_search.SEARCH_INDEX
    assert search["compound"]["must"] == [{"text": {"path": "content", "query": "redis"}}]
    clauses = search["compound"]["filter"]
    assert {"equals": {"path": "tenant", "value": "t1"}} in clauses
    assert {"equals": {"path": "active", "value": True}} in clauses
    assert {"in": {"path": "project", "value": ["p", "q"]}} in clauses
    assert {"equals": {"path": "meta.tags", "value": "a"}} in clauses and len(clauses) == 8
    assert {"range": {"path": "occurred_at", "gte": T0.timestamp(), "lt": T0.timestamp()}} in clauses
    assert [next(iter(s)) for s in pipeline[1:]] == [
        "$match",
        "$limit",
        "$addFields",
        "$project",
        "$unionWith",
        "$unionWith",
    ]
    assert pipeline[2] == {"$limit": atlas_search.KEYWORD_LIMIT}
    # in the same round trip: how many memories of the scope hold "redis", and how many it holds
    counts = [s["$unionWith"]["pipeline"] for s in pipeline[-2:]]
    assert counts[0][0]["$searchMeta"]["compound"] == {
        "filter": clauses,
        "must": [{"text": {"path": "content", "query": "redis"}}],
    }
    assert counts[1][0]["$searchMeta"]["compound"] == {"filter": clauses}
    assert counts[0][1] == {"$addFields": {atlas_search.COUNT_KEY: "redi"}}
    assert counts[1][1] == {"$addFields": {atlas_search.COUNT_KEY: None}}


def test_counts_ask_for_the_word_not_its_stem():
    # Atlas analyzes a text query: the count of "timeouts" asks for "timeouts" (-> timeout);
    # an identifier (several terms) is not counted
    assert atlas_search.counted_words("Timeouts in getUserById the redis") == {"timeout": "Timeouts", "redi": "redis"}


# ---- BM25 from the index ----------------------------------------------------------------------


def test_the_keyword_score_is_lucenes_bm25_with_the_whole_indexs_statistics(cluster):
    store, db, _ = cluster
    found, stats = atlas_search.split_counts(
        list(
            store.memories.aggregate(
                atlas_search.keyword_pipeline(tenant="t1", projects=["big"], filters=Filters(), query="terraform")
            )
        )
    )
    assert {d["tenant"] for d in found} == {"t1"} and all("terraform" in d["content"] for d in found)
    # the scope's statistics, for the service's re-ranking: t1's memories, not the index's
    assert stats == KeywordStats(n=T1_SIZE, avgdl=None, df={"terraform": T1_SIZE // 8})
    # n and N over both tenants
    analyze = Analyzer(atlas_search.analyzer()).analyze
    lengths = [analyze(d["content"])[1] for d in db.memories.corpus.docs]
    n_docs, df = len(lengths), sum("terraform" in d["content"] for d in db.memories.corpus.docs)
    avgdl = sum(lengths) / n_docs
    top = found[0]
    dl = analyze(top["content"])[1]
    expected = math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) / (1 + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))
    assert (n_docs, df) == (T1_SIZE + 400, (T1_SIZE + 400) // 8) and top["score"] == pytest.approx(expected)


def test_the_hosted_answers_are_the_embedded_stores(cluster, tmp_path):
    """The same corpus in SQLite (scored whole) and on the fake cluster (shortlisted, re-ranked):
    the same top 5 ids, in the same order, for every query."""
    store, _, _ = cluster
    local = SQLiteStore(tmp_path / "c.db")
    local.migrate()
    local.insert(corpus_records("t1", "big", T1_SIZE), limit=10_000, dedupe_after=None, actor="t")
    queries = [
        "redis timeout",
        "terraform state lock",
        "getUserById stale replica",
        "deploy migration",
        "docker cache",
        "sqlite deadlock under load",
        "import cycle loader in ci",
    ]
    on_cluster, on_sqlite = service(store), service(local)
    for query in queries:
        for mode in ("hybrid", "bm25", "vector"):
            request = {"project": "big", "query": query, "k": 5, "mode": mode}
            hosted = [h.id for h in on_cluster.search("t1", request).results]
            embedded = [h.id for h in on_sqlite.search("t1", request).results]
            assert hosted == embedded, (query, mode)


def skewed_records(n: int) -> list[MemoryRecord]:
    """Common words in most memories, rare ones in 4%: a keyword shortlist holds the rare ones far
    more often than the project does, so BM25 over the shortlist would misjudge their rarity."""
    import random

    rng = random.Random(3)
    common = ["redis", "worker", "queue", "timeout", "deploy", "build"]
    rare = ["deadlock", "checksum", "segfault", "oom"]
    texts = []
    for i in range(n):
        words = (
            rng.sample(common, 3)
            + ([rng.choice(rare)] if rng.random() < 0.04 else [])
            + [f"n{i}", rng.choice(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"])]
        )
        rng.shuffle(words)
        texts.append(" ".join(words))
    return [
        MemoryRecord(
            id=f"m{i}",
            tenant="t1",
            project="big",
            content=content,
            sha256=str(i),
            occurred_at=T0 - timedelta(hours=i),
            created_at=T0 - timedelta(hours=i),
            updated_at=T0,
            embedding=vector,
            model=EMBEDDER.model_id,
            status="ready",
        )
        for i, (content, vector) in enumerate(zip(texts, EMBEDDER.embed(texts)))
    ]


def test_the_shortlist_is_ranked_by_the_scopes_term_rarity_not_its_own(tmp_path):
    """Tolerance: the top 5 in the same order; of the top 10, at most one memory swapped at the
    tail (the shortlist's average length stands in for the project's)."""
    store, db, corpus, _ = make_cluster()
    store.ensure_vector_index(EMBEDDER.dim)
    records = skewed_records(2000)
    corpus.add([{**record_to_doc(r, seq=i + 1), "version": 1} for i, r in enumerate(records)])
    db["projects"].insert_one(
        {
            "tenant": "t1",
            "name": "big",
            "version": 1,
            "purged_version": 0,
            "memories": 2000,
            "seq": 2000,
            "updated_at": 0.0,
        }
    )
    local = SQLiteStore(tmp_path / "c.db")
    local.migrate()
    local.insert(records, limit=10_000, dedupe_after=None, actor="t")
    for query in [
        "redis deadlock",
        "worker checksum timeout",
        "queue segfault",
        "build oom deploy",
        "redis worker alpha",
        "timeout eta beta",
        "deploy zeta",
    ]:
        for mode in ("hybrid", "bm25"):
            request = {"project": "big", "query": query, "k": 10, "mode": mode}
            hosted = [h.id for h in service(store).search("t1", request).results]
            embedded = [h.id for h in service(local).search("t1", request).results]
            assert hosted[:5] == embedded[:5] and len(set(hosted) & set(embedded)) >= 9, (query, mode)


# ---- 2. the halves are independent -----------------------------------------------------------


def test_a_failing_keyword_half_leaves_the_vector_results_and_says_so(cluster, monkeypatch):
    store, db, _ = cluster

    def timeout(*args, **kwargs):
        raise ExecutionTimeout("operation exceeded time limit", code=50)

    monkeypatch.setattr(db.memories, "_search", timeout)
    result = service(store).search("t1", {"project": "big", "query": "redis timeout", "k": 5})
    assert len(result.results) == 5 and all("redis" in h.content for h in result.results)
    assert "the candidates by keyword are missing" in result.explanation
    assert "timed out" in result.explanation.lower() or "time" in result.explanation


def test_a_failing_vector_half_leaves_the_keyword_results_and_says_so(cluster, monkeypatch):
    store, db, _ = cluster

    def down(*args, **kwargs):
        raise OperationFailure("search node unavailable")

    monkeypatch.setattr(db.memories, "_vector_search", down)
    result = service(store).search("t1", {"project": "big", "query": "terraform state", "k": 5})
    assert len(result.results) == 5 and all("terraform" in h.content for h in result.results)
    assert "the candidates by meaning are missing" in result.explanation


def test_both_halves_failing_is_unavailable(cluster, monkeypatch):
    store, db, _ = cluster

    def down(*args, **kwargs):
        raise OperationFailure("search node unavailable")

    monkeypatch.setattr(db.memories, "_vector_search", down)
    monkeypatch.setattr(db.memories, "_search", down)
    with pytest.raises(Unavailable):
        service(store).search("t1", {"project": "big", "query": "terraform state", "k": 5})


def test_a_partial_answer_is_not_cached(cluster, monkeypatch):
    store, db, _ = cluster
    calls = []

    def down(*args, **kwargs):
        calls.append(1)
        raise OperationFailure("search node unavailable")

    monkeypatch.setattr(db.memories, "_search", down)
    svc = MemoryService(store, EMBEDDER, clock=FrozenClock(T0), settings=Settings(embedder="hashing"))
    for _ in range(2):
        svc.search("t1", {"project": "big", "query": "redis", "k": 3})
    assert len(calls) == 2


# ---- 4. setup-atlas -----------------------------------------------------------------------------


def test_setup_creates_both_indexes_waits_until_queryable_and_a_second_run_changes_nothing():
    store, _, _, counter = make_cluster(ready_after=2)
    lines, sleeps = [], []
    wanted = atlas_setup.wanted_indexes(1536, vector_index=store.vector_index)
    done = atlas_setup.ensure_search_indexes(
        store.memories,
        wanted,
        wait_s=60,
        poll_s=5,
        progress=lines.append,
        sleep=sleeps.append,
        clock=lambda: 5.0 * len(sleeps),
    )
    assert done == {store.vector_index: "created", atlas_search.SEARCH_INDEX: "created"}
    assert sleeps == [5, 5] and "BUILDING" in lines[2] and "READY" in lines[-1]
    counter.reset()
    again = atlas_setup.ensure_search_indexes(
        store.memories, wanted, wait_s=60, progress=lines.append, sleep=sleeps.append
    )
    assert set(again.values()) == {"unchanged"}
    assert "createSearchIndexes" not in counter.commands and "updateSearchIndex" not in counter.commands


def test_creating_an_existing_index_fails_as_on_atlas_so_setup_lists_first():
    store = make_cluster()[0]
    store.ensure_vector_index(64)
    store.ensure_vector_index(64)  # idempotent
    from pymongo.operations import SearchIndexModel

    index = atlas_search.search_index_definition()
    with pytest.raises(OperationFailure, match="already exists"):
        store.memories.create_search_index(SearchIndexModel(definition=index["definition"], name=index["name"]))


def test_setup_updates_a_changed_definition_in_place():
    store, _, _, _ = make_cluster()
    store.ensure_vector_index(1024)
    done = atlas_setup.ensure_search_indexes(
        store.memories,
        atlas_setup.wanted_indexes(1024, vector_index=store.vector_index, quantization="binary"),
        wait_s=0,
    )
    assert done[store.vector_index] == "updated" and done[atlas_search.SEARCH_INDEX] == "unchanged"


def test_setup_refuses_a_vector_index_of_other_dimensions():
    store, _, _, _ = make_cluster()
    store.ensure_vector_index(1024)
    with pytest.raises(Conflict, match="1024-dimension vectors but the embedder makes 1536"):
        atlas_setup.ensure_search_indexes(
            store.memories, atlas_setup.wanted_indexes(1536, vector_index=store.vector_index), wait_s=0
        )


def test_setup_gives_up_waiting_with_a_clear_error():
    store, _, _, _ = make_cluster(ready_after=1000)
    ticks = []
    with pytest.raises(Unavailable, match="not queryable after 20 s"):
        atlas_setup.ensure_search_indexes(
            store.memories,
            atlas_setup.wanted_indexes(64, vector_index=store.vector_index),
            wait_s=20,
            poll_s=5,
            sleep=ticks.append,
            clock=lambda: 5.0 * len(ticks),
        )


def test_a_search_index_still_building_answers_nothing():
    store, db, corpus, _ = make_cluster(ready_after=1)
    store.ensure_vector_index(EMBEDDER.dim)
    fill(db, corpus, (("t1", "big", 120),))
    assert atlas_search.split_counts(
        list(
            store.memories.aggregate(
                atlas_search.keyword_pipeline(tenant="t1", projects=None, filters=Filters(), query="redis")
            )
        )
    ) == ([], None)


def test_setup_drops_the_classic_text_indexes():
    client = mongomock.MongoClient()
    memories = client.db.memories
    memories.create_index([("tenant", 1), ("content", "text")], name="tenant_text")
    assert atlas_setup.drop_old_text_indexes(memories) == ["tenant_text"]
    assert atlas_setup.drop_old_text_indexes(memories) == []
