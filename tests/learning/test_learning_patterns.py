import pytest
from learning_helpers import fixpack

from capsule.core.errors import InvalidInput, NotFound

FAIL = {"type": "error", "outcome_status": "failure"}
REDIS_FAILURES = [
    ("api", "Error: connect ECONNREFUSED 127.0.0.1:6379 while starting the worker (redis)"),
    ("shop", "redis client failed: ECONNREFUSED connecting to redis.railway.internal:6379"),
    ("etl", "ECONNREFUSED 10.0.0.5:6379 - queue worker cannot reach Redis"),
]
DISTRACTORS = [
    ("api", "TypeError: Cannot read properties of undefined (reading 'map') in UserList.render"),
    ("shop", "TypeError: Cannot read properties of undefined (reading 'map') at OrderTable"),
    ("etl", "npm ERR! code ERESOLVE unable to resolve dependency tree"),
]


def _seed(world):
    for project, text in REDIS_FAILURES + DISTRACTORS:
        world.remember(project, text, **FAIL)
    redis_fix = world.learning.create_solution("t", fixpack()).solution
    fix_memory = world.remember(
        "etl",
        "Fixed the ECONNREFUSED from Redis: REDIS_URL now points at the private host",
        type="fix",
        outcome_status="success",
        solution_id=redis_fix.id,
    )
    return redis_fix, fix_memory


def test_end_to_end_failures_in_three_projects_become_a_golden_path(world):
    redis_fix, fix_memory = _seed(world)

    mined = world.learning.detect_patterns("t", {"min_occurrences": 2})
    assert mined.scanned == 6 and mined.clusters == 2
    redis = [p for p in mined.patterns if "econnrefused" in p.terms]
    assert len(redis) == 1, mined.patterns
    pattern = redis[0]
    assert pattern.occurrences == 3 and pattern.projects == ["api", "etl", "shop"]
    assert set(pattern.terms) == {"econnrefused", "6379"}
    assert "recurring cluster" in mined.explanation

    linked = world.learning.pattern_solutions("t", {"tag": pattern.tag, "category": pattern.category})
    assert [s.id for s in linked.solutions] == [redis_fix.id]
    assert [f.memory_id for f in linked.fixes] == [fix_memory]

    golden = world.learning.golden_paths("t", {"min_applications": 1})
    assert golden.paths[0].pattern.tag == pattern.tag
    assert {(p.solution.id if p.solution else p.fix.memory_id) for p in golden.paths} == {redis_fix.id, fix_memory}

    detected = world.learning.pattern_detect(
        "t", {"error": "The job crashed because the Redis connection was refused (ECONNREFUSED on port 6379)"}
    )
    top = detected.results[0]
    assert top.pattern.tag == pattern.tag
    assert top.matched_terms == ["6379", "econnrefused"] and top.components.terms == 1.0
    assert top.solutions[0].id == redis_fix.id
    assert all(r.score < top.score for r in detected.results[1:])
    assert "shares the terms" in top.explanation


def test_mining_is_idempotent_and_names_patterns_stably(world):
    _seed(world)
    first = world.learning.detect_patterns("t", {})
    links_before = [(link.tag, link.kind, link.target_id, link.success) for link in world.learning.store.links("t")]
    second = world.learning.detect_patterns("t", {})
    assert second.linked == 0 and first.linked > 0
    assert [p.tag for p in second.patterns] == [p.tag for p in first.patterns]
    assert [
        (link.tag, link.kind, link.target_id, link.success) for link in world.learning.store.links("t")
    ] == links_before


def test_a_new_occurrence_keeps_the_pattern_tag(world):
    _seed(world)
    tag = next(p.tag for p in world.learning.detect_patterns("t", {}).patterns if "econnrefused" in p.terms)
    world.remember("billing", "Redis ECONNREFUSED on :6379 again, ERR_SOCKET_CLOSED", **FAIL)
    again = world.learning.detect_patterns("t", {})
    grown = next(p for p in again.patterns if "econnrefused" in p.terms)
    assert grown.tag == tag and grown.occurrences == 4 and "billing" in grown.projects


def test_detect_patterns_filters_and_bounds(world):
    for project in ("a", "b", "c"):
        world.remember(
            project, "E11000 duplicate key error collection: app.users index: email_1", category="db", **FAIL
        )
    for project in ("a", "b"):
        world.remember(project, "ENOSPC: no space left on device, write", category="disk", **FAIL)
    result = world.learning.detect_patterns("t", {"min_occurrences": 3})
    assert [p.category for p in result.patterns] == ["db"]
    assert [p.category for p in world.learning.detect_patterns("t", {"category": "disk"}).patterns] == ["disk"]
    assert world.learning.detect_patterns("other", {}).patterns == []  # another tenant sees nothing
    for bad in ({"min_occurrences": 1}, {"k": 0}, {"category": ""}, {"extra": True}):
        with pytest.raises(InvalidInput):
            world.learning.detect_patterns("t", bad)


def test_failures_only_in_another_tenant_are_not_mixed_in(world):
    for project, text in REDIS_FAILURES[:2]:
        world.remember(project, text, **FAIL)
    world.remember("x", REDIS_FAILURES[2][1], tenant="other", **FAIL)
    result = world.learning.detect_patterns("t", {})
    assert result.patterns[0].occurrences == 2
    assert world.learning.detect_patterns("other", {}).patterns == []


