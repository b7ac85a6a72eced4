"""Every memory operation through the service, on a real SQLite store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capsule.config import Settings
from capsule.core.errors import InvalidInput, NotFound, Unavailable
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService

T = "tenant-a"


def store(service, content, project="p", **extra):
    return service.store_memory(T, {"project": project, "content": content, **extra})


def active_ids(service, project="p"):
    return {m.id for m in service.list_memories(T, {"project": project, "limit": 100}).memories}


def test_store_returns_the_memory_and_explains(service):
    result = store(
        service,
        "Use BEGIN IMMEDIATE for writes",
        meta={"tags": ["sqlite"], "type": "decision"},
        explanation="avoids deadlocks",
    )
    m = result.memory
    assert m.content == "Use BEGIN IMMEDIATE for writes" and m.project == "p" and m.status == "ready"
    assert m.meta["tags"] == ["sqlite"] and m.explanation == "avoids deadlocks"
    assert m.model == "hashing-v1-384" and result.evicted == [] and not result.deduplicated
    assert f"Stored memory {m.id} in project 'p'" in result.explanation
    assert service.get(T, m.id).memory == m


def test_occurred_at_is_kept_apart_from_created_at(service, clock):
    result = store(service, "imported turn", occurred_at="2023-05-08T13:56:00Z")
    assert result.memory.occurred_at.year == 2023 and result.memory.created_at == clock.now


def test_same_content_within_48_hours_is_stored_once(service, clock):
    first = store(service, "the same fact")
    clock.advance(hours=47)
    again = store(service, "the same fact")
    assert again.deduplicated and again.memory.id == first.memory.id
    assert "instead of storing it twice" in again.explanation
    clock.advance(hours=2)
    later = store(service, "the same fact")
    assert not later.deduplicated and later.memory.id != first.memory.id


def test_same_content_in_another_project_is_separate(service):
    a = store(service, "fact", project="a")
    b = store(service, "fact", project="b")
    assert a.memory.id != b.memory.id and not b.deduplicated


def test_rolling_limit_evicts_the_oldest_unpinned_and_names_it(sqlite_store, clock, tmp_path):
    service = MemoryService(
        sqlite_store, HashingEmbedder(), clock=clock, settings=Settings(data_dir=tmp_path, retention_limit=3)
    )
    pinned = store(service, "keep me", pinned=True).memory.id
    ids = []
    for i in range(3):
        clock.advance(minutes=1)
        ids.append(store(service, f"memory {i}"))
    assert ids[-1].evicted[0].id == ids[0].memory.id
    assert "oldest unpinned" in ids[-1].evicted[0].reason and ids[0].memory.id in ids[-1].explanation
    assert active_ids(service) == {pinned, ids[1].memory.id, ids[2].memory.id}
    evicted = sqlite_store.get(T, ids[0].memory.id, include_forgotten=True)
    assert evicted.deleted_reason == "evicted"


def test_project_limit_overrides_the_deployment_default(service, clock):
    service.set_retention_limit(T, "small", {"retention_limit": 1})
    store(service, "one", project="small")
    clock.advance(seconds=1)
    second = store(service, "two", project="small")
    assert len(second.evicted) == 1
    info = {p.project: p for p in service.projects(T).projects}
    assert info["small"].retention_limit == 1 and info["small"].memories == 1


def test_all_pinned_project_keeps_the_new_memory_and_says_it_is_over(service, clock):
    service.set_retention_limit(T, "p", {"retention_limit": 2})
    for i in range(2):
        store(service, f"pinned {i}", pinned=True)
    result = store(service, "new one")
    assert result.evicted == [] and "over its limit (3 of 2)" in result.explanation
    assert len(active_ids(service)) == 3


def test_ingest_chunks_dedupes_and_is_searchable(service):
    paragraph = "Redis connection refused errors happened when the host was wrong. " * 12
    text = "\n\n".join(f"Section {i}. {paragraph}" for i in range(12))
    result = service.ingest(T, {"project": "docs", "text": text, "path": "notes/redis.md"})
    assert result.chunks == len(result.ids) >= 2 and result.deduplicated == []
    memories = [service.get(T, i).memory for i in result.ids]
    assert [m.chunk.index for m in memories] == list(range(result.chunks))
    assert {m.chunk.of for m in memories} == {result.chunks} and {m.path for m in memories} == {"notes/redis.md"}
    again = service.ingest(T, {"project": "docs", "text": text, "path": "notes/redis.md"})
    assert again.ids == result.ids and sorted(again.deduplicated) == sorted(result.ids)
    assert "already stored" in again.explanation


def test_search_reports_every_component_and_respects_scope(service):
    a = store(service, "ECONNREFUSED when connecting to redis.railway.internal", project="api")
    store(service, "the logo is blue", project="api")
    store(service, "ECONNREFUSED in the web project too", project="web")
    result = service.search(T, {"query": "ECONNREFUSED redis", "project": "api"})
    assert result.results[0].id == a.memory.id and {h.project for h in result.results} == {"api"}
    c = result.results[0].components
    assert c.vector > 0 and c.bm25 == 1.0 and c.time == 1.0 and c.feedback == 0 and c.outcome == 0
    assert result.results[0].score == pytest.approx(0.6 * c.vector + 0.3 * c.bm25 + 0.1 * c.time, abs=1e-5)
    everywhere = service.search(T, {"query": "ECONNREFUSED", "global": True})
    assert {h.project for h in everywhere.results} == {"api", "web"}
    assert "Searched" in result.explanation


def test_search_filters(service, clock):
    store(service, "deploy failed on db", meta={"component": "db", "tags": ["ci", "deploy"]}, path="ops/db.md")
    clock.advance(days=2)
    store(service, "deploy failed on api", meta={"component": "api", "tags": ["deploy"]}, path="src/api.md")

    def hits(**filters):
        res = service.search(T, {"query": "deploy failed", "project": "p", "filters": filters})
        return sorted(h.content for h in res.results)

    assert hits(component="db") == ["deploy failed on db"]
    assert hits(tags=["deploy"]) == ["deploy failed on api", "deploy failed on db"]
    assert hits(tags=["ci", "deploy"]) == ["deploy failed on db"]
    assert hits(path_prefix="src/") == ["deploy failed on api"]
    assert hits(since=(clock.now - timedelta(days=1)).isoformat()) == ["deploy failed on api"]
    assert hits(until=(clock.now - timedelta(days=1)).isoformat()) == ["deploy failed on db"]


def test_tenants_never_see_each_other(service):
    mine = store(service, "tenant a secret about redis")
    other = "tenant-b"
    assert service.search(other, {"query": "redis secret", "global": True}).results == []
    assert service.list_memories(other, {"project": "p"}).memories == []
    assert service.projects(other).projects == []
    for call in (
        lambda: service.get(other, mine.memory.id),
        lambda: service.pin(other, mine.memory.id),
        lambda: service.forget(other, mine.memory.id),
        lambda: service.restore(other, mine.memory.id),
        lambda: service.feedback(other, mine.memory.id, {"helpful": True}),
    ):
        with pytest.raises(NotFound):
            call()
    assert service.get(T, mine.memory.id).memory == mine.memory


def test_list_pages_with_cursor_and_pinned_only(service, clock):
    ids = []
    for i in range(5):
        clock.advance(seconds=1)
        ids.append(store(service, f"note {i}", pinned=i in (1, 3)).memory.id)
    first = service.list_memories(T, {"project": "p", "limit": 2})
    assert [m.id for m in first.memories] == [ids[4], ids[3]] and first.next_cursor
    second = service.list_memories(T, {"project": "p", "limit": 2, "cursor": first.next_cursor})
    third = service.list_memories(T, {"project": "p", "limit": 2, "cursor": second.next_cursor})
    assert [m.id for m in second.memories + third.memories] == [ids[2], ids[1], ids[0]]
    assert third.next_cursor is None
    pinned = service.list_memories(T, {"project": "p", "pinned_only": True})
    assert [m.id for m in pinned.memories] == [ids[3], ids[1]]
    with pytest.raises(InvalidInput) as bad:
        service.list_memories(T, {"project": "p", "cursor": "not-a-cursor"})
    assert bad.value.field == "cursor"


def test_pin_unpin(service):
    m = store(service, "x").memory
    assert service.pin(T, m.id).memory.pinned and "never evicted" in service.pin(T, m.id).explanation
    assert not service.pin(T, m.id, False).memory.pinned


def test_forget_hides_then_restore_brings_back(service, clock):
    m = store(service, "a mistaken note about kafka").memory
    result = service.forget(T, m.id, {"reason": "it was wrong"})
    assert "it was wrong" in result.explanation and "restore" in result.explanation
    assert service.search(T, {"query": "kafka", "project": "p"}).results == []
    assert service.list_memories(T, {"project": "p"}).memories == []
    with pytest.raises(NotFound):
        service.get(T, m.id)
    service.restore(T, m.id)
    assert [h.id for h in service.search(T, {"query": "kafka", "project": "p"}).results] == [m.id]
    audit = service.store.audit_log(T, memory_id=m.id)
    assert [(a.action, a.actor) for a in audit] == [("restore", T), ("forget", T)]
    assert audit[1].reason == "it was wrong"


def test_forgotten_memories_are_purged_after_30_days(service, clock):
    m = store(service, "temporary").memory
    service.forget(T, m.id)
    clock.advance(days=31)
    assert service.store.purge_forgotten(before=clock.now - timedelta(days=30)) == 1
    with pytest.raises(NotFound):
        service.restore(T, m.id)


def test_feedback_counts_and_explains(service):
    m = store(service, "useful").memory
    service.feedback(T, m.id, {"helpful": True, "context": "fixed the build"})
    result = service.feedback(T, m.id, {"helpful": False})
    assert (result.memory.helpful, result.memory.unhelpful) == (1, 1) and "Wilson" in result.explanation


def test_projects_lists_counts(service):
    store(service, "a", project="one", pinned=True)
    store(service, "b", project="one")
    store(service, "c", project="two")
    info = {p.project: p for p in service.projects(T).projects}
    assert (info["one"].memories, info["one"].pinned, info["two"].memories) == (2, 1, 1)
    assert info["one"].retention_limit == 100 and info["one"].last_activity is not None


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.store_memory(T, {"project": "p", "content": ""}),
        lambda s: s.store_memory(T, {"project": "p", "content": "x", "meta": {"$bad": 1}}),
        lambda s: s.ingest(T, {"project": "p", "text": "   \n  "}),
        lambda s: s.search(T, {"query": "x", "project": "p", "k": 21}),
        lambda s: s.feedback(T, "whatever", {"helpful": "perhaps"}),
        lambda s: s.set_retention_limit(T, "p", {"retention_limit": 0}),
        lambda s: s.forget(T, "nope"),
    ],
)
def test_bad_input_changes_nothing(service, call):
    before = store(service, "existing memory").memory
    with pytest.raises((InvalidInput, NotFound)):
        call(service)
    assert active_ids(service) == {before.id}
    assert service.get(T, before.id).memory == before
    assert [p.retention_limit for p in service.projects(T).projects] == [100]


class FlakyEmbedder(HashingEmbedder):
    """Down until ``up`` is set: what a provider outage looks like to the service."""

    def __init__(self) -> None:
        super().__init__()
        self.up = False

    def embed(self, texts, *, kind="document"):
        if not self.up:
            raise Unavailable("provider timed out")
        return super().embed(texts, kind=kind)


def test_embedder_outage_keeps_the_memory_and_finds_it_by_keyword(sqlite_store, clock, settings):
    embedder = FlakyEmbedder()
    service = MemoryService(sqlite_store, embedder, clock=clock, settings=settings)
    result = service.store_memory(T, {"project": "p", "content": "kafka rebalance storm fix"})
    assert result.memory.status == "pending_embedding" and "backfill" in result.explanation
    found = service.search(T, {"query": "kafka rebalance", "project": "p"})
    assert [h.id for h in found.results] == [result.memory.id]
    assert found.results[0].components.vector == 0 and "keyword only" in found.explanation
    embedder.up = True
    pending = sqlite_store.pending_embeddings(limit=10)
    vectors = embedder.embed([r.content for r in pending])
    for record, vector in zip(pending, vectors):
        sqlite_store.set_embedding(record.tenant, record.id, vector, embedder.model_id)
    again = service.search(T, {"query": "kafka rebalance", "project": "p"})
    assert again.results[0].components.vector > 0


def test_search_compares_only_vectors_of_the_same_model(sqlite_store, clock, settings):
    old = MemoryService(sqlite_store, HashingEmbedder(dim=384), clock=clock, settings=settings)
    new = MemoryService(sqlite_store, HashingEmbedder(dim=128), clock=clock, settings=settings)
    m = old.store_memory(T, {"project": "p", "content": "vector from another model"}).memory
    hit = new.search(T, {"query": "vector from another model", "project": "p"}).results[0]
    assert hit.id == m.id and hit.components.vector == 0 and hit.components.bm25 == 1.0


def test_an_unusable_database_is_unavailable_not_a_crash(tmp_path, clock, settings):
    from capsule.store.sqlite import SQLiteStore

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the database folder should be")
    with pytest.raises(Unavailable):
        SQLiteStore(blocker / "capsule.db").migrate()
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database" * 100)
    service = MemoryService(SQLiteStore(corrupt), HashingEmbedder(), clock=clock, settings=settings)
    with pytest.raises(Unavailable):
        service.store_memory(T, {"project": "p", "content": "x"})
    with pytest.raises(Unavailable):
        service.search(T, {"query": "x", "project": "p"})


def test_storing_a_duplicate_with_pin_pins_the_existing_memory(service):
    first = store(service, "pin me later")
    again = store(service, "pin me later", pinned=True)
    assert again.deduplicated and again.memory.id == first.memory.id and again.memory.pinned
    assert "Pinned the existing memory" in again.explanation


class BrokenModel(HashingEmbedder):
    def embed(self, texts, *, kind="document"):
        raise RuntimeError("onnxruntime: invalid input shape")


def test_an_embedder_crash_is_not_a_lost_write(sqlite_store, clock, settings):
    service = MemoryService(sqlite_store, BrokenModel(), clock=clock, settings=settings)
    result = service.store_memory(T, {"project": "p", "content": "kept despite the crash"})
    assert result.memory.status == "pending_embedding" and "RuntimeError" in result.explanation
    assert [r.id for r in sqlite_store.pending_embeddings(limit=5)] == [result.memory.id]
