"""MongoStore beyond the shared contract: the stored form, indexes, the lease, pending writes,
driver failures, and the Atlas Vector Search shortlist."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
from bson.binary import Binary  # noqa: E402

from capsule.config import Settings  # noqa: E402
from capsule.core import limits  # noqa: E402
from capsule.core.clock import FrozenClock  # noqa: E402
from capsule.core.errors import NotFound, Unavailable  # noqa: E402
from capsule.core.records import Filters, MemoryRecord  # noqa: E402
from capsule.embedders import HashingEmbedder  # noqa: E402
from capsule.service.memory_service import MemoryService  # noqa: E402
from capsule.store import mongo_vector as vs  # noqa: E402
from capsule.store.mongo import MongoStore  # noqa: E402
from capsule.store.mongo_client import drop_clients, shared_client  # noqa: E402
from capsule.store.mongo_docs import decode_vector, encode_vector  # noqa: E402
from capsule.store.sqlite import SQLiteStore  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=UTC)


class Wall:
    """The server-side clock the TTL dates and leases use, moved by hand."""

    def __init__(self) -> None:
        # Starts at the real time: mongomock, like a server, expires TTL dates by the real clock.
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def wall() -> Wall:
    return Wall()


@pytest.fixture
def db():
    client = mongomock.MongoClient()
    yield client.get_database("capsule_test")
    client.close()


@pytest.fixture
def store(db, wall):
    s = MongoStore(db, transactions=False, wall=wall, lock_wait_s=0.05, sleep=lambda s: None)
    s.migrate()
    return s


def rec(content="hello", *, id=None, project="p", vector=None) -> MemoryRecord:
    v = np.asarray(vector if vector is not None else [0.6, 0.8, 0.0, 0.0], dtype=np.float32)
    return MemoryRecord(
        id=id or content,
        tenant="t1",
        project=project,
        content=content,
        sha256=f"sha-{content}",
        occurred_at=T0,
        created_at=T0,
        updated_at=T0,
        embedding=v,
        model="m4",
    )


def put(store, *records, limit=100):
    return store.insert(list(records), limit=limit, dedupe_after=None, actor="tester")


# ---- the stored form ---------------------------------------------------------------


def test_embeddings_are_stored_as_bson_float32_vectors(store, db):
    put(store, rec("a", vector=[0.25, -1.5, 3.0, 0.0]))
    raw = db.memories.find_one({"id": "a"})
    assert isinstance(raw["embedding"], Binary) and raw["embedding"].subtype == 9
    assert bytes(raw["embedding"][:2]) == b"\x27\x00"  # float32, no padding
    np.testing.assert_array_equal(store.get("t1", "a").embedding, [0.25, -1.5, 3.0, 0.0])


def test_vector_decoding_paths_agree_with_the_driver():
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((5, 16)).astype(np.float32)
    encoded = [encode_vector(v) for v in vectors]
    for binary, vector in zip(encoded, vectors):
        np.testing.assert_array_equal(decode_vector(binary), binary.as_vector(return_numpy=True).data)
        np.testing.assert_array_equal(decode_vector(binary), vector)
    np.testing.assert_array_equal(decode_vector(Binary(vectors[0].tobytes())), vectors[0])  # subtype 0
    with pytest.raises(ValueError):
        decode_vector(Binary(b"\x03\x00\x01\x02", 9))  # an int8 vector is not ours


def test_every_query_has_its_index_and_the_ttls_match_the_limits(store, db):
    info = db.memories.index_information()
    for name in ("memory_id", "recent", "evictable", "dedupe", "path", "pending_embedding", "forgotten"):
        assert name in info, name
    assert info["memory_id"]["unique"] is True
    # a day past the recovery window: the retention job purges and audits first; the TTL is a backstop
    assert info["forgotten_ttl"]["expireAfterSeconds"] == (limits.FORGET_RECOVERABLE_DAYS + 1) * 86400
    assert db.embedding_cache.index_information()["cache_ttl"]["expireAfterSeconds"] == 60 * 86400
    assert db.query_cache.index_information()["query_ttl"]["expireAfterSeconds"] == 300
    assert db.projects.index_information()["project"]["unique"] is True
    store.migrate()  # idempotent


def test_migrate_runs_once_per_schema_version(store, db):
    assert db.meta.find_one({"_id": "schema"})["version"] >= 1
    db.memories.drop_index("path")
    store.migrate()  # the schema is current: no index calls
    assert "path" not in db.memories.index_information()
    db.meta.update_one({"_id": "schema"}, {"$set": {"version": 3}})
    MongoStore(db, transactions=False, vector_search_min=10).migrate()
    info = db.memories.index_information()
    # the keyword half is Atlas Search now (capsule.store.atlas_search): no classic text index
    assert "path" in info and not any("text" in name for name in info)


def test_forget_stamps_the_ttl_date_from_the_server_clock(store, db, wall):
    put(store, rec("a"))
    store.forget("t1", "a", at=T0, actor="x", reason="r")
    assert db.memories.find_one({"id": "a"})["deleted_on"].replace(tzinfo=UTC) == wall.now
    store.restore("t1", "a", at=T0, actor="x")
    assert "deleted_on" not in db.memories.find_one({"id": "a"})


# ---- writes without transactions: the lease and the pending marker ----------------------


def test_a_held_lease_makes_a_writer_give_up_without_writing(store, db, wall):
    put(store, rec("a"))
    db.projects.update_one({"name": "p"}, {"$set": {"lock": "someone", "lock_until": wall.now.timestamp() + 30}})
    with pytest.raises(Unavailable, match="busy"):
        put(store, rec("b"))
    assert db.memories.count_documents({"id": "b"}) == 0
    wall.now += timedelta(seconds=31)  # the holder died: its lease runs out
    assert put(store, rec("b")).inserted == ["b"]
    assert db.projects.find_one({"name": "p"})["lock"] is None


def test_an_unpublished_write_is_invisible_and_cleaned_up(store, db, wall):
    put(store, rec("a"))
    ghost = {
        **db.memories.find_one({"id": "a"}, {"_id": 0}),
        "id": "ghost",
        "active": False,
        "pending": "dead-writer",
        "pending_on": wall.now,
    }
    db.memories.insert_one(ghost)
    with pytest.raises(NotFound):
        store.get("t1", "ghost")
    assert [r.id for r in store.list("t1", "p", pinned_only=False, after=None, limit=10)] == ["a"]
    assert [r.id for r in store.candidates("t1", None, Filters())] == ["a"]
    assert store.projects("t1")[0].memories == 1 and store.projects("t1")[0].forgotten == 0
    assert store.purge_forgotten(before=T0) == 0 and db.memories.count_documents({"id": "ghost"}) == 1
    wall.now += timedelta(hours=2)
    store.purge_forgotten(before=T0)
    assert db.memories.count_documents({"id": "ghost"}) == 0


def test_eviction_skips_a_memory_pinned_meanwhile(store):
    put(store, rec("old"), rec("mid"))
    store.set_pinned("t1", "old", True, at=T0, actor="x")
    outcome = put(store, rec("new"), limit=2)
    assert outcome.evicted == ["mid"] and store.get("t1", "old").pinned


# ---- failures become Unavailable ------------------------------------------------------


def test_an_unreachable_cluster_is_unavailable_quickly():
    import pymongo

    client = pymongo.MongoClient("mongodb://127.0.0.1:9", serverSelectionTimeoutMS=100, connectTimeoutMS=100)
    try:
        store = MongoStore(client.get_database("x"))
        with pytest.raises(Unavailable, match="ServerSelectionTimeoutError"):
            put(store, rec("a"))
        with pytest.raises(Unavailable, match="MongoDB could not read"):
            MongoStore(client.get_database("x"), transactions=False).get("t1", "a")
    finally:
        client.close()


def test_from_settings_shares_one_client_per_uri():
    with pytest.raises(Unavailable, match="CAPSULE_MONGODB_URI"):
        MongoStore.from_settings(Settings(store="mongo"))
    settings = Settings(
        store="mongo",
        mongodb_uri="mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=100",
        mongodb_db="one",
        mongodb_vector_search_min=5000,
    )
    try:
        a, b = MongoStore.from_settings(settings), MongoStore.from_settings(settings)
        assert a.client is b.client and a.db.name == "one" and a.vector_search_min == 5000
        assert shared_client("mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=100") is a.client
        with pytest.raises(Unavailable):
            shared_client("mongodb://127.0.0.1:99999")
    finally:
        drop_clients()


# ---- Atlas Vector Search ----------------------------------------------------------------


def test_vector_pipeline_prefilters_by_tenant_and_project_on_indexed_fields():
    filters = Filters(component="db", tags=("a", "b"), path_prefix="src/(x)", since=T0)
    pipeline = vs.vector_pipeline(
        tenant="t1",
        projects=["p", "q"],
        filters=filters,
        query_vector=np.ones(4, np.float32) / 2,
        model="m4",
        index="capsule_vectors",
    )
    stage = pipeline[0]["$vectorSearch"]
    clauses = stage["filter"]["$and"]
    assert {"tenant": "t1"} in clauses and {"project": {"$in": ["p", "q"]}} in clauses
    assert {"active": True} in clauses and {"model": "m4"} in clauses
    assert {"meta.tags": "a"} in clauses and {"meta.tags": "b"} in clauses
    assert {key for clause in clauses for key in clause} <= vs.filter_paths()
    assert stage["queryVector"].subtype == 9 and stage["path"] == "embedding"
    assert stage["limit"] <= stage["numCandidates"] <= 10_000
    assert pipeline[1] == {"$match": {"path": {"$regex": r"^src/\(x\)"}}}
    assert pipeline[-1]["$project"]["_id"] == 0


def test_the_shipped_index_definition_is_sized_per_embedder():
    index = vs.vector_index_definition(384, name="v384")
    vector = [f for f in index["definition"]["fields"] if f["type"] == "vector"][0]
    assert (index["name"], index["type"], vector["numDimensions"], vector["path"]) == (
        "v384",
        "vectorSearch",
        384,
        "embedding",
    )
    assert {"tenant", "project", "active", "model"} <= vs.filter_paths()


def test_small_projects_are_scored_whole(db):
    store = MongoStore(db, transactions=False, vector_search_min=3)
    store.migrate()
    put(store, rec("a"), rec("b"))
    near = store.nearest_candidates("t1", ["p"], Filters(), query="a", query_vector=np.ones(4, np.float32), model="m4")
    assert near is None
    assert (
        MongoStore(db, transactions=False).nearest_candidates(
            "t1", ["p"], Filters(), query="a", query_vector=np.ones(4, np.float32), model="m4"
        )
        is None
    )


class ShortlistStore(SQLiteStore):
    """A store with an index that shortlists only the memories named."""

    shortlist: list[str] = []

    def nearest_candidates(self, tenant, projects, filters, *, query, query_vector, model):
        self.asked = (tenant, projects, query, model, None if query_vector is None else query_vector.shape)
        return [self.get(tenant, memory_id) for memory_id in self.shortlist]


def test_search_ranks_the_stores_shortlist_when_it_gives_one(tmp_path):
    store = ShortlistStore(tmp_path / "c.db")
    store.migrate()
    service = MemoryService(
        store, HashingEmbedder(), clock=FrozenClock(T0), settings=Settings(data_dir=tmp_path, embedder="hashing")
    )
    ids = [service.store_memory("t1", {"project": "p", "content": f"sqlite deadlock {n}"}).memory.id for n in range(3)]
    store.shortlist = ids[:2]
    hits = service.search("t1", {"project": "p", "query": "sqlite deadlock"}).results
    assert sorted(h.id for h in hits) == sorted(ids[:2])
    assert store.asked[:4] == ("t1", ["p"], "sqlite deadlock", HashingEmbedder().model_id)
    hits = service.search("t1", {"project": "p", "query": "sqlite deadlock", "mode": "bm25"}).results
    assert sorted(h.id for h in hits) == sorted(ids[:2])  # no query vector: still the shortlist
    assert store.asked[4] is None


def test_the_service_searches_a_mongo_store_through_its_warm_index(store):
    service = MemoryService(store, HashingEmbedder(), clock=FrozenClock(T0), settings=Settings(embedder="hashing"))
    kept = service.store_memory("t1", {"project": "p", "content": "sqlite deadlock: use BEGIN IMMEDIATE"}).memory.id
    gone = service.store_memory("t1", {"project": "p", "content": "sqlite deadlock on WAL checkpoint"}).memory.id
    hits = service.search("t1", {"project": "p", "query": "sqlite deadlock"}).results
    assert {h.id for h in hits} == {kept, gone}
    service.forget("t1", gone)
    hits = service.search("t1", {"project": "p", "query": "sqlite deadlock"}).results
    assert [h.id for h in hits] == [kept]
    assert service.search("t2", {"project": "p", "query": "sqlite deadlock"}).results == []


def test_writers_in_separate_stores_share_one_project_without_over_evicting(db, wall):
    import threading

    stores = [MongoStore(db, transactions=False, wall=wall) for _ in range(3)]  # three warm containers
    stores[0].migrate()
    put(stores[0], rec("keep"), limit=10)
    stores[0].set_pinned("t1", "keep", True, at=T0, actor="x")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(12):
                put(stores[n], rec(f"w{n}-{i}"), limit=10)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    active = stores[1].list("t1", "p", pinned_only=False, after=None, limit=100)
    assert len(active) == 10 and "keep" in {r.id for r in active}
    evictions = [a for a in stores[2].audit_log("t1", limit=100) if a.action == "evict"]
    assert len(evictions) == 36 + 1 - 10 and "keep" not in {a.memory_id for a in evictions}
    assert db.projects.find_one({"name": "p"})["lock"] is None
