"""`capsule tenants merge --from-sessions` (capsule.store.tenants) on the SQLite store and on MongoDB
(mongomock): tenants stored under assumed-role session ARNs move into the role's tenant."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.core.learning_records import ApplicationRecord, PatternRecord, SolutionRecord
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store import tenants

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/capsule-dev"
S1 = f"arn:aws:sts::{ACCOUNT}:assumed-role/capsule-dev/botocore-session-1795989600"
S2 = f"arn:aws:sts::{ACCOUNT}:assumed-role/capsule-dev/botocore-session-1795993200"
OTHER = f"arn:aws:sts::{ACCOUNT}:assumed-role/capsule-ci/GitHubActions"
USER = f"arn:aws:iam::{ACCOUNT}:user/alice"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "mongomock"])
def stores(request, tmp_path):
    """(memory store, learning store) in one database."""
    if request.param == "sqlite":
        from capsule.store.sqlite import SQLiteStore
        from capsule.store.sqlite_learning import SQLiteLearningStore

        store = SQLiteStore(tmp_path / "capsule.db")
        store.migrate()
        learning = SQLiteLearningStore(store)
        learning.migrate()
        yield store, learning
        store.close()
        return
    mongomock = pytest.importorskip("mongomock")
    from capsule.store.mongo import MongoStore
    from capsule.store.mongo_learning import MongoLearningStore

    client = mongomock.MongoClient()
    store = MongoStore(client.get_database("merge"), transactions=False)
    store.migrate()
    learning = MongoLearningStore(store.db)
    learning.migrate()
    yield store, learning
    client.close()


def remember(service, tenant, project, content, **extra):
    return service.store_memory(tenant, {"project": project, "content": content, **extra}).memory.id


def pattern(tenant, occurrences, description):
    return PatternRecord(
        tenant=tenant,
        tag="redis-refused",
        category="network",
        terms=["redis", "refused"],
        occurrences=occurrences,
        projects=["api"],
        examples=[],
        description=description,
        created_at=T0,
        updated_at=T0,
    )


@pytest.fixture
def world(stores, tmp_path):
    store, learning = stores
    service = MemoryService(
        store,
        HashingEmbedder(),
        clock=FrozenClock(),
        settings=Settings(data_dir=tmp_path, embedder="hashing", retention_limit=100),
    )
    ids = {
        "role": remember(service, ROLE, "api", "the role already knew: deploys use blue/green"),
        "s1": remember(service, S1, "api", "session one: redis refused connections on port 6380", pinned=True),
        "s1_gone": remember(service, S1, "api", "session one: a note forgotten later"),
        "s2": remember(service, S2, "docs", "session two: the docs build with mkdocs"),
        "other": remember(service, OTHER, "api", "the CI role's own memory"),
        "user": remember(service, USER, "api", "alice's own memory"),
    }
    service.forget(S1, ids["s1_gone"], {"reason": "outdated"})
    service.feedback(S1, ids["s1"], {"helpful": True})
    service.set_retention_limit(S2, "docs", {"retention_limit": 50})
    learning.insert_solution(
        SolutionRecord(
            id="sol-1",
            tenant=S1,
            title="restart redis",
            category="network",
            body={"steps": []},
            created_at=T0,
            updated_at=T0,
        )
    )
    learning.record_application(ApplicationRecord(id="app-1", tenant=S1, solution_id="sol-1", success=True, at=T0))
    learning.upsert_pattern(pattern(S1, 5, "seen more in session one"))
    learning.upsert_pattern(pattern(ROLE, 2, "seen less by the role"))
    for tenant, evidence in ((S1, "m-1"), (S1, "m-2"), (ROLE, "m-3"), (S2, "m-1")):
        learning.link(tenant, "redis-refused", "network", "solution", "sol-1", success=True, at=T0, evidence=evidence)
    return service, learning, ids


def everything(store, learning, tenant):
    """What a tenant sees, through the stores' public reads."""
    return {
        "projects": sorted((p.project, p.memories, p.forgotten, p.retention_limit) for p in store.projects(tenant)),
        "audit": len(store.audit_log(tenant)),
        "solutions": [s.id for s in learning.solutions(tenant, category=None, limit=10)],
        "applications": [a.id for a in learning.applications(tenant, limit=10)],
        "patterns": [
            (p.occurrences, p.description)
            for p in learning.patterns(tenant, category=None, min_occurrences=0, limit=10)
        ],
        "links": [(link.success, link.failure) for link in learning.links(tenant)],
    }


