"""The governance contract (capsule.store.governance) and the retention rules the memory stores
keep, run against every backend in conftest.BACKENDS (SQLite, mongomock, mongomock-strict)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest
from test_store_contract import T0, put, rec  # beside this module (rootdir-relative import)

from capsule.core.errors import NotFound, PreconditionFailed
from capsule.core.records import AuditRecord
from capsule.store.governance import GovernanceStore
from capsule.store.sides import governance_store


@pytest.fixture
def gov(store):
    return governance_store(store)


def classed(content: str, retention: str, **kw):
    r = rec(content, **kw)
    r.retention = retention
    return r


def test_backend_implements_the_governance_protocol(gov):
    assert isinstance(gov, GovernanceStore)


def test_retention_fields_round_trip(store):
    r = classed("soon gone", "ephemeral")
    r.expires_at, r.supersedes = T0 + timedelta(days=2), "older-id"
    put(store, r)
    got = store.get("t1", r.id)
    assert (got.retention, got.expires_at, got.supersedes, got.superseded_by) == (
        "ephemeral",
        T0 + timedelta(days=2),
        "older-id",
        None,
    )


def test_limit_never_evicts_irreplaceable_or_permanent_and_names_the_class(store):
    keep = [classed("a", "irreplaceable", at=T0), classed("b", "permanent", at=T0 + timedelta(seconds=1))]
    ephemeral = classed("c", "ephemeral", at=T0 + timedelta(seconds=2))
    replaceable = classed("d", "replaceable", at=T0 + timedelta(seconds=3))
    for r in (*keep, ephemeral, replaceable):
        put(store, r)
    outcome = put(store, rec("e", at=T0 + timedelta(seconds=4)), limit=3)
    assert outcome.evicted == [ephemeral.id, replaceable.id]
    assert outcome.evicted_classes == {ephemeral.id: "ephemeral", replaceable.id: "replaceable"}
    for r in keep:
        assert store.get("t1", r.id).deleted_at is None
    reasons = [a.reason for a in store.audit_log("t1") if a.action == "evict"]
    assert any("class ephemeral" in reason for reason in reasons)


def test_enforce_limit_keeps_the_never_evicted_classes(store):
    protected = [classed(f"p{i}", "permanent", at=T0 + timedelta(seconds=i)) for i in range(3)]
    for r in protected:
        put(store, r)
    assert store.enforce_limit("t1", "p", limit=1, at=T0, actor="retention") == []


@pytest.mark.parametrize(
    "klass, expected",
    [
        ("irreplaceable", {"explicit-irr", "pinned-auto"}),
        ("replaceable", {"explicit-rep", "auto"}),
        ("ephemeral", {"eph"}),
        ("permanent", {"perm"}),
    ],
)
def test_list_filters_by_effective_class(store, klass, expected):
    rows = [
        classed("1", "irreplaceable", id="explicit-irr"),
        classed("2", "auto", pinned=True, id="pinned-auto"),
        classed("3", "replaceable", id="explicit-rep"),
        classed("4", "auto", id="auto"),
        classed("5", "ephemeral", id="eph"),
        classed("6", "permanent", id="perm"),
    ]
    for i, r in enumerate(rows):
        r.created_at = T0 + timedelta(seconds=i)
        put(store, r)
    listed = store.list("t1", "p", pinned_only=False, after=None, limit=10, retention=klass)
    assert {r.id for r in listed} == expected
    # Paged with a cursor and pinned_only: the same index ranges.
    first = store.list("t1", "p", pinned_only=False, after=None, limit=1, retention=klass)
    rest = store.list(
        "t1", "p", pinned_only=False, after=(first[0].created_at.timestamp(), first[0].id), limit=10, retention=klass
    )
    assert {r.id for r in first + rest} == expected
    pinned = store.list("t1", "p", pinned_only=True, after=None, limit=10, retention=klass)
    assert {r.id for r in pinned} == ({"pinned-auto"} if klass == "irreplaceable" else set())


def test_replace_keeps_the_earlier_version_and_bumps_the_project(store, gov):
    r = rec("lives in Paris", meta={"tags": ["city"]})
    put(store, r)
    before = store.get("t1", r.id)
    marker = store.change_markers("t1", ["p"])["p"]
    after = replace(
        before,
        content="lives in Berlin",
        sha256="sha-berlin",
        meta={"tags": ["moved"]},
        embedding=np.full(4, 0.25, dtype=np.float32),
        updated_at=T0 + timedelta(hours=1),
    )
    got = gov.replace(before, after, action="update", actor="tester", reason="moved")
    assert (got.content, got.sha256, got.meta) == ("lives in Berlin", "sha-berlin", {"tags": ["moved"]})
    assert np.array_equal(got.embedding, np.full(4, 0.25, dtype=np.float32))
    assert store.change_markers("t1", ["p"])["p"] > marker
    changes = store.changes_since("t1", "p", marker)
    assert [c.content for c in changes.changed] == ["lives in Berlin"]
    [v1] = gov.versions("t1", r.id, limit=10)
    assert (v1.number, v1.content, v1.meta, v1.actor, v1.reason) == (
        1,
        "lives in Paris",
        {"tags": ["city"]},
        "tester",
        "moved",
    )
    assert [a.action for a in store.audit_log("t1", memory_id=r.id)][:1] == ["update"]


def test_replace_from_a_stale_read_is_refused_and_changes_nothing(store, gov):
    r = rec("v1")
    put(store, r)
    before = store.get("t1", r.id)
    gov.replace(
        before,
        replace(before, content="v2", sha256="sha-v2", updated_at=T0 + timedelta(seconds=5)),
        action="update",
        actor="a",
        reason="first",
    )
    with pytest.raises(PreconditionFailed):
        gov.replace(
            before,
            replace(before, content="v3", sha256="sha-v3", updated_at=T0 + timedelta(seconds=9)),
            action="update",
            actor="b",
            reason="lost race",
        )
    assert store.get("t1", r.id).content == "v2"
    assert [v.content for v in gov.versions("t1", r.id, limit=10)] == ["v1"]


def test_replace_of_a_forgotten_or_foreign_memory_is_not_found(store, gov):
    r = rec("gone")
    put(store, r)
    before = store.get("t1", r.id)
    with pytest.raises(NotFound):
        gov.replace(
            replace(before, tenant="t2"),
            replace(before, tenant="t2", content="x"),
            action="update",
            actor="x",
            reason="x",
        )
    store.forget("t1", r.id, at=T0, actor="x", reason="r")
    with pytest.raises(NotFound):
        gov.replace(before, replace(before, content="x"), action="update", actor="x", reason="x")
    assert gov.versions("t1", r.id, limit=10) == []


def test_supersede_keeps_the_old_memory_out_of_search_and_purge(store, gov):
    old, new = rec("lives in Paris"), rec("moved to Berlin")
    put(store, old)
    new.supersedes = old.id
    put(store, new)
    got = gov.supersede("t1", old.id, new.id, at=T0, actor="tester", reason=f"superseded by {new.id}")
    assert (got.superseded_by, got.deleted_reason) == (new.id, "superseded")
    with pytest.raises(NotFound):
        store.get("t1", old.id)
    assert store.get("t1", old.id, include_forgotten=True).content == "lives in Paris"
    assert [r.id for r in store.list("t1", "p", pinned_only=False, after=None, limit=10)] == [new.id]
    assert store.purge_forgotten(before=T0 + timedelta(days=400)) == 0
    assert store.get("t1", old.id, include_forgotten=True).superseded_by == new.id
    assert "supersede" in [a.action for a in store.audit_log("t1", memory_id=old.id)]
    with pytest.raises(NotFound):
        gov.supersede("t2", new.id, old.id, at=T0, actor="x", reason="x")


def test_expire_purges_due_ephemeral_memories_with_an_audit_record(store, gov):
    due, later, kept = classed("due", "ephemeral"), classed("later", "ephemeral"), rec("kept")
    due.expires_at, later.expires_at = T0 + timedelta(hours=1), T0 + timedelta(days=3)
    for r in (due, later, kept):
        put(store, r)
    marker = store.change_markers("t1", ["p"])["p"]
    done = gov.expire(at=T0 + timedelta(hours=2), limit=100)
    assert [a.memory_id for a in done] == [due.id] and done[0].action == "expire"
    with pytest.raises(NotFound):
        store.get("t1", due.id, include_forgotten=True)
    assert store.changes_since("t1", "p", marker).reset  # purged rows leave no tombstone
    assert {r.id for r in store.list("t1", "p", pinned_only=False, after=None, limit=10)} == {later.id, kept.id}
    assert [a.action for a in store.audit_log("t1", memory_id=due.id)] == ["expire"]
    assert gov.expire(at=T0 + timedelta(hours=2), limit=100) == []  # idempotent
    assert [s.memories for s in store.projects("t1")] == [2]


def test_purging_a_memory_drops_its_versions(store, gov):
    r = rec("v1")
    put(store, r)
    before = store.get("t1", r.id)
    gov.replace(
        before,
        replace(before, content="v2", sha256="sha-v2", updated_at=T0 + timedelta(seconds=1)),
        action="update",
        actor="a",
        reason="r",
    )
    store.forget("t1", r.id, at=T0 + timedelta(seconds=2), actor="a", reason="r")
    assert store.purge_forgotten(before=T0 + timedelta(days=40)) == 1
    assert gov.versions("t1", r.id, limit=10) == []


def test_add_audit_and_version_pages_round_trip(store, gov):
    r = rec("v1")
    put(store, r)
    gov.add_audit(
        AuditRecord(
            tenant="t1", memory_id=r.id, project="p", action="refuse", actor="k", reason="forget refused", at=T0
        )
    )
    assert [(a.action, a.reason) for a in store.audit_log("t1", memory_id=r.id)] == [("refuse", "forget refused")]
    before = store.get("t1", r.id)
    gov.replace(
        before,
        replace(before, content="v2", sha256="sha-v2", updated_at=T0 + timedelta(seconds=1)),
        action="update",
        actor="a",
        reason="r",
    )
    pages = [v for page in gov.version_pages("t1", None, page=1) for v in page]
    assert [v.content for v in pages] == ["v1"]
    assert [v for page in gov.version_pages("t1", "other", page=5) for v in page] == []
    assert gov.put_versions("t1", pages) == 0  # already kept
    assert gov.put_versions("t1", [replace(pages[0], number=7)]) == 1


def test_project_ttl_is_kept_per_project_and_tenant(store, gov):
    assert gov.project_ttl("t1", "p") is None
    put(store, rec("x"))
    gov.set_project_ttl("t1", "p", 3600, at=T0)
    gov.set_project_ttl("t1", "new-project", 60, at=T0)
    assert (gov.project_ttl("t1", "p"), gov.project_ttl("t1", "new-project"), gov.project_ttl("t2", "p")) == (
        3600,
        60,
        None,
    )
    assert store.retention_limit("t1", "p") is None  # the limit is its own setting
