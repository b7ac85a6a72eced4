"""The MemoryStore contract, run against every backend in conftest.BACKENDS."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.errors import Conflict, NotFound
from capsule.core.records import Filters, MemoryRecord
from capsule.store.base import MemoryStore

T0 = datetime(2026, 3, 1, tzinfo=UTC)
_counter = iter(range(10**9))


def rec(
    content: str = "hello",
    *,
    tenant: str = "t1",
    project: str = "p",
    at: datetime = T0,
    pinned: bool = False,
    meta: dict | None = None,
    path: str | None = None,
    id: str | None = None,
    embedding: np.ndarray | None = None,
    status: str = "ready",
) -> MemoryRecord:
    n = next(_counter)
    vector = embedding if embedding is not None else np.full(4, 0.5, dtype=np.float32)
    return MemoryRecord(
        id=id or f"m{n:08d}",
        tenant=tenant,
        project=project,
        content=content,
        sha256=f"sha-{content}",
        occurred_at=at,
        created_at=at,
        updated_at=at,
        path=path,
        embedding=None if status != "ready" else vector,
        model=None if status != "ready" else "test-4",
        pinned=pinned,
        meta=meta or {},
        status=status,
    )


def put(store, *records, limit=1000, dedupe_after=None):
    return store.insert(list(records), limit=limit, dedupe_after=dedupe_after, actor="tester")


def test_backend_implements_the_protocol(store):
    assert isinstance(store, MemoryStore)


def test_insert_then_get_round_trips_every_field(store):
    vector = np.array([0.1, -0.2, 0.3, 0.9], dtype=np.float32)
    r = rec(
        "alpha", meta={"tags": ["x"], "component": "db", "outcome_status": "success"}, path="a/b.py", embedding=vector
    )
    r.chunk_index, r.chunk_count, r.explanation = 1, 3, "why"
    outcome = put(store, r)
    assert outcome.inserted == [r.id] and outcome.evicted == [] and outcome.active_after == 1
    got = store.get("t1", r.id)
    assert (got.content, got.project, got.path, got.chunk_index, got.chunk_count) == ("alpha", "p", "a/b.py", 1, 3)
    assert got.meta == {"tags": ["x"], "component": "db", "outcome_status": "success"}
    assert got.embedding.dtype == np.float32 and np.array_equal(got.embedding, vector)
    assert got.model == "test-4" and got.created_at == T0 and got.explanation == "why"


def test_other_tenants_memories_are_not_found(store):
    r = rec()
    put(store, r)
    with pytest.raises(NotFound):
        store.get("t2", r.id)
    for change in (
        lambda: store.set_pinned("t2", r.id, True, at=T0, actor="x"),
        lambda: store.forget("t2", r.id, at=T0, actor="x", reason="r"),
        lambda: store.add_feedback("t2", r.id, helpful=True, context=None, at=T0),
    ):
        with pytest.raises(NotFound):
            change()
    assert store.list("t2", "p", pinned_only=False, after=None, limit=10) == []
    assert store.candidates("t2", None, Filters()) == []
    assert store.projects("t2") == []
    assert store.get("t1", r.id).pinned is False


def test_duplicate_within_window_is_not_stored_twice(store):
    first = rec("same")
    put(store, first, dedupe_after=T0 - timedelta(hours=48))
    again = rec("same", at=T0 + timedelta(hours=1))
    outcome = put(store, again, dedupe_after=T0 + timedelta(hours=1) - timedelta(hours=48))
    assert outcome.inserted == [] and outcome.duplicates == {again.id: first.id}
    later = rec("same", at=T0 + timedelta(hours=49))
    outcome = put(store, later, dedupe_after=T0 + timedelta(hours=1))
    assert outcome.inserted == [later.id]


def test_rolling_limit_evicts_oldest_unpinned_and_audits(store):
    pinned = rec("pinned", at=T0, pinned=True)
    put(store, pinned, limit=3)
    olds = [rec(f"m{i}", at=T0 + timedelta(minutes=i + 1)) for i in range(2)]
    for r in olds:
        put(store, r, limit=3)
    newest = rec("new", at=T0 + timedelta(minutes=10))
    outcome = put(store, newest, limit=3)
    assert outcome.evicted == [olds[0].id] and outcome.active_after == 3
    with pytest.raises(NotFound):
        store.get("t1", olds[0].id)
    assert store.get("t1", olds[0].id, include_forgotten=True).deleted_reason == "evicted"
    assert [a.action for a in store.audit_log("t1", memory_id=olds[0].id)] == ["evict"]
    assert store.get("t1", pinned.id).pinned


def test_when_all_are_pinned_the_new_memory_is_kept_over_the_limit(store):
    for i in range(2):
        put(store, rec(f"p{i}", pinned=True, at=T0 + timedelta(seconds=i)), limit=2)
    new = rec("unpinned", at=T0 + timedelta(minutes=1))
    outcome = put(store, new, limit=2)
    assert outcome.inserted == [new.id] and outcome.evicted == [] and outcome.active_after == 3


def test_a_write_never_evicts_its_own_records(store):
    batch = [rec(f"c{i}", at=T0) for i in range(5)]
    outcome = put(store, *batch, limit=2)
    assert outcome.evicted == [] and outcome.active_after == 5


def test_insert_is_all_or_nothing(store):
    existing = rec("existing", id="fixed-id")
    put(store, existing)
    batch = [rec("fresh-1"), rec("clash", id="fixed-id"), rec("fresh-3")]
    with pytest.raises(Conflict):
        put(store, *batch)
    assert [r.content for r in store.list("t1", "p", pinned_only=False, after=None, limit=10)] == ["existing"]


def test_list_is_newest_first_with_cursor_and_pinned_filter(store):
    records = [rec(f"m{i}", at=T0 + timedelta(minutes=i), pinned=i % 2 == 0) for i in range(5)]
    for r in records:
        put(store, r)
    store.forget("t1", records[4].id, at=T0, actor="x", reason="r")
    page = store.list("t1", "p", pinned_only=False, after=None, limit=2)
    assert [r.content for r in page] == ["m3", "m2"]
    after = (page[-1].created_at.timestamp(), page[-1].id)
    assert [r.content for r in store.list("t1", "p", pinned_only=False, after=after, limit=10)] == ["m1", "m0"]
    assert [r.content for r in store.list("t1", "p", pinned_only=True, after=None, limit=10)] == ["m2", "m0"]


def test_pin_forget_restore_and_their_audit(store):
    r = rec()
    put(store, r)
    assert store.set_pinned("t1", r.id, True, at=T0, actor="alice").pinned
    forgotten = store.forget("t1", r.id, at=T0 + timedelta(days=1), actor="alice", reason="wrong")
    assert forgotten.deleted_at == T0 + timedelta(days=1)
    with pytest.raises(NotFound):
        store.get("t1", r.id)
    with pytest.raises(NotFound):
        store.forget("t1", r.id, at=T0, actor="alice", reason="again")
    assert store.restore("t1", r.id, at=T0, actor="alice").deleted_at is None
    with pytest.raises(Conflict):  # there, but not forgotten
        store.restore("t1", r.id, at=T0, actor="alice")
    with pytest.raises(NotFound):
        store.restore("t1", "no-such-id", at=T0, actor="alice")
    actions = [(a.action, a.actor) for a in store.audit_log("t1", memory_id=r.id)]
    assert actions == [("restore", "alice"), ("forget", "alice"), ("pin", "alice")]
    assert store.audit_log("t1", memory_id=r.id)[1].reason == "wrong"


def test_feedback_counts_votes(store):
    r = rec()
    put(store, r)
    store.add_feedback("t1", r.id, helpful=True, context="solved it", at=T0)
    store.add_feedback("t1", r.id, helpful=True, context=None, at=T0)
    got = store.add_feedback("t1", r.id, helpful=False, context=None, at=T0)
    assert (got.helpful, got.unhelpful) == (2, 1)


def test_candidates_filters(store):
    a = rec("a", meta={"component": "db", "category": "bug", "tags": ["x", "y"]}, path="src/db/a.py")
    b = rec("b", meta={"component": "api", "tags": ["x"]}, path="src/api/b.py", at=T0 + timedelta(days=2))
    c = rec("c", project="other", meta={"tags": ["y"]}, path="docs/c.md", at=T0 + timedelta(days=4))
    put(store, a)
    put(store, b)
    put(store, c)

    def contents(projects, **f):
        return sorted(r.content for r in store.candidates("t1", projects, Filters(**f)))

    assert contents(["p"]) == ["a", "b"]
    assert contents(None) == ["a", "b", "c"]
    assert contents(None, component="db") == ["a"]
    assert contents(None, category="bug") == ["a"]
    assert contents(None, tags=("x",)) == ["a", "b"]
    assert contents(None, tags=("x", "y")) == ["a"]
    assert contents(None, path_prefix="src/") == ["a", "b"]
    assert contents(None, since=T0 + timedelta(days=1)) == ["b", "c"]
    assert contents(None, until=T0 + timedelta(days=3)) == ["a", "b"]
    store.forget("t1", a.id, at=T0, actor="x", reason="r")
    assert contents(None) == ["b", "c"]
    assert store.candidates("t1", ["p"], Filters())[0].embedding is not None


def test_since_and_until_filter_on_when_it_happened(store):
    """Imported history: stored today, happened long ago; since/until read occurred_at."""
    old = rec("imported", at=T0 + timedelta(days=5))
    old.occurred_at = T0 - timedelta(days=300)
    put(store, old, rec("fresh", at=T0 + timedelta(days=5)))

    def contents(**f):
        return sorted(r.content for r in store.candidates("t1", ["p"], Filters(**f)))

    assert contents(until=T0 - timedelta(days=200)) == ["imported"]
    assert contents(since=T0) == ["fresh"]


def test_tenants_lists_each_tenant_with_a_project_once(store):
    assert store.tenants() == []
    put(store, rec("a", tenant="t2"))
    put(store, rec("b", tenant="t1"))
    put(store, rec("c", tenant="t1", project="q"))
    store.set_retention_limit("t3", "p", 5, at=T0)
    assert store.tenants() == ["t1", "t2", "t3"]


def test_projects_stats_and_limits(store):
    put(store, rec("a", pinned=True))
    put(store, rec("b", at=T0 + timedelta(hours=1)))
    forgotten = rec("c")
    put(store, forgotten)
    store.forget("t1", forgotten.id, at=T0 + timedelta(hours=2), actor="x", reason="r")
    put(store, rec("d", project="q"))
    assert store.retention_limit("t1", "p") is None
    store.set_retention_limit("t1", "p", 7, at=T0)
    assert store.retention_limit("t1", "p") == 7
    stats = {s.project: s for s in store.projects("t1")}
    assert set(stats) == {"p", "q"}
    p = stats["p"]
    assert (p.memories, p.pinned, p.forgotten, p.retention_limit) == (2, 1, 1, 7)
    assert p.last_activity >= T0 + timedelta(hours=1)
    assert stats["q"].retention_limit is None


def test_purge_forgotten_deletes_for_good(store):
    old, recent = rec("old"), rec("recent")
    put(store, old, recent)
    store.forget("t1", old.id, at=T0, actor="x", reason="r")
    store.forget("t1", recent.id, at=T0 + timedelta(days=29), actor="x", reason="r")
    purged_at = T0 + timedelta(days=31)
    assert store.purge_forgotten(before=T0 + timedelta(days=1), at=purged_at) == 1  # the job: now - 30 days
    assert [(a.action, a.at) for a in store.audit_log("t1", memory_id=old.id)][0] == ("purge", purged_at)
    with pytest.raises(NotFound):
        store.get("t1", old.id, include_forgotten=True)
    assert store.get("t1", recent.id, include_forgotten=True).deleted_at is not None


def test_pending_embeddings_then_set(store):
    pending = rec("later", status="pending_embedding")
    put(store, pending, rec("ready"))
    assert [r.id for r in store.pending_embeddings(limit=10)] == [pending.id]
    store.set_embedding("t1", pending.id, np.ones(4, dtype=np.float32) / 2, "test-4")
    got = store.get("t1", pending.id)
    assert got.status == "ready" and got.model == "test-4" and np.allclose(got.embedding, 0.5)
    assert store.pending_embeddings(limit=10) == []


def test_embedding_cache_expires(store):
    v = np.arange(4, dtype=np.float32)
    store.cache_put("m", {"s1": v}, at=T0)
    assert np.array_equal(store.cache_get("m", ["s1", "s2"], fresh_after=T0 - timedelta(days=1))["s1"], v)
    assert store.cache_get("m", ["s1"], fresh_after=T0 + timedelta(seconds=1)) == {}
    assert store.cache_get("other-model", ["s1"], fresh_after=T0 - timedelta(days=1)) == {}
    assert store.cache_purge(before=T0 + timedelta(days=61)) == 1
    assert store.cache_get("m", ["s1"], fresh_after=T0 - timedelta(days=1)) == {}


def test_concurrent_inserts_never_evict_more_than_needed(store):
    limit, writers, each = 20, 4, 15
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(each):
                put(store, rec(f"w{w}-{i}", at=T0 + timedelta(seconds=w * 100 + i)), limit=limit)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    active = store.list("t1", "p", pinned_only=False, after=None, limit=1000)
    assert len(active) == limit
    evicted = [a for a in store.audit_log("t1", limit=1000) if a.action == "evict"]
    assert len(evicted) == writers * each - limit


def test_a_duplicate_is_never_evicted_by_its_own_write(store):
    old = rec("old fact", at=T0)
    put(store, old, limit=5)
    put(store, rec("newer", at=T0 + timedelta(minutes=1)), limit=5)
    again = rec("old fact", at=T0 + timedelta(minutes=2))
    outcome = put(store, again, limit=1, dedupe_after=T0 - timedelta(hours=48))
    assert outcome.duplicates == {again.id: old.id}
    assert old.id not in outcome.evicted
    assert store.get("t1", old.id).content == "old fact"


def test_memories_of_another_model_are_due_for_embedding(store):
    current, stale = rec("current"), rec("stale")
    stale.model = "old-model"
    pending = rec("pending", status="pending_embedding")
    put(store, current, stale, pending)
    assert {r.id for r in store.pending_embeddings(limit=10)} == {pending.id}
    assert {r.id for r in store.pending_embeddings(limit=10, model="test-4")} == {stale.id, pending.id}


def test_enforce_limit_evicts_the_oldest_unpinned_atomically(store):
    records = [rec(f"m{i}", at=T0 + timedelta(minutes=i), pinned=i == 0) for i in range(5)]
    for r in records:
        put(store, r, limit=100)
    assert store.enforce_limit("t1", "p", limit=10, at=T0, actor="retention") == []
    evicted = store.enforce_limit("t1", "p", limit=2, at=T0 + timedelta(hours=1), actor="retention")
    assert evicted == [records[1].id, records[2].id, records[3].id]
    assert {r.id for r in store.list("t1", "p", pinned_only=False, after=None, limit=10)} == {
        records[0].id,
        records[4].id,
    }
    audit = store.audit_log("t1", memory_id=records[1].id)
    assert [(a.action, a.actor) for a in audit] == [("evict", "retention")]
    assert store.get("t1", records[1].id, include_forgotten=True).deleted_reason == "evicted"


def test_previous_in_session_is_the_active_turn_just_before(store):
    s = {"session": "s1"}
    first = rec("first", at=T0, meta=s)
    second = rec("second", at=T0 + timedelta(minutes=1), meta=s)
    other_session = rec("elsewhere", at=T0 + timedelta(minutes=2), meta={"session": "s2"})
    no_session = rec("loose", at=T0 + timedelta(minutes=3))
    numbered = rec("numbered", at=T0 + timedelta(minutes=4), meta={"session": 7})
    other_project = rec("other project", project="q", at=T0 + timedelta(minutes=5), meta=s)
    other_tenant = rec("other tenant", tenant="t2", at=T0 + timedelta(minutes=6), meta=s)
    put(store, first, second, other_session, no_session, numbered)
    put(store, other_project)
    put(store, other_tenant)
    later = T0 + timedelta(hours=1)
    assert store.previous_in_session("t1", "p", "s1", before=later) == "second"
    assert store.previous_in_session("t1", "p", "s1", before=second.occurred_at) == "first"  # strictly before
    assert store.previous_in_session("t1", "p", "s1", before=T0) is None
    assert store.previous_in_session("t1", "p", 7, before=later) == "numbered"
    assert store.previous_in_session("t1", "p", "s3", before=later) is None
    assert store.previous_in_session("t1", "q", "s1", before=later) == "other project"
    assert store.previous_in_session("t2", "p", "s1", before=later) == "other tenant"
    store.forget("t1", second.id, at=later, actor="tester", reason="r")
    assert store.previous_in_session("t1", "p", "s1", before=later) == "first"  # forgotten turns are skipped


def test_list_forgotten_holds_only_the_forgotten_newest_first_with_cursor(store):
    records = [rec(f"f{i}", at=T0 + timedelta(minutes=i), pinned=i == 1) for i in range(5)]
    put(store, rec("other project", project="q"))
    for r in records:
        put(store, r)
    for r in records[:4]:
        store.forget("t1", r.id, at=T0 + timedelta(days=1), actor="x", reason="r")
    store.restore("t1", records[2].id, at=T0 + timedelta(days=2), actor="x")
    page = store.list("t1", "p", pinned_only=False, after=None, limit=2, forgotten=True)
    assert [r.content for r in page] == ["f3", "f1"]
    assert all(r.deleted_at is not None for r in page)
    after = (page[-1].created_at.timestamp(), page[-1].id)
    assert [r.content for r in store.list("t1", "p", pinned_only=False, after=after, limit=10, forgotten=True)] == [
        "f0"
    ]
    assert [r.content for r in store.list("t1", "p", pinned_only=True, after=None, limit=10, forgotten=True)] == ["f1"]
    assert store.list("t2", "p", pinned_only=False, after=None, limit=10, forgotten=True) == []
    # The active listing is unchanged by the new state.
    assert [r.content for r in store.list("t1", "p", pinned_only=False, after=None, limit=10)] == ["f4", "f2"]