def test_a_dry_run_says_what_would_move_and_changes_nothing(world, stores):
    store, learning = stores
    before = {t: everything(store, learning, t) for t in (ROLE, S1, S2, OTHER, USER)}
    report = tenants.merge(tenants.mover_for(store))
    assert [(m.source, m.target) for m in report.moves] == sorted(
        [(S1, ROLE), (S2, ROLE), (OTHER, f"arn:aws:iam::{ACCOUNT}:role/capsule-ci")]
    )
    counts = {m.source: m.counts for m in report.moves}
    assert counts[S1]["memories"] == 2 and counts[S1]["solutions"] == 1 and counts[S1]["pattern_links"] == 1
    line = next(x for x in report.explanation.splitlines() if x.endswith(f"from {S1} into {ROLE}"))
    assert line.startswith("would move ") and "2 memories" in line and "1 solutions" in line
    assert "dry run: nothing changed" in report.explanation
    assert {t: everything(store, learning, t) for t in (ROLE, S1, S2, OTHER, USER)} == before


def test_merging_moves_every_session_into_its_role(world, stores):
    store, learning = stores
    service, _, ids = world
    api_version = store.change_markers(ROLE, ["api"])["api"]
    report = tenants.merge(tenants.mover_for(store), apply=True)
    assert report.applied and len(report.moves) == 3
    for session in (S1, S2, OTHER):
        assert everything(store, learning, session) == {
            "projects": [],
            "audit": 0,
            "solutions": [],
            "applications": [],
            "patterns": [],
            "links": [],
        }
    role = everything(store, learning, ROLE)
    assert role["projects"] == [("api", 2, 1, None), ("docs", 1, 0, 50)]
    assert role["solutions"] == ["sol-1"] and role["applications"] == ["app-1"]
    assert role["patterns"] == [(5, "seen more in session one")]  # the one seen more often
    assert role["links"] == [(4, 0)]  # 2 (S1) + 1 (role) + 1 (S2): counters add up
    assert role["audit"] == 1  # the forget
    assert store.get(ROLE, ids["s1"]).pinned and store.get(ROLE, ids["s1"]).helpful == 1
    assert everything(store, learning, USER)["projects"] == [("api", 1, 0, None)]  # users are not sessions
    # A warm index of the role's project sees the moved memories as changes.
    changes = store.changes_since(ROLE, "api", api_version)
    assert store.change_markers(ROLE, ["api"])["api"] > api_version
    assert ids["s1"] in {r.id for r in changes.changed}
    found = service.search(ROLE, {"query": "redis refused connections port", "project": "api"})
    assert found.results[0].id == ids["s1"]


def test_merging_again_finds_nothing_and_counts_nothing_twice(world, stores):
    store, learning = stores
    mover = tenants.mover_for(store)
    tenants.merge(mover, apply=True)
    first = everything(store, learning, ROLE)
    again = tenants.merge(mover, apply=True)
    assert again.moves == [] and "nothing to merge" in again.explanation
    assert everything(store, learning, ROLE) == first


def test_a_later_session_merges_into_what_is_already_there(world, stores):
    store, learning = stores
    service, _, _ = world
    tenants.merge(tenants.mover_for(store), apply=True)
    late = remember(service, S2, "api", "written by an old deployment after the first merge")
    report = tenants.merge(tenants.mover_for(store), apply=True)
    assert [m.source for m in report.moves] == [S2]
    assert store.get(ROLE, late).tenant == ROLE
    assert [p for p in everything(store, learning, ROLE)["projects"] if p[0] == "api"] == [("api", 3, 1, None)]