def test_pattern_solutions_rank_by_the_patterns_own_wilson_bound(world):
    lucky = world.learning.create_solution("t", fixpack("restart redis")).solution
    proven = world.learning.create_solution("t", fixpack("fix REDIS_URL")).solution
    world.learning.pattern_link(
        "t", {"tag": "redis-down", "category": "network", "solution_id": lucky.id, "success": True}
    )
    for i in range(22):
        world.learning.pattern_link(
            "t", {"tag": "redis-down", "category": "network", "solution_id": proven.id, "success": i < 20}
        )
    # Globally the lucky one looks perfect: only this pattern's record says otherwise.
    result = world.learning.pattern_solutions("t", {"tag": "redis-down", "category": "network"})
    assert [s.id for s in result.solutions] == [proven.id, lucky.id]
    assert (result.solutions[0].success, result.solutions[0].failure) == (20, 2)
    assert result.solutions[0].success_rate > result.solutions[1].success_rate
    assert "Wilson" in result.explanation


def test_pattern_link_creates_the_pattern_and_refuses_unknown_solutions(world):
    s = world.learning.create_solution("t", fixpack()).solution
    first = world.learning.pattern_link(
        "t", {"tag": "redis-down", "solution_id": s.id, "success": False, "context": "restarted, still refused"}
    )
    assert first.pattern_created and first.pattern.category == "general" and first.link.failure == 1
    second = world.learning.pattern_link("t", {"tag": "redis-down", "solution_id": s.id, "success": True})
    assert not second.pattern_created and (second.link.success, second.link.failure) == (1, 1)
    with pytest.raises(NotFound):
        world.learning.pattern_link("t", {"tag": "redis-down", "solution_id": "missing", "success": True})
    with pytest.raises(NotFound):
        world.learning.pattern_link("other", {"tag": "redis-down", "solution_id": s.id, "success": True})
    with pytest.raises(InvalidInput):
        world.learning.pattern_link("t", {"tag": "", "solution_id": s.id, "success": True})
    with pytest.raises(NotFound):
        world.learning.pattern_solutions("t", {"tag": "never-seen"})


def test_apply_with_a_pattern_counts_for_that_pattern(world):
    s = world.learning.create_solution("t", fixpack()).solution
    result = world.learning.solution_apply("t", s.id, {"success": True, "pattern": {"tag": "redis-down"}})
    assert result.pattern.tag == "redis-down"
    linked = world.learning.pattern_solutions("t", {"tag": "redis-down"})
    assert (linked.solutions[0].id, linked.solutions[0].success) == (s.id, 1)


def test_applications_after_failures_are_mined_as_evidence(world):
    s = world.learning.create_solution("t", fixpack()).solution
    for project, text in REDIS_FAILURES:
        world.remember(project, text, **FAIL)
        world.clock.advance(minutes=1)
        world.learning.solution_apply("t", s.id, {"success": True, "project": project, "error": "ECONNREFUSED on 6379"})
    world.learning.solution_apply("t", s.id, {"success": False, "project": "elsewhere"})  # not after a failure there
    world.learning.detect_patterns("t", {})
    paths = world.learning.golden_paths("t", {"min_applications": 3}).paths
    assert [(p.solution.id, p.success, p.failure) for p in paths] == [(s.id, 3, 0)]


def test_golden_paths_need_min_applications_and_rank_by_wilson(world):
    a = world.learning.create_solution("t", fixpack("a")).solution
    b = world.learning.create_solution("t", fixpack("b")).solution
    for i in range(10):
        world.learning.pattern_link("t", {"tag": "p", "solution_id": a.id, "success": i < 6})
    for _ in range(4):
        world.learning.pattern_link("t", {"tag": "p", "solution_id": b.id, "success": True})
    paths = world.learning.golden_paths("t", {"min_applications": 4}).paths
    assert [p.solution.id for p in paths] == [b.id, a.id]
    assert [p.solution.id for p in world.learning.golden_paths("t", {"min_applications": 5}).paths] == [a.id]
    assert world.learning.golden_paths("t", {"min_applications": 7}).paths == []
    assert world.learning.golden_paths("t").paths == [p for p in paths if p.success >= 3]
    world.learning.delete_solution("t", b.id)
    assert [p.solution.id for p in world.learning.golden_paths("t", {"min_applications": 4}).paths] == [a.id]
    with pytest.raises(InvalidInput):
        world.learning.golden_paths("t", {"min_applications": 0})


def test_pattern_detect_without_patterns_and_with_bad_input(world):
    empty = world.learning.pattern_detect("t", {"error": "ECONNREFUSED"})
    assert empty.results == [] and "0 known pattern" in empty.explanation
    for bad in ({"error": ""}, {}, {"error": "x", "min_score": 2}, {"error": "x", "k": 21}):
        with pytest.raises(InvalidInput):
            world.learning.pattern_detect("t", bad)


def test_pattern_detect_by_terms_when_the_embedder_is_down(world):
    _seed(world)
    world.learning.detect_patterns("t", {})
    world.embedder.down = True
    result = world.learning.pattern_detect("t", {"error": "ECONNREFUSED 6379 again"})
    assert "econnrefused" in result.results[0].pattern.terms
    assert result.results[0].components.vector == 0.0
    assert "embedder is unavailable" in result.explanation
