"""The query cache: reused for five minutes, dropped by any write to the project, from any process."""

from __future__ import annotations


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
