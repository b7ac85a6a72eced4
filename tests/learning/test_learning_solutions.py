import copy

import pytest
from learning_helpers import fixpack

from capsule.core.errors import InvalidInput, NotFound, PayloadTooLarge


def _count(world, tenant="t"):
    return len(world.learning.list_solutions(tenant, {"limit": 100}).solutions)


def test_create_get_round_trip_keeps_the_fixpack(world):
    created = world.learning.create_solution("t", fixpack())
    s = created.solution
    assert "Created solution" in created.explanation
    assert [step.step_order for step in s.steps] == [1, 2]  # ordered by step_order
    assert s.steps[0].payload == {
        "file": ".env",
        "search": "REDIS_URL=redis://localhost",
        "replace": "REDIS_URL=redis://redis.internal",
    }
    assert s.checks[1].expect_exit_code == 0 and s.checks[0].expect_substring == "PONG"
    assert s.signatures[0].meta.min_score == 0.5 and s.signatures[0].meta.model_extra == {"source": "ci"}
    assert (s.success_count, s.failure_count, s.success_rate) == (0, 0, 0.0)
    got = world.learning.get_solution("t", s.id).solution
    assert got.model_dump() == s.model_dump()


def test_solutions_are_tenant_scoped(world):
    s = world.learning.create_solution("t", fixpack()).solution
    with pytest.raises(NotFound):
        world.learning.get_solution("other", s.id)
    with pytest.raises(NotFound):
        world.learning.delete_solution("other", s.id)
    with pytest.raises(NotFound):
        world.learning.solution_apply("other", s.id, {"success": True})
    assert world.learning.solution_search("other", {"error": "connect ECONNREFUSED 1.2.3.4:6379"}).results == []


@pytest.mark.parametrize(
    "change, field",
    [
        ({"title": ""}, "title"),
        ({"signatures": []}, "signatures"),
        ({"signatures": [{"text": "x", "regexes": ["(a+)+$"]}]}, "signatures.0.regexes.0"),
        ({"signatures": [{"text": "x", "regexes": ["(unclosed"]}]}, "signatures.0.regexes.0"),
        ({"signatures": [{"text": "x", "meta": {"min_score": 2}}]}, "signatures.0.meta.min_score"),
        ({"signatures": [{"text": "x", "meta": {"$where": 1}}]}, "signatures.0.meta"),
        ({"steps": [{"step_order": 1, "kind": "shell", "payload": {"command": "x"}}]}, "steps.0.kind"),
        ({"steps": [{"step_order": 1, "kind": "patch", "payload": {"command": "x"}}]}, "steps.0"),
        ({"steps": [{"step_order": 1, "kind": "cmd", "payload": {"command": ""}}]}, "steps.0"),
        (
            {"steps": [{"step_order": 1, "kind": "cmd", "payload": {"command": "a"}, "timeout_ms": 0}]},
            "steps.0.timeout_ms",
        ),
        ({"checks": [{"check_order": 1, "cmd": "true"}]}, "checks.0"),
        ({"checks": [{"check_order": 1, "cmd": "true", "expect_exit_code": 256}]}, "checks.0.expect_exit_code"),
        ({"unknown": 1}, "unknown"),
        ({"success_count": -1}, "success_count"),
        ({"tags": ["x"] * 33}, "tags"),
    ],
)
def test_bad_fixpacks_are_refused_naming_the_field_and_change_nothing(world, change, field):
    body = fixpack(**change)
    with pytest.raises(InvalidInput) as caught:
        world.learning.create_solution("t", body)
    assert caught.value.field == field, caught.value.details
    assert _count(world) == 0


def test_oversized_fixpack_is_refused(world):
    huge = "x" * 60_000
    steps = [
        {"step_order": i, "kind": "cmd", "payload": {"command": huge[:8000]}, "description": huge[:8000]}
        for i in range(20)
    ]
    with pytest.raises(InvalidInput) as caught:
        world.learning.create_solution("t", fixpack(steps=steps))
    assert "limit" in caught.value.message
    assert _count(world) == 0
    assert not isinstance(caught.value, PayloadTooLarge) or caught.value.status == 413


def test_list_pages_with_a_cursor_and_filters_by_category(world):
    ids = []
    for i in range(5):
        world.clock.advance(seconds=1)
        ids.append(world.learning.create_solution("t", fixpack(f"fix {i}", category="a" if i < 3 else "b")).solution.id)
    page = world.learning.list_solutions("t", {"limit": 2})
    assert [s.id for s in page.solutions] == ids[:-3:-1] and page.next_cursor
    rest = world.learning.list_solutions("t", {"limit": 10, "cursor": page.next_cursor})
    assert [s.id for s in rest.solutions] == ids[2::-1] and rest.next_cursor is None
    assert [s.title for s in world.learning.list_solutions("t", {"category": "b"}).solutions] == ["fix 4", "fix 3"]
    with pytest.raises(InvalidInput):
        world.learning.list_solutions("t", {"cursor": "not-a-cursor"})
    with pytest.raises(InvalidInput):
        world.learning.list_solutions("t", {"limit": 0})


def test_update_replaces_content_but_keeps_counts(world):
    s = world.learning.create_solution("t", fixpack()).solution
    world.learning.solution_apply("t", s.id, {"success": True})
    world.clock.advance(hours=1)
    updated = world.learning.update_solution("t", s.id, fixpack("Renamed", success_count=50)).solution
    assert (updated.title, updated.success_count, updated.created_at) == ("Renamed", 1, s.created_at)
    assert updated.updated_at > s.updated_at
    assert world.learning.get_solution("t", s.id).solution.title == "Renamed"
    with pytest.raises(NotFound):
        world.learning.update_solution("t", "missing", fixpack())
    with pytest.raises(InvalidInput):
        world.learning.update_solution("t", s.id, fixpack(title=""))
    assert world.learning.get_solution("t", s.id).solution.title == "Renamed"


