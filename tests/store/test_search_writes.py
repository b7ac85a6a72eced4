"""A hosted search writes nothing (issue 34): the query's vector is kept per tenant in the warm
process, not in the cluster's cross-tenant ``embedding_cache``; the embedded store keeps its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")

from capsule.config import Settings  # noqa: E402
from capsule.core.clock import FrozenClock  # noqa: E402
from capsule.core.errors import Unavailable  # noqa: E402
from capsule.core.records import MemoryRecord  # noqa: E402
from capsule.core.text import sha256  # noqa: E402
from capsule.embedders import HashingEmbedder  # noqa: E402
from capsule.embedders.cached import CachedEmbedder  # noqa: E402
from capsule.service.memory_service import MemoryService  # noqa: E402
from capsule.store.mongo import MongoStore  # noqa: E402
from capsule.store.mongo_docs import record_to_doc  # noqa: E402
from capsule.store.sqlite import SQLiteStore  # noqa: E402
from scripts.atlas_fake import DocsCorpus, FakeAtlasDatabase, OperationCounter  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=UTC)
SIZE = 150  # over the store's threshold below: the search goes to $vectorSearch and $search
WRITES = ("insert", "update", "delete", "replace", "find_one_and", "bulk", "create", "drop")


class PaidEmbedder(HashingEmbedder):
    """A hashing embedder that counts its calls and is worth caching, as a hosted model is."""

    worth_caching = True

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.failing = False

    def embed(self, texts, *, kind="document"):
        if self.failing:
            raise Unavailable("the embedding provider timed out")
        self.calls.append((kind, tuple(texts)))
        return super().embed(texts, kind=kind)


def records(tenant: str, n: int) -> list[MemoryRecord]:
    texts = [
        f"redis timeouts in the queue worker note {i}" if i % 3 else f"docker build cache note {i}" for i in range(n)
    ]
    vectors = HashingEmbedder(64).embed(texts)
    return [
        MemoryRecord(
            id=f"{tenant}-{i}",
            tenant=tenant,
            project="big",
            content=content,
            sha256=f"{tenant}{i}",
            occurred_at=T0 - timedelta(hours=i),
            created_at=T0 - timedelta(hours=i),
            updated_at=T0,
            embedding=vector,
            model=HashingEmbedder(64).model_id,
            status="ready",
        )
        for i, (content, vector) in enumerate(zip(texts, vectors))
    ]


@pytest.fixture
def hosted():
    client = mongomock.MongoClient()
    corpus, counter = DocsCorpus(64), OperationCounter()
    db = FakeAtlasDatabase(client.get_database("atlas"), corpus, [counter])
    store = MongoStore(db, transactions=False, vector_search_min=100)
    store.migrate()
    store.ensure_vector_index(64)
    seq = 0
    for tenant in ("t1", "t2"):
        docs = []
        for record in records(tenant, SIZE):
            seq += 1
            docs.append({**record_to_doc(record, seq=seq), "version": 1})
        corpus.add(docs)
        db["projects"].insert_one(
            {
                "tenant": tenant,
                "name": "big",
                "version": 1,
                "purged_version": 0,
                "memories": SIZE,
                "seq": SIZE,
                "updated_at": 0.0,
            }
        )
    embedder = PaidEmbedder()
    clock = FrozenClock(T0)
    service = MemoryService(
        store,
        CachedEmbedder(embedder, store, clock),
        clock=clock,
        settings=Settings(embedder="hashing", query_cache_entries=0),
    )
    counter.reset()
    yield service, db, counter, embedder
    client.close()


def test_a_hosted_search_issues_no_write_operation(hosted):
    service, db, counter, _ = hosted
    result = service.search("t1", {"project": "big", "query": "redis timeouts", "k": 5})
    assert result.results and "Partial" not in result.explanation
    writes = [name for name in counter.commands if name.lower().startswith(WRITES)]
    assert writes == []
    # The project's name, its version, its size, then the two halves: nothing for the vector.
    assert counter.commands == ["find_one", "find", "find", "aggregate", "aggregate"]
    assert db["embedding_cache"].count_documents({}) == 0


def test_a_query_is_embedded_once_per_tenant_and_a_hit_never_crosses_tenants(hosted):
    service, _, counter, embedder = hosted
    ask = {"project": "big", "query": "redis timeouts", "k": 5}
    first = service.search("t1", ask)
    again = service.search("t1", ask)
    assert embedder.calls == [("query", ("redis timeouts",))]
    assert [h.id for h in again.results] == [h.id for h in first.results]
    other = service.search("t2", ask)  # the same text from another tenant: embedded afresh
    assert len(embedder.calls) == 2 and all(h.id.startswith("t2-") for h in other.results)
    model = embedder.model_id
    kept = {key[0] for key in service._query_vectors._entries}
    assert kept == {"t1", "t2"}
    assert ("t1", model, sha256("redis timeouts")) in service._query_vectors._entries
    counter.reset()
    service.search("t1", ask)
    assert len(embedder.calls) == 2 and not any(n.lower().startswith(WRITES) for n in counter.commands)


def test_a_failed_embedding_is_not_kept(hosted):
    service, _, _, embedder = hosted
    embedder.failing = True
    degraded = service.search("t1", {"project": "big", "query": "redis timeouts", "k": 5})
    assert "keyword only" in degraded.explanation
    embedder.failing = False
    service.search("t1", {"project": "big", "query": "redis timeouts", "k": 5})
    assert embedder.calls == [("query", ("redis timeouts",))]


def test_documents_vectors_still_use_the_hosted_cache(hosted):
    service, db, _, embedder = hosted
    cached = service.embedder
    cached.embed(["a memory's text"], kind="document")
    cached.embed(["a memory's text"], kind="document")
    assert embedder.calls == [("document", ("a memory's text",))]
    assert db["embedding_cache"].count_documents({}) == 1


def test_the_embedded_store_keeps_query_vectors_across_processes(tmp_path):
    store = SQLiteStore(tmp_path / "capsule.db")
    store.migrate()
    embedder = PaidEmbedder()
    CachedEmbedder(embedder, store, FrozenClock(T0)).embed(["redis timeouts"], kind="query")
    # A new process (a hook's `capsule search`) finds it in the file, not in a model call.
    CachedEmbedder(embedder, store, FrozenClock(T0)).embed(["redis timeouts"], kind="query")
    assert embedder.calls == [("query", ("redis timeouts",))]
