"""The query cache: reused for five minutes, dropped by any write to the project, from any process."""

from __future__ import annotations

from datetime import UTC


def test_a_repeated_search_comes_from_the_cache(service):
    service.store_memory("t", {"project": "p", "content": "redis timeout on deploy"})
    first = service.search("t", {"project": "p", "query": "redis"})
    second = service.search("t", {"project": "p", "query": "redis"})
    assert first == second
    assert (service.query_cache.hits, service.query_cache.misses) == (1, 1)
    second.results.clear()  # a caller changing its copy changes nothing cached
    assert service.search("t", {"project": "p", "query": "redis"}) == first


def test_a_write_from_another_process_invalidates(make_service):
    reader, writer = make_service(), make_service()
    writer.store_memory("t", {"project": "p", "content": "redis timeout on deploy"})
    assert len(reader.search("t", {"project": "p", "query": "redis"}).results) == 1
    writer.store_memory("t", {"project": "p", "content": "redis timeout again"})
    assert len(reader.search("t", {"project": "p", "query": "redis"}).results) == 2
    assert reader.query_cache.hits == 0


def test_feedback_invalidates_and_other_projects_do_not(service):
    memory = service.store_memory("t", {"project": "p", "content": "redis timeout"}).memory.id
    service.search("t", {"project": "p", "query": "redis"})
    service.store_memory("t", {"project": "other", "content": "unrelated"})
    service.search("t", {"project": "p", "query": "redis"})
    assert service.query_cache.hits == 1
    service.feedback("t", memory, {"helpful": True})
    result = service.search("t", {"project": "p", "query": "redis"})
    assert result.results[0].components.feedback > 0 and service.query_cache.hits == 1


def test_entries_expire_after_five_minutes(service, clock):
    service.store_memory("t", {"project": "p", "content": "redis timeout"})
    service.search("t", {"project": "p", "query": "redis"})
    clock.advance(seconds=299)
    service.search("t", {"project": "p", "query": "redis"})
    clock.advance(seconds=1)
    service.search("t", {"project": "p", "query": "redis"})
    assert (service.query_cache.hits, service.query_cache.misses) == (1, 2)


def test_the_cache_can_be_turned_off(make_service):
    service = make_service(query_cache_entries=0)
    service.store_memory("t", {"project": "p", "content": "redis timeout"})
    service.search("t", {"project": "p", "query": "redis"})
    service.search("t", {"project": "p", "query": "redis"})
    assert service.query_cache.hits == 0


def test_neither_the_first_caller_nor_a_later_one_can_change_what_is_cached(service):
    service.store_memory("t", {"project": "p", "content": "redis timeout on deploy", "meta": {"k": [1]}})
    first = service.search("t", {"project": "p", "query": "redis"})
    expected = first.model_dump_json()
    first.results[0].meta["k"].append(2)  # the caller that filled the cache changes its result
    first.results[0].components.vector = -1.0
    second = service.search("t", {"project": "p", "query": "redis"})
    assert second.model_dump_json() == expected
    second.results[0].meta["k"].clear()
    second.results[0].meta["new"] = True
    assert service.search("t", {"project": "p", "query": "redis"}).model_dump_json() == expected
    assert service.query_cache.hits == 2


def test_a_fresh_copy_equals_a_deep_copy_and_shares_nothing_mutable():
    from datetime import datetime

    from capsule.core import models
    from capsule.search.querycache import fresh

    at = datetime(2026, 1, 2, tzinfo=UTC)
    hit = models.SearchHit(
        id="m",
        project="p",
        content="c",
        score=0.5,
        occurred_at=at,
        created_at=at,
        components=models.Components(vector=0.1, bm25=0.2, time=1.0, feedback=0.0, outcome=0.0, boost=0.0),
        meta={"tags": ["a"], "nested": {"x": [1, {"y": 2}]}},
    )
    result = models.SearchResult(results=[hit], explanation="e")
    copied = fresh(result)
    assert copied == result.model_copy(deep=True) == result
    assert copied.model_fields_set == result.model_fields_set
    assert copied.results[0].model_fields_set == hit.model_fields_set
    for original, clone in (
        (result, copied),
        (result.results, copied.results),
        (hit, copied.results[0]),
        (hit.components, copied.results[0].components),
        (hit.meta, copied.results[0].meta),
        (hit.meta["nested"]["x"], copied.results[0].meta["nested"]["x"]),
    ):
        assert original is not clone