def test_delete(world):
    s = world.learning.create_solution("t", fixpack()).solution
    result = world.learning.delete_solution("t", s.id)
    assert result.deleted and "Deleted" in result.explanation
    with pytest.raises(NotFound):
        world.learning.get_solution("t", s.id)
    with pytest.raises(NotFound):
        world.learning.delete_solution("t", s.id)


def test_import_takes_original_files_as_they_are_and_is_idempotent(world):
    original = fixpack(success_count=7, failure_count=1)
    original["id"] = "fp-123"  # fields of the original format we do not keep
    original["schema_version"] = 2
    first = world.learning.import_solution("t", copy.deepcopy(original), source="redis.json")
    assert first.created and first.kept_fields == ["id", "schema_version"]
    assert first.solution.extra == {"id": "fp-123", "schema_version": 2}
    assert (first.solution.success_count, first.solution.failure_count) == (7, 1)
    assert "redis.json" in first.explanation and "schema_version" in first.explanation
    again = world.learning.import_solution("t", copy.deepcopy(original), source="redis.json")
    assert not again.created and again.solution.id == first.solution.id
    assert _count(world) == 1
    with pytest.raises(InvalidInput):
        world.learning.import_solution("t", ["not", "an", "object"])
    with pytest.raises(InvalidInput):
        world.learning.import_solution("t", {"title": "no signatures"})
    assert _count(world) == 1


def test_search_ranks_by_regex_then_meaning_and_says_why(world):
    redis = world.learning.create_solution("t", fixpack()).solution
    npm = world.learning.create_solution(
        "t",
        fixpack(
            "Clear the npm cache",
            category="build",
            signatures=[{"text": "npm ERR! code ERESOLVE unable to resolve dependency tree", "regexes": [r"ERESOLVE"]}],
        ),
    ).solution
    result = world.learning.solution_search("t", {"error": "Error: connect ECONNREFUSED 10.0.0.7:6379 at worker"})
    assert [m.solution.id for m in result.results] == [redis.id]
    top = result.results[0]
    assert top.components.regex == 1.0 and top.components.keyword > 0
    assert any("regex" in reason for reason in top.reasons)
    assert "Checked 2 solution(s); 1 matched" in result.explanation
    other = world.learning.solution_search("t", {"error": "npm ERR! ERESOLVE could not resolve"})
    assert other.results[0].solution.id == npm.id
    assert world.learning.solution_search("t", {"error": "disk quota exceeded"}).results == []


def test_success_rate_lifts_the_solution_that_works(world):
    sig = [{"text": "ModuleNotFoundError: No module named 'yaml'", "regexes": [r"No module named 'yaml'"]}]
    flaky = world.learning.create_solution("t", fixpack("pip install yaml", signatures=sig)).solution
    proven = world.learning.create_solution("t", fixpack("pip install pyyaml", signatures=sig)).solution
    for _ in range(8):
        world.learning.solution_apply("t", proven.id, {"success": True})
    world.learning.solution_apply("t", flaky.id, {"success": True})
    for _ in range(3):
        world.learning.solution_apply("t", flaky.id, {"success": False})
    result = world.learning.solution_search("t", {"error": "ModuleNotFoundError: No module named 'yaml'"})
    assert [m.solution.id for m in result.results] == [proven.id, flaky.id]
    assert result.results[0].components.success > result.results[1].components.success
    assert "worked 8 of 8 times" in result.results[0].explanation


def test_apply_records_outcomes(world):
    s = world.learning.create_solution("t", fixpack()).solution
    world.learning.solution_apply("t", s.id, {"success": True, "project": "p"})
    result = world.learning.solution_apply("t", s.id, {"success": False, "error": "still refused"})
    assert (result.solution.success_count, result.solution.failure_count) == (1, 1)
    assert "failure" in result.explanation and result.pattern is None
    with pytest.raises(NotFound):
        world.learning.solution_apply("t", "missing", {"success": True})
    with pytest.raises(InvalidInput):
        world.learning.solution_apply("t", s.id, {"success": "maybe"})
    with pytest.raises(InvalidInput):
        world.learning.solution_apply("t", s.id, {})
    assert world.learning.get_solution("t", s.id).solution.failure_count == 1


def test_search_input_is_bounded(world):
    with pytest.raises(InvalidInput):
        world.learning.solution_search("t", {"error": ""})
    with pytest.raises(InvalidInput):
        world.learning.solution_search("t", {"error": "x" * 9000})
    with pytest.raises(InvalidInput):
        world.learning.solution_search("t", {"error": "x", "k": 0})


def test_embedder_down_at_create_then_search_embeds_signatures(world):
    world.embedder.down = True
    s = world.learning.create_solution("t", fixpack(signatures=[{"text": "worker cannot reach redis on port 6379"}]))
    assert "unavailable" in s.explanation
    down = world.learning.solution_search("t", {"error": "the worker cannot reach redis, port 6379"})
    assert "embedder is unavailable" in down.explanation
    world.embedder.down = False
    up = world.learning.solution_search("t", {"error": "the worker cannot reach redis, port 6379"})
    assert up.results and up.results[0].components.vector > 0.5
    stored = world.learning.store.get_solution("t", s.solution.id)
    assert stored.embeddings is not None and stored.model == world.embedder.model_id
