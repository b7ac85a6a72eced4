"""Governance through the service on a real SQLite store: retention classes, expiry by the
retention job, update with history and a warm index, supersession, forget with force, and a
database made before governance migrating in place."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest

from capsule.core.errors import Conflict, InvalidInput, PreconditionFailed
from capsule.runtime.learning import build_jobs
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_schema import MIGRATIONS

T = "tenant-a"


def store(service, content, project="p", **extra):
    return service.store_memory(T, {"project": project, "content": content, **extra})


def test_the_limit_evicts_around_the_protected_classes_and_names_the_class(service):
    service.set_retention_limit(T, "p", {"retention_limit": 2})
    keep = store(service, "the contract with ACME", retention="irreplaceable").memory.id
    store(service, "design principles", retention="permanent")
    gone = store(service, "scratch note", retention="ephemeral", ttl=3600).memory.id
    result = store(service, "newest note")
    assert [e.id for e in result.evicted] == [gone]
    assert "class ephemeral" in result.evicted[0].reason and "class ephemeral" in result.explanation
    assert service.get(T, keep).memory.effective_retention == "irreplaceable"
    over = store(service, "one more")
    assert "irreplaceable, permanent" in over.explanation  # nothing more could be evicted


def test_the_retention_job_purges_expired_ephemeral_memories_and_audits(service, clock):
    temp = store(service, "cache is warm", ttl=60).memory
    kept = store(service, "cache policy", retention="permanent").memory
    assert temp.expires_at == clock.now + timedelta(seconds=60)
    jobs = build_jobs(service)
    early = jobs.run("retention")
    assert early.counts["ephemeral_expired"] == 0
    clock.advance(seconds=61)
    report = jobs.run("retention")
    assert report.counts["ephemeral_expired"] == 1 and "1 ephemeral" in report.explanation
    ids = {m.id for m in service.list_memories(T, {"project": "p"}).memories}
    assert ids == {kept.id}
    [audit] = service.store.audit_log(T, memory_id=temp.id)
    assert (audit.action, audit.actor) == ("expire", "retention")


def test_the_default_ttl_is_the_deployments(service, clock):
    temp = store(service, "ephemeral without a ttl", retention="ephemeral").memory
    assert temp.expires_at == clock.now + timedelta(seconds=service.settings.ephemeral_ttl)


def test_an_update_reaches_a_warm_index(service):
    memory = store(service, "the staging database is on port 5432").memory
    first = service.search(T, {"project": "p", "query": "staging database port"})
    assert [h.id for h in first.results] == [memory.id]  # the index is warm now
    service.history.update(T, memory.id, {"content": "the staging cache listens on 6379"}, if_match=memory.sha256)
    after = service.search(T, {"project": "p", "query": "staging cache 6379", "mode": "bm25"})
    assert [h.content for h in after.results] == ["the staging cache listens on 6379"]
    stale = service.search(T, {"project": "p", "query": "5432", "mode": "bm25"})
    assert stale.results == []


def test_if_match_guards_updates_and_a_failed_one_changes_nothing(service):
    memory = store(service, "v1").memory
    with pytest.raises(InvalidInput) as bad:
        service.history.update(T, memory.id, {"content": "v2"}, if_match="not-a-sha")
    assert bad.value.field == "If-Match"
    with pytest.raises(PreconditionFailed):
        service.history.update(T, memory.id, {"content": "v2"}, if_match="0" * 64)
    assert service.get(T, memory.id).memory.content == "v1"
    assert service.history.history(T, memory.id).versions[-1].version == 1


def test_class_changes_and_revert_are_audited(service):
    memory = store(service, "v1").memory
    service.history.update(T, memory.id, {"content": "v2", "retention": "permanent", "reason": "promoted"})
    result = service.history.revert(T, memory.id, {"version": 1})
    assert result.memory.content == "v1" and result.memory.retention == "auto" and result.version == 3
    actions = [a.action for a in service.store.audit_log(T, memory_id=memory.id)]
    assert actions == ["revert", "retention", "update"]
    with pytest.raises(InvalidInput):
        service.history.revert(T, memory.id, {"version": 3})  # the current one


def test_supersession_search_and_chain(service):
    a = store(service, "Ada lives in Paris").memory
    b = store(service, "Ada lives in Lyon", supersedes=a.id).memory
    c = store(service, "Ada lives in Berlin", supersedes=b.id).memory
    found = service.search(T, {"project": "p", "query": "Ada lives", "include_superseded": True})
    assert [h.id for h in found.results] == [c.id]
    assert [s.id for s in found.results[0].superseded] == [b.id, a.id]
    assert f"{c.id} superseded {b.id}" in found.explanation
    assert service.get(T, a.id).memory.superseded_by == b.id


def test_forget_of_an_irreplaceable_memory_needs_force_and_the_refusal_is_audited(service):
    memory = store(service, "root CA fingerprint", retention="irreplaceable").memory
    with pytest.raises(Conflict) as refused:
        service.forget(T, memory.id)
    assert refused.value.details[0]["field"] == "force"
    assert [a.action for a in service.store.audit_log(T, memory_id=memory.id)] == ["refuse"]
    assert service.forget(T, memory.id, {"force": True}).memory.forgotten_at is not None
    pinned = store(service, "pinned as before", pinned=True).memory  # auto + pinned: forgets as it always did
    assert service.forget(T, pinned.id).memory.forgotten_at is not None


def test_a_database_from_before_governance_migrates_in_place(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for number, script in enumerate(MIGRATIONS[:7], start=1):
        for statement in filter(str.strip, script.split(";")):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.execute(
        "INSERT INTO memories (id, tenant, project, content, sha256, occurred_at, created_at, updated_at) "
        "VALUES ('old', 't', 'p', 'kept from before', 'x', 1, 1, 1)"
    )
    conn.commit()
    conn.close()
    upgraded = SQLiteStore(path)
    upgraded.migrate()
    record = upgraded.get("t", "old")
    assert (record.retention, record.expires_at, record.supersedes) == ("auto", None, None)
    assert upgraded._read("PRAGMA user_version")[0][0] == len(MIGRATIONS)
    upgraded.close()


def test_a_project_default_ttl_applies_to_its_ephemeral_memories(service, clock):
    result = service.set_retention_limit(T, "p", {"ephemeral_ttl": 120})
    assert "120 seconds" in result.explanation
    temp = store(service, "short lived", retention="ephemeral").memory
    assert temp.expires_at == clock.now + timedelta(seconds=120)
    other = store(service, "elsewhere", project="q", retention="ephemeral").memory
    assert other.expires_at == clock.now + timedelta(seconds=service.settings.ephemeral_ttl)
    with pytest.raises(InvalidInput) as bad:
        service.set_retention_limit(T, "p", {"ephemeral_ttl": 0})
    assert bad.value.field == "ephemeral_ttl"
    with pytest.raises(InvalidInput):
        service.set_retention_limit(T, "p", {})
