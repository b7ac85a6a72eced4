"""One contract for every LearningStore: SQLite (real file), MongoDB on mongomock, and a real
MongoDB server when CAPSULE_TEST_MONGODB_URI is set."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from capsule.core import limits
from capsule.core.errors import Conflict, NotFound
from capsule.core.learning_records import ApplicationRecord, PatternRecord, SolutionRecord
from capsule.store.learning import LearningStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BACKENDS = ["sqlite", "mongomock"] + (["mongodb"] if os.environ.get("CAPSULE_TEST_MONGODB_URI") else [])


@pytest.fixture(params=BACKENDS)
def learning_store(request, tmp_path) -> LearningStore:
    if request.param == "sqlite":
        from capsule.store.sqlite import SQLiteStore
        from capsule.store.sqlite_learning import SQLiteLearningStore

        db = SQLiteStore(tmp_path / "capsule.db")
        s = SQLiteLearningStore(db)
        s.migrate()
        yield s
        db.close()
        return
    from capsule.store.mongo_learning import MongoLearningStore

    if request.param == "mongomock":
        import mongomock

        client = mongomock.MongoClient()
    else:
        import pymongo

        client = pymongo.MongoClient(os.environ["CAPSULE_TEST_MONGODB_URI"])
    name = f"capsule_test_{uuid.uuid4().hex[:8]}"
    s = MongoLearningStore(client[name])
    s.migrate()
    yield s
    client.drop_database(name)
    client.close()


def solution(
    id_: str = "s1", tenant: str = "t", *, title: str = "Fix", category: str = "net", at: datetime = T0, rows: int = 2
) -> SolutionRecord:
    vectors = np.eye(rows, 4, dtype=np.float32) if rows else None
    return SolutionRecord(
        id=id_,
        tenant=tenant,
        title=title,
        category=category,
        body={"title": title, "category": category, "signatures": [{"text": "x"}] * max(rows, 1)},
        created_at=at,
        updated_at=at,
        success=1,
        failure=2,
        embeddings=vectors,
        model="m" if rows else None,
    )


def pattern(
    tag: str = "p", tenant: str = "t", *, occurrences: int = 3, category: str = "general", at: datetime = T0
) -> PatternRecord:
    return PatternRecord(
        tenant=tenant,
        tag=tag,
        category=category,
        terms=["econnrefused"],
        occurrences=occurrences,
        projects=["a", "b"],
        examples=["m1", "m2"],
        description="connect ECONNREFUSED",
        created_at=at,
        updated_at=at,
        first_seen=at,
        last_seen=at + timedelta(hours=occurrences),
        embedding=np.array([0.6, 0.8], dtype=np.float32),
        model="m",
    )


def test_is_a_learning_store(learning_store):
    assert isinstance(learning_store, LearningStore)
    learning_store.migrate()  # idempotent


def test_solution_round_trip_keeps_body_counts_and_embeddings(learning_store):
    learning_store.insert_solution(solution())
    got = learning_store.get_solution("t", "s1")
    assert (got.title, got.category, got.success, got.failure, got.model) == ("Fix", "net", 1, 2, "m")
    assert got.body["signatures"] == [{"text": "x"}, {"text": "x"}]
    assert got.created_at == T0
    np.testing.assert_array_equal(got.embeddings, np.eye(2, 4, dtype=np.float32))


def test_tenants_with_solutions_or_patterns(learning_store):
    assert learning_store.tenants() == []
    learning_store.insert_solution(solution("s1", tenant="b"))
    learning_store.insert_solution(solution("s2", tenant="b"))
    learning_store.upsert_pattern(pattern(tenant="a"))
    assert learning_store.tenants() == ["a", "b"]


def test_solution_without_embeddings(learning_store):
    learning_store.insert_solution(solution(rows=0))
    assert learning_store.get_solution("t", "s1").embeddings is None


def test_solutions_are_tenant_scoped(learning_store):
    learning_store.insert_solution(solution())
    with pytest.raises(NotFound):
        learning_store.get_solution("other", "s1")
    with pytest.raises(NotFound):
        learning_store.delete_solution("other", "s1")
    assert learning_store.list_solutions("other", category=None, after=None, limit=10) == []
    assert learning_store.find_solution("other", "Fix", "net") is None


def test_duplicate_id_conflicts(learning_store):
    learning_store.insert_solution(solution())
    with pytest.raises(Conflict):
        learning_store.insert_solution(solution())


def test_find_solution_by_title_and_category(learning_store):
    learning_store.insert_solution(solution("s1", at=T0))
    learning_store.insert_solution(solution("s2", at=T0 + timedelta(seconds=1)))
    assert learning_store.find_solution("t", "Fix", "net").id == "s1"
    assert learning_store.find_solution("t", "Fix", "other") is None


def test_list_solutions_newest_first_with_cursor_and_category(learning_store):
    for i in range(5):
        learning_store.insert_solution(solution(f"s{i}", at=T0 + timedelta(minutes=i), category="a" if i % 2 else "b"))
    first = learning_store.list_solutions("t", category=None, after=None, limit=2)
    assert [s.id for s in first] == ["s4", "s3"]
    last = first[-1]
    rest = learning_store.list_solutions("t", category=None, after=(last.created_at.timestamp(), last.id), limit=10)
    assert [s.id for s in rest] == ["s2", "s1", "s0"]
    assert [s.id for s in learning_store.list_solutions("t", category="a", after=None, limit=10)] == ["s3", "s1"]
    assert [s.id for s in learning_store.solutions("t", category="b", limit=10)] == ["s4", "s2", "s0"]


def test_replace_keeps_counts_and_created_at(learning_store):
    learning_store.insert_solution(solution())
    new = solution(title="Better", rows=1)
    new.success, new.failure, new.updated_at = 99, 99, T0 + timedelta(days=1)
    learning_store.replace_solution(new)
    got = learning_store.get_solution("t", "s1")
    assert (got.title, got.success, got.failure, got.created_at) == ("Better", 1, 2, T0)
    assert got.updated_at == T0 + timedelta(days=1)
    assert got.embeddings.shape == (1, 4)
    with pytest.raises(NotFound):
        learning_store.replace_solution(solution("missing"))


def test_set_solution_embeddings(learning_store):
    learning_store.insert_solution(solution(rows=0))
    learning_store.set_solution_embeddings("t", "s1", np.ones((1, 3), dtype=np.float32), "m2")
    got = learning_store.get_solution("t", "s1")
    assert got.model == "m2" and got.embeddings.shape == (1, 3)


def test_applications_count_atomically_and_are_kept(learning_store):
    learning_store.insert_solution(solution())
    for i, ok in enumerate([True, True, False]):
        after = learning_store.record_application(
            ApplicationRecord(
                id=f"a{i}",
                tenant="t",
                solution_id="s1",
                success=ok,
                at=T0 + timedelta(minutes=i),
                project="p",
                error="ECONNREFUSED",
                context=None,
            )
        )
    assert (after.success, after.failure) == (3, 3)
    apps = learning_store.applications("t", limit=10)
    assert [a.id for a in apps] == ["a2", "a1", "a0"]
    assert apps[0].success is False and apps[1].project == "p" and apps[1].error == "ECONNREFUSED"
    with pytest.raises(NotFound):
        learning_store.record_application(
            ApplicationRecord(id="x", tenant="other", solution_id="s1", success=True, at=T0)
        )
    assert learning_store.applications("other", limit=10) == []


def test_delete_removes_applications_and_links(learning_store):
    learning_store.insert_solution(solution())
    learning_store.record_application(ApplicationRecord(id="a", tenant="t", solution_id="s1", success=True, at=T0))
    learning_store.link("t", "p", "general", "solution", "s1", success=True, at=T0, evidence="memory:m")
    learning_store.delete_solution("t", "s1")
    with pytest.raises(NotFound):
        learning_store.get_solution("t", "s1")
    assert learning_store.applications("t", limit=10) == []
    assert learning_store.links("t") == []
    with pytest.raises(NotFound):
        learning_store.delete_solution("t", "s1")
    # The evidence went too: a new solution with the same id can be credited again.
    learning_store.insert_solution(solution())
    assert learning_store.link("t", "p", "general", "solution", "s1", success=True, at=T0, evidence="memory:m")[1]


def test_pattern_upsert_keeps_created_at(learning_store):
    learning_store.upsert_pattern(pattern())
    later = pattern(occurrences=5, at=T0 + timedelta(days=2))
    learning_store.upsert_pattern(later)
    got = learning_store.get_pattern("t", "p", "general")
    assert got.occurrences == 5 and got.created_at == T0 and got.updated_at == T0 + timedelta(days=2)
    assert (got.terms, got.projects, got.examples) == (["econnrefused"], ["a", "b"], ["m1", "m2"])
    np.testing.assert_allclose(got.embedding, [0.6, 0.8])
    with pytest.raises(NotFound):
        learning_store.get_pattern("other", "p", "general")
    with pytest.raises(NotFound):
        learning_store.get_pattern("t", "p", "elsewhere")


def test_patterns_filtered_and_ordered(learning_store):
    learning_store.upsert_pattern(pattern("few", occurrences=2))
    learning_store.upsert_pattern(pattern("many", occurrences=9))
    learning_store.upsert_pattern(pattern("build", occurrences=4, category="build"))
    learning_store.upsert_pattern(pattern("theirs", tenant="other", occurrences=50))
    assert [p.tag for p in learning_store.patterns("t", category=None, min_occurrences=0, limit=10)] == [
        "many",
        "build",
        "few",
    ]
    assert [p.tag for p in learning_store.patterns("t", category=None, min_occurrences=3, limit=10)] == [
        "many",
        "build",
    ]
    assert [p.tag for p in learning_store.patterns("t", category="build", min_occurrences=0, limit=10)] == ["build"]
    assert [p.tag for p in learning_store.patterns("t", category=None, min_occurrences=0, limit=1)] == ["many"]


def test_link_with_evidence_counts_once(learning_store):
    link, counted = learning_store.link("t", "p", "general", "memory", "m9", success=True, at=T0, evidence="memory:m9")
    assert counted and (link.success, link.failure) == (1, 0)
    link, counted = learning_store.link("t", "p", "general", "memory", "m9", success=True, at=T0, evidence="memory:m9")
    assert not counted and (link.success, link.failure) == (1, 0)
    link, counted = learning_store.link(
        "t", "p", "general", "memory", "m9", success=False, at=T0, evidence="memory:m10"
    )
    assert counted and (link.success, link.failure) == (1, 1)


def test_link_without_evidence_counts_every_time(learning_store):
    for ok in (True, True, False):
        link, counted = learning_store.link("t", "p", "general", "solution", "s1", success=ok, at=T0, evidence=None)
        assert counted
    assert (link.success, link.failure, link.kind, link.target_id) == (2, 1, "solution", "s1")
    assert link.last_at == T0


def test_links_filters_and_order(learning_store):
    for _ in range(3):
        learning_store.link("t", "p", "general", "solution", "best", success=True, at=T0, evidence=None)
    learning_store.link("t", "p", "general", "solution", "once", success=True, at=T0, evidence=None)
    learning_store.link("t", "q", "build", "memory", "m", success=True, at=T0, evidence=None)
    learning_store.link("other", "p", "general", "solution", "theirs", success=True, at=T0, evidence=None)
    assert [link.target_id for link in learning_store.links("t", tag="p")] == ["best", "once"]
    assert [link.target_id for link in learning_store.links("t", min_success=2)] == ["best"]
    assert [link.target_id for link in learning_store.links("t", category="build")] == ["m"]
    assert [link.target_id for link in learning_store.links("t", kind="memory")] == ["m"]
    assert [link.target_id for link in learning_store.links("t", limit=1)] == ["best"]
    assert [link.target_id for link in learning_store.links("other")] == ["theirs"]


def test_lease_excludes_other_holders_until_it_expires(learning_store):
    until = T0 + timedelta(minutes=15)
    assert learning_store.acquire_lease("job:x", "a", now=T0, until=until)
    assert not learning_store.acquire_lease("job:x", "b", now=T0 + timedelta(minutes=1), until=until)
    assert learning_store.acquire_lease("job:x", "a", now=T0 + timedelta(minutes=1), until=until + timedelta(minutes=1))
    assert learning_store.acquire_lease("job:y", "b", now=T0, until=until)  # another job is another lease
    assert learning_store.acquire_lease(
        "job:x", "b", now=until + timedelta(minutes=2), until=until + timedelta(hours=1)
    )
    learning_store.release_lease("job:x", "a")  # no longer a's: changes nothing
    assert not learning_store.acquire_lease(
        "job:x", "c", now=until + timedelta(minutes=3), until=until + timedelta(hours=1)
    )
    learning_store.release_lease("job:x", "b")
    assert learning_store.acquire_lease(
        "job:x", "c", now=until + timedelta(minutes=3), until=until + timedelta(hours=1)
    )


def test_job_state_round_trip(learning_store):
    assert learning_store.job_state("mining") == {}
    learning_store.save_job_state("mining", {"after": "tenant-b"}, at=T0)
    learning_store.save_job_state("mining", {"after": "tenant-c"}, at=T0)
    assert learning_store.job_state("mining") == {"after": "tenant-c"}


# ---- kept keys of imported fixpack files ------------------------------------------------

FIXPACK_FILES = sorted((Path(__file__).parent.parent / "learning" / "fixpacks").glob("*.json"))
REAL_FIXPACK_FILES = sorted((Path(__file__).parent.parent / "learning" / "fixtures" / "vector_bridge").glob("*.json"))
AWKWARD_EXTRA = {
    "_comment": 'ünïcødé ✓ and "quotes"',
    "id": 16,
    "_id": "not our id",
    "none": None,
    "yes": True,
    "big": 2**63 - 1,
    "small": -(2**63),
    "float": 0.1,
    "huge_float": 1e308,
    "empty": {},
    "nothing": [],
    "nested": {"list": [1, "two", {"three": [3.0, None]}], "order": {"b": 1, "a": 2}},
}


def body_of(raw: dict) -> dict:
    """The body the service stores for an imported file (kept keys under 'extra', payloads as written)."""
    from capsule.learning import models
    from capsule.learning.service import RECORD_FIELDS

    return models.read_fixpack_file(raw).model_dump(mode="json", exclude=RECORD_FIELDS)


@pytest.mark.parametrize("path", FIXPACK_FILES, ids=lambda p: p.stem)
def test_imported_fixpack_bodies_round_trip_with_their_kept_keys(learning_store, path):
    body = body_of(json.loads(path.read_text("utf-8")))
    assert any("extra" in s for s in body["steps"] + body["checks"] + body["signatures"]) or body.get("extra")
    record = solution()
    record.body = body
    learning_store.insert_solution(record)
    assert learning_store.get_solution("t", "s1").body == body
    assert learning_store.solutions("t", category=None, limit=5)[0].body == body
    assert learning_store.list_solutions("t", category=None, after=None, limit=5)[0].body == body


def test_awkward_kept_values_round_trip_exactly(learning_store):
    record = solution()
    record.body = {
        **record.body,
        "extra": AWKWARD_EXTRA,
        "steps": [
            {
                "step_order": 1,
                "kind": "env",
                "payload": {"vars": {"A": "1"}, "extra": AWKWARD_EXTRA},
                "extra": AWKWARD_EXTRA,
            }
        ],
    }
    learning_store.insert_solution(record)
    got = learning_store.get_solution("t", "s1").body
    assert got == record.body
    assert list(got["extra"]["nested"]["order"]) == ["b", "a"]  # key order is the file's
    assert isinstance(got["extra"]["big"], int) and isinstance(got["extra"]["huge_float"], float)
    replaced = solution(at=T0 + timedelta(seconds=1))
    replaced.body = {**record.body, "extra": {"_comment": "second import"}}
    learning_store.replace_solution(replaced)
    assert learning_store.get_solution("t", "s1").body["extra"] == {"_comment": "second import"}


@pytest.mark.parametrize("path", REAL_FIXPACK_FILES, ids=lambda p: p.stem)
def test_the_vector_bridge_files_bodies_round_trip_with_their_own_payload_keys(learning_store, path):
    raw = json.loads(path.read_text("utf-8"))
    body = body_of(raw)
    assert [s["payload"] for s in body["steps"]] == [s["payload"] for s in raw["steps"]]
    record = solution()
    record.body = body
    learning_store.insert_solution(record)
    assert learning_store.get_solution("t", "s1").body == body


def test_times_are_kept_and_set_by_each_application(learning_store):
    at = T0 + timedelta(days=3)
    record = solution()
    record.last_applied_at, record.verified_on = T0, T0 - timedelta(days=1)
    learning_store.insert_solution(record)
    got = learning_store.get_solution("t", "s1")
    assert (got.last_applied_at, got.verified_on) == (T0, T0 - timedelta(days=1))
    failed = learning_store.record_application(
        ApplicationRecord(id="a1", tenant="t", solution_id="s1", success=False, at=at)
    )
    assert (failed.last_applied_at, failed.verified_on) == (at, T0 - timedelta(days=1))
    worked = learning_store.record_application(
        ApplicationRecord(id="a2", tenant="t", solution_id="s1", success=True, at=at + timedelta(hours=1))
    )
    assert worked.last_applied_at == worked.verified_on == at + timedelta(hours=1)
    assert learning_store.solutions("t", category=None, limit=1)[0].verified_on == at + timedelta(hours=1)
    assert learning_store.list_solutions("t", category=None, after=None, limit=1)[0].verified_on == worked.verified_on
    replaced = solution(at=T0 + timedelta(days=9))  # a replace keeps them, as it keeps the counts
    learning_store.replace_solution(replaced)
    assert learning_store.get_solution("t", "s1").last_applied_at == at + timedelta(hours=1)


def test_a_solution_never_applied_has_no_times_and_a_saturated_count_still_sets_them(learning_store):
    fresh = solution()
    learning_store.insert_solution(fresh)
    got = learning_store.get_solution("t", "s1")
    assert got.last_applied_at is None and got.verified_on is None
    full = solution("s2")
    full.success = limits.MAX_COUNT
    learning_store.insert_solution(full)
    after = learning_store.record_application(
        ApplicationRecord(id="a", tenant="t", solution_id="s2", success=True, at=T0 + timedelta(days=1))
    )
    assert after.success == limits.MAX_COUNT and after.verified_on == T0 + timedelta(days=1)


def test_search_candidates_for_a_component_include_those_naming_none(learning_store):
    for id_, component in (("a", "infra"), ("b", "web"), ("c", None), ("d", "missing")):
        record = solution(id_, title=id_)
        if component != "missing":
            record.body = {**record.body, "component": component}
        learning_store.insert_solution(record)
    found = {r.id for r in learning_store.solutions("t", category=None, limit=10, component="infra")}
    assert found == {"a", "c", "d"}
    assert len(learning_store.solutions("t", category=None, limit=10)) == 4
    assert {r.id for r in learning_store.solutions("t", category="net", limit=10, component="web")} == {"b", "c", "d"}
