"""Search of a large project through the cluster's indexes only ($vectorSearch, $search).

The cluster is scripts/atlas_fake.py: it executes $vectorSearch exactly (cosine over every
memory passing the pre-filter), refuses filters the shipped index does not declare, answers
$search with Lucene's BM25 over the Atlas Search index (filters refused unless the index maps
them), and raises ProjectLoaded on any other read of the memories, so every search here proves
the project was never read whole.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")

from capsule.config import Settings, index_budget_mb  # noqa: E402
from capsule.core.clock import FrozenClock  # noqa: E402
from capsule.core.errors import Unavailable  # noqa: E402
from capsule.core.records import Filters, MemoryRecord  # noqa: E402
from capsule.embedders import HashingEmbedder  # noqa: E402
from capsule.service.memory_service import MemoryService  # noqa: E402
from capsule.store import atlas_search  # noqa: E402
from capsule.store import mongo_vector as vs  # noqa: E402
from capsule.store.mongo import MongoStore  # noqa: E402
from capsule.store.mongo_docs import record_to_doc  # noqa: E402
from scripts.atlas_fake import DocsCorpus, FakeAtlasDatabase, OperationCounter, ProjectLoaded  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(64)
TOPICS = [
    "sqlite deadlock on checkpoint",
    "redis timeout in the worker",
    "docker build cache miss",
    "terraform state lock held",
    "python import cycle in the loader",
]


class Down:
    model_id, dim = EMBEDDER.model_id, EMBEDDER.dim

    def embed(self, texts, *, kind="document"):
        raise Unavailable("the provider is down")


def ready_records(tenant: str, project: str, texts: list[str], *, start: int = 0) -> list[MemoryRecord]:
    """Embedded, ready memories of ``texts``, the i-th (from ``start``) an hour older than the one before."""
    vectors = EMBEDDER.embed(texts)
    return [
        MemoryRecord(
            id=f"{tenant}-{project}-{i}",
            tenant=tenant,
            project=project,
            content=text,
            sha256=f"{tenant}{project}{i}",
            occurred_at=T0 - timedelta(hours=i),
            created_at=T0 - timedelta(hours=i),
            updated_at=T0,
            embedding=vector,
            model=EMBEDDER.model_id,
            status="ready",
        )
        for i, (text, vector) in enumerate(zip(texts, vectors), start=start)
    ]


def memories(tenant: str, project: str, n: int) -> list[MemoryRecord]:
    return ready_records(tenant, project, [f"{TOPICS[i % len(TOPICS)]} case {i} in {project}" for i in range(n)])


@pytest.fixture
def cluster():
    client = mongomock.MongoClient()
    corpus = DocsCorpus(EMBEDDER.dim)
    counter = OperationCounter()
    db = FakeAtlasDatabase(client.get_database("atlas"), corpus, [counter])
    store = MongoStore(db, transactions=False, vector_search_min=100)
    store.migrate()
    store.ensure_vector_index(EMBEDDER.dim)
    seq = 0
    for tenant, project, n in (("t1", "big", 400), ("t1", "other", 150), ("t2", "big", 300)):
        docs = []
        for record in memories(tenant, project, n):
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
    counter.reset()
    yield store, counter
    client.close()


def service(store, embedder=EMBEDDER):
    return MemoryService(
        store, embedder, clock=FrozenClock(T0), settings=Settings(embedder="hashing", query_cache_entries=0)
    )


def test_a_large_project_is_ranked_from_the_clusters_shortlist(cluster):
    store, counter = cluster
    result = service(store).search("t1", {"project": "big", "query": "redis timeout in the worker", "k": 5})
    assert [h.project for h in result.results] == ["big"] * 5
    assert all("redis timeout" in h.content for h in result.results)
    # which project "big" names (one indexed read: capsule.core.project_identity), the project versions, the
    # project sizes (counters), $vectorSearch, $search: nothing else
    assert counter.commands == ["find_one", "find", "find", "aggregate", "aggregate"]


@pytest.mark.parametrize("how", ["bm25", "down", "global"])
def test_keyword_mode_a_down_embedder_and_global_search_take_the_bounded_path(cluster, how):
    store, counter = cluster
    request = {"project": "big", "query": "terraform state lock", "k": 8}
    embedder = Down() if how == "down" else EMBEDDER
    if how == "bm25":
        request["mode"] = "bm25"
    if how == "global":
        request["global"] = True
    result = service(store, embedder).search("t1", request)  # ProjectLoaded if anything read it whole
    assert len(result.results) == 8 and all("terraform" in h.content for h in result.results)
    assert {h.id.split("-")[0] for h in result.results} == {"t1"}
    if how == "global":
        assert {h.project for h in result.results} == {"big", "other"}
    if how != "global":
        assert counter.commands.count("aggregate") == 1  # no vector: keyword candidates ($search) only


def test_the_old_full_load_is_what_the_fake_refuses(cluster):
    store, _ = cluster
    with pytest.raises(ProjectLoaded):
        store.changes_since("t1", "big", 0)
    with pytest.raises(ProjectLoaded):
        store.candidates("t1", ["big"], Filters())


def test_filters_become_prefilters_the_shipped_index_declares(cluster):
    store, _ = cluster
    near = store.nearest_candidates(
        "t1",
        ["big"],
        Filters(component="db", tags=("a",)),
        query="sqlite",
        query_vector=EMBEDDER.embed(["sqlite"])[0],
        model=EMBEDDER.model_id,
    )
    assert near == []  # no memory has that component; the fake accepted every filter path
    from pymongo.errors import OperationFailure

    with pytest.raises(OperationFailure, match="status"):  # a path the index does not declare: refused
        store.memories.aggregate(
            [
                {
                    "$vectorSearch": {
                        "index": store.vector_index,
                        "path": "embedding",
                        "queryVector": vs.encode_vector(np.ones(64)),
                        "numCandidates": 10,
                        "limit": 5,
                        "filter": {"$and": [{"tenant": "t1"}, {"status": "ready"}]},
                    }
                }
            ]
        )


def test_the_keyword_half_filters_inside_the_search_index_and_refuses_an_unmapped_path(cluster):
    store, _ = cluster
    found, _ = atlas_search.split_counts(
        list(
            store.memories.aggregate(
                atlas_search.keyword_pipeline(tenant="t2", projects=None, filters=Filters(), query="redis")
            )
        )
    )
    assert found and {d["tenant"] for d in found} == {"t2"}
    from pymongo.errors import OperationFailure

    with pytest.raises(OperationFailure, match="status"):  # a filter the index does not map: refused
        store.memories.aggregate(
            [
                {
                    "$search": {
                        "index": atlas_search.SEARCH_INDEX,
                        "compound": {
                            "filter": [{"equals": {"path": "status", "value": "ready"}}],
                            "must": [{"text": {"path": "content", "query": "redis"}}],
                        },
                    }
                }
            ]
        )


def test_the_vector_half_sees_only_the_tenants_own_memories(cluster):
    store, _ = cluster
    near = store.nearest_candidates(
        "t2", None, Filters(), query="", query_vector=EMBEDDER.embed(["redis"])[0], model=EMBEDDER.model_id
    )
    assert len(near) == vs.VECTOR_LIMIT and {r.tenant for r in near} == {"t2"}


def test_a_scope_below_the_threshold_is_not_shortlisted(cluster):
    store, _ = cluster
    store.vector_search_min = 10_000
    assert store.nearest_candidates("t1", None, Filters(), query="x", query_vector=None, model="m") is None


def test_the_index_budget_follows_the_functions_memory():
    assert Settings.from_env({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}).index_memory_mb == index_budget_mb(1024)
    assert index_budget_mb(1024) == 256
    assert (
        Settings.from_env({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "CAPSULE_INDEX_MEMORY_MB": "100"}).index_memory_mb
        == 100
    )
    assert Settings.from_env({}).index_memory_mb == 1024