def test_only_one_roles_sessions_when_asked(world, stores):
    store, _ = stores
    report = tenants.merge(tenants.mover_for(store), apply=True, role=ROLE)
    assert sorted(m.source for m in report.moves) == [S1, S2]
    assert store.projects(OTHER)  # the CI role's session is untouched


def test_mongo_moves_memories_in_batches_after_the_targets_own(tmp_path):
    mongomock = pytest.importorskip("mongomock")
    from capsule.store.mongo import MongoStore
    from capsule.store.mongo_tenants import MongoTenantMover

    store = MongoStore(mongomock.MongoClient().get_database("batches"), transactions=False)
    store.migrate()
    service = MemoryService(
        store,
        HashingEmbedder(),
        clock=FrozenClock(),
        settings=Settings(data_dir=tmp_path, embedder="hashing", retention_limit=100),
    )
    own = remember(service, ROLE, "api", "the role's first memory")
    moved = [remember(service, S1, "api", f"session memory number {i}") for i in range(5)]
    report = tenants.merge(MongoTenantMover(store, batch=2), apply=True)
    assert report.moves[0].counts["memories"] == 5
    docs = list(store.memories.find({"tenant": ROLE}, sort=[("seq", 1)]))
    assert [d["id"] for d in docs] == [own, *moved]  # the source's order, after the target's
    assert len({d["seq"] for d in docs}) == 6
    assert store.projects_.find_one({"tenant": ROLE, "name": "api"})["seq"] >= docs[-1]["seq"]
    assert len({d["version"] for d in docs[1:]}) == 3  # three batches, three writes


def test_a_merged_project_over_its_limit_gets_a_limit_that_keeps_every_memory(world, stores):
    store, _ = stores
    dry = tenants.merge(tenants.mover_for(store), store=store, default_limit=1, role=ROLE)
    assert {m.source: m.raised for m in dry.moves} == {S1: {"api": 2}, S2: {}}
    assert "would raise the retention limit of" in dry.explanation and store.retention_limit(ROLE, "api") is None
    report = tenants.merge(tenants.mover_for(store), store=store, default_limit=1, role=ROLE, apply=True, at=T0)
    assert {m.source: m.raised for m in report.moves} == {S1: {"api": 2}, S2: {}}
    assert store.retention_limit(ROLE, "api") == 2 and store.retention_limit(ROLE, "docs") == 50
    assert store.enforce_limit(ROLE, "api", limit=2, at=T0, actor="retention") == []  # nothing evicted


def test_raised_limits_is_pure_arithmetic():
    from capsule.core.records import ProjectStats

    def stats(project, memories, limit=None):
        return ProjectStats(
            project=project, memories=memories, pinned=0, forgotten=0, retention_limit=limit, last_activity=T0
        )

    source = [stats("a", 60), stats("b", 10, limit=5), stats("c", 1)]
    target = [stats("a", 50, limit=200), stats("c", 99)]
    assert tenants.raised_limits(source, target, default_limit=100) == {"b": 10}
    assert tenants.raised_limits([stats("a", 60)], [stats("a", 50)], default_limit=100) == {"a": 110}


def test_principal_scopes_move_only_to_a_target_without_its_own(world, stores):
    from capsule.store.scopes import scope_settings

    store, _ = stores
    settings = scope_settings(store)
    role_rules = [{"principal": f"arn:aws:iam::{ACCOUNT}:user/*", "scope": {"access": "read"}}]
    session_rules = [{"principal": "*", "scope": {"access": "write"}}]
    settings.set_principal_rules(ROLE, role_rules, at=T0)
    settings.set_principal_rules(S1, session_rules, at=T0)
    settings.set_principal_rules(OTHER, session_rules, at=T0)
    tenants.merge(tenants.mover_for(store), apply=True)
    ci_role = f"arn:aws:iam::{ACCOUNT}:role/capsule-ci"
    assert settings.principal_rules(ROLE) == role_rules  # the target's own rules win
    assert settings.principal_rules(ci_role) == session_rules  # it had none: the source's moved
    assert settings.principal_rules(S1) == [] and settings.principal_rules(OTHER) == []
