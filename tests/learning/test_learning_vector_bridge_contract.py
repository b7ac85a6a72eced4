"""The learning service where the Vector Bridge's contract is what callers speak: a solution import that
always inserts (``solution_upsert``), an importer setting counts and times, ``pattern_solutions``
without a category, and ``solution_apply``'s times on both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fixpack_files import REAL, load
from learning_helpers import FlakyEmbedder, fixpack

from capsule.core.clock import FrozenClock
from capsule.core.errors import InvalidInput, NotFound
from capsule.learning import LearningService

T0 = datetime(2025, 3, 1, 12, tzinfo=UTC)


def test_always_new_inserts_beside_a_solution_with_the_same_title(world):
    first = world.learning.import_solution("t", load(REAL[0]))
    again = world.learning.import_solution("t", load(REAL[0]), always_new=True)
    assert again.created and again.solution.id != first.solution.id
    assert len(world.learning.list_solutions("t").solutions) == 2
    # Without the flag, an import still replaces the one with this title and category.
    third = world.learning.import_solution("t", load(REAL[0]))
    assert not third.created and third.solution.id == first.solution.id


def test_an_importer_sets_the_counts_and_times_of_a_new_solution(world):
    body = {
        **load(REAL[1]),
        "success_count": 7,
        "failure_count": 2,
        "last_applied_at": "2025-02-01T10:00:00Z",
        "verified_on": T0,
    }
    solution = world.learning.import_solution("t", body, always_new=True).solution
    shown = world.learning.get_solution("t", solution.id).solution
    assert (shown.success_count, shown.failure_count) == (7, 2)
    assert shown.last_applied_at == datetime(2025, 2, 1, 10, tzinfo=UTC) and shown.verified_on == T0
    stored = world.learning.store.get_solution("t", solution.id).body
    assert not {"success_count", "failure_count", "last_applied_at", "verified_on"} & set(stored)
    naive = world.learning.import_solution("t", {**body, "verified_on": "2025-02-01T10:00:00"}, always_new=True)
    assert naive.solution.verified_on == datetime(2025, 2, 1, 10, tzinfo=UTC)  # a time without offset: UTC
    for bad in ({"verified_on": "yesterday"}, {"last_applied_at": 1738400000}, {"success_count": -1}):
        with pytest.raises(InvalidInput) as caught:
            world.learning.import_solution("t", {**load(REAL[1]), **bad}, always_new=True)
        assert caught.value.field == next(iter(bad))


def test_an_upsert_may_have_no_signatures_and_null_text_fields(world):
    # solution_upsert accepted empty signatures; a database row may hold a null description.
    body = {
        "title": "Nothing to match yet",
        "description": None,
        "category": "devops",
        "component": None,
        "signatures": [],
        "steps": [],
    }
    solution = world.learning.import_solution("t", body, always_new=True).solution
    assert solution.signatures == [] and solution.description == ""
    assert world.learning.solution_search("t", {"error": "anything at all"}).results == []
    with pytest.raises(InvalidInput) as caught:
        world.learning.create_solution("t", {**body, "description": ""})
    assert caught.value.field == "signatures"


def test_pattern_solutions_without_a_category_searches_every_category(world):
    a = world.learning.create_solution("t", fixpack("A")).solution
    b = world.learning.create_solution("t", fixpack("B")).solution
    for category, solution_id, outcomes in (
        ("code", a.id, [True, True]),
        ("error", a.id, [False]),
        ("error", b.id, [True]),
    ):
        for ok in outcomes:
            world.learning.pattern_link(
                "t", {"tag": "redis", "category": category, "solution_id": solution_id, "success": ok}
            )
    every = world.learning.pattern_solutions("t", {"tag": "redis"})
    assert [(s.id, s.success, s.failure) for s in every.solutions] == [(b.id, 1, 0), (a.id, 2, 1)] or [
        (s.id, s.success, s.failure) for s in every.solutions
    ] == [(a.id, 2, 1), (b.id, 1, 0)]
    assert {s.id for s in every.solutions} == {a.id, b.id} and len(every.solutions) == 2
    assert "in 2 categories (code, error; counts summed across them)" in every.explanation
    only = world.learning.pattern_solutions("t", {"tag": "redis", "category": "code"})
    assert [(s.id, s.success, s.failure) for s in only.solutions] == [(a.id, 2, 0)]
    with pytest.raises(NotFound):
        world.learning.pattern_solutions("t", {"tag": "no-such-tag"})
    with pytest.raises(NotFound):  # a given category is still exact (its default is no longer 'general')
        world.learning.pattern_solutions("t", {"tag": "redis", "category": "general"})


def test_solution_search_takes_component(world):
    worker = world.learning.create_solution("t", fixpack()).solution  # component "worker"
    other = world.learning.create_solution("t", fixpack("Other", component="api")).solution
    error = "connect ECONNREFUSED 127.0.0.1:6379"
    assert {m.solution.id for m in world.learning.solution_search("t", {"error": error}).results} == {
        worker.id,
        other.id,
    }
    assert [
        m.solution.id for m in world.learning.solution_search("t", {"error": error, "component": "api"}).results
    ] == [other.id]
    with pytest.raises(InvalidInput) as caught:
        world.learning.solution_search("t", {"error": error, "component": ""})
    assert caught.value.field == "component"


@pytest.fixture
def on_mongo():
    mongomock = pytest.importorskip("mongomock")
    from capsule.store.mongo import MongoStore
    from capsule.store.mongo_learning import MongoLearningStore

    client = mongomock.MongoClient()
    store = MongoStore(client.get_database("capsule"), transactions=False)
    store.migrate()
    learning_store = MongoLearningStore(client.get_database("capsule"))
    learning_store.migrate()
    clock = FrozenClock()
    yield LearningService(learning_store, store, FlakyEmbedder(), clock=clock), clock
    client.close()


def test_the_real_files_import_and_apply_with_times_on_mongodb(on_mongo):
    learning, clock = on_mongo
    for path in REAL:
        raw = load(path)
        solution = learning.import_solution("t", raw).solution
        shown = learning.get_solution("t", solution.id).solution
        assert [s.payload for s in shown.steps] == [s["payload"] for s in raw["steps"]]
        assert shown.monorepo_tool == raw.get("monorepo_tool") and shown.component == raw["component"]
        found = learning.solution_search("t", {"error": raw["signatures"][0]["text"], "component": raw["component"]})
        assert found.results[0].solution.id == solution.id
        clock.advance(minutes=1)
        worked = learning.solution_apply("t", solution.id, {"success": True}).solution
        assert worked.last_applied_at == worked.verified_on == clock()
        clock.advance(minutes=1)
        failed = learning.solution_apply("t", solution.id, {"success": False}).solution
        assert failed.last_applied_at == clock() and failed.verified_on == worked.verified_on
        assert (failed.success_count, failed.failure_count) == (1, 1)
    assert clock() - timedelta(minutes=2 * len(REAL)) < clock()


@pytest.mark.parametrize("spelling", ["variable", "key", "name"])
def test_an_env_value_is_guarded_under_its_variable_name_whatever_the_spelling(world, spelling):
    secret = "q8Zr2Lm9/Vx4Tn7Kp1Wb" + "6Hy3Jd5Fs0Gc+Na8Re2U"  # fake; found only as the value of a secret's name
    # (AWS's documented wJalrXUtnFEMI/...EXAMPLEKEY is a placeholder the guard leaves alone, issue 37)
    step = {"kind": "env", "payload": {spelling: "AWS_SECRET_ACCESS_KEY", "value": secret}}
    solution = world.learning.import_solution("t", fixpack(steps=[step])).solution
    payload = world.learning.get_solution("t", solution.id).solution.steps[0].payload
    assert set(payload) == {spelling, "value"} and secret not in payload["value"] and "REDACTED" in payload["value"]
