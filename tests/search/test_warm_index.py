"""The warm index gives exactly what a cold search gives, also while others write."""

from __future__ import annotations

import random
import threading
from datetime import UTC

import numpy as np
import pytest

from capsule.core.records import ChangeSet
from capsule.search.hybrid import SearchOptions
from capsule.search.index import IndexCache, ProjectIndex, sign_codes

WORDS = (
    "deploy redis worker timeout mongo index gateway cache token retry queue schema "
    "migration lambda container build test flaky network ENOTFOUND E11000 getUserById"
).split()
QUERIES = [
    "redis timeout",
    "ENOTFOUND worker",
    "flaky test retry",
    "getUserById schema migration",
    "gateway cache token",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + f" #{rng.random():.6f}"


def results(service, query, **extra):
    request = {"project": "p", "query": query, "k": 10, **extra}
    return [(h.id, h.score, h.components.model_dump()) for h in service.search("t", request).results]


def assert_same_as_cold(warm, make_service, **extra):
    cold = make_service()
    for query in QUERIES:
        assert results(warm, query, **extra) == results(cold, query, **extra), query


def test_warm_equals_cold_after_every_kind_of_change(make_service, clock):
    warm = make_service()
    writer = make_service()
    rng = random.Random(1)
    ids = [writer.store_memory("t", {"project": "p", "content": sentence(rng)}).memory.id for _ in range(60)]
    assert_same_as_cold(warm, make_service)
    writer.forget("t", ids[0])
    writer.feedback("t", ids[1], {"helpful": True})
    writer.pin("t", ids[2])
    writer.store_memory(
        "t", {"project": "p", "content": "redis timeout on the worker", "meta": {"outcome_status": "failure"}}
    )
    assert_same_as_cold(warm, make_service)
    writer.restore("t", ids[0])
    assert_same_as_cold(warm, make_service, filters={"tags": []})
    assert warm.indexes.get("t", "p", warm.embedder.model_id).active == 61


def test_warm_equals_cold_under_concurrent_writes(make_service):
    warm = make_service()
    rng = random.Random(7)
    seed = make_service()
    for _ in range(40):
        seed.store_memory("t", {"project": "p", "content": sentence(rng)})
    stop = threading.Event()
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        service = make_service()
        local = random.Random(worker)
        mine: list[str] = []
        try:
            for step in range(40):
                mine.append(service.store_memory("t", {"project": "p", "content": sentence(local)}).memory.id)
                if step % 5 == 4:
                    service.forget("t", mine.pop(0))
                if step % 7 == 6:
                    service.feedback("t", mine[-1], {"helpful": step % 2 == 0})
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def search() -> None:
        try:
            while not stop.is_set():
                for query in QUERIES:
                    warm.search("t", {"project": "p", "query": query, "k": 10})
        except BaseException as exc:
            errors.append(exc)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    reader = threading.Thread(target=search)
    reader.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    reader.join()
    assert not errors, errors
    assert_same_as_cold(warm, make_service)
    index = warm.indexes.get("t", "p", warm.embedder.model_id)
    assert index.active == 40 + 3 * (40 - 8)


def test_warm_equals_cold_with_filters_and_across_projects(make_service):
    writer = make_service()
    warm = make_service()
    rng = random.Random(3)
    for i in range(50):
        writer.store_memory(
            "t",
            {
                "project": f"p{i % 3}",
                "content": sentence(rng),
                "path": f"src/{i % 4}.py",
                "meta": {"component": f"c{i % 2}", "tags": [f"t{i % 5}"]},
            },
        )
    warm.search("t", {"global": True, "query": "warm up"})
    writer.store_memory("t", {"project": "p1", "content": "redis timeout in src", "path": "src/0.py"})
    cold = make_service()
    for extra in (
        {"filters": {"component": "c1"}},
        {"filters": {"tags": ["t2"]}},
        {"filters": {"path_prefix": "src/0"}},
        {},
    ):
        for query in QUERIES:
            request = {"global": True, "query": query, "k": 10, **extra}
            assert warm.search("t", request) == cold.search("t", request)


def test_binary_first_stage_agrees_with_exact(make_service):
    writer = make_service()
    rng = random.Random(5)
    for _ in range(80):
        writer.store_memory("t", {"project": "p", "content": sentence(rng)})
    exact = make_service(search_exact=True)
    binary = make_service(search_candidates=100)
    for query in QUERIES:
        assert results(exact, query, mode="vector") == results(binary, query, mode="vector")


def test_sign_codes_and_hamming():
    vectors = np.array([[0.5, -0.1, 0.2] + [0.0] * 61 + [1.0], [-1.0] * 65], dtype=np.float32)
    codes = sign_codes(vectors, 2)
    assert codes.shape == (2, 2) and codes.dtype == np.uint64
    assert int(np.bitwise_count(codes[0] ^ codes[1]).sum()) == 3


def test_the_cache_drops_least_recently_used_projects():
    cache = IndexCache(max_bytes=1)
    rng = np.random.default_rng(0)
    from datetime import datetime

    from capsule.core.records import MemoryRecord

    def fill(index: ProjectIndex) -> None:
        now = datetime(2026, 1, 1, tzinfo=UTC)
        vec = rng.standard_normal(8).astype(np.float32)
        index.apply(
            ChangeSet(
                version=1,
                reset=True,
                changed=[
                    MemoryRecord(
                        id=index.project,
                        tenant="t",
                        project=index.project,
                        content="x",
                        sha256="s",
                        occurred_at=now,
                        created_at=now,
                        updated_at=now,
                        embedding=vec / np.linalg.norm(vec),
                        model="m",
                    )
                ],
            )
        )

    for name in ("a", "b", "c"):
        fill(cache.get("t", name, "m"))
    cache.get("t", "a", "m")  # used last
    searched = {id(cache.get("t", name, "m")) for name in ("a", "b", "c")}
    assert cache.trim(keep=lambda i: id(i) in searched) == [] and len(cache) == 3  # each one kept
    searched.discard(id(cache.get("t", "b", "m")))
    assert cache.trim(keep=lambda i: id(i) in searched) == [("t", "b")]
    assert cache.trim() == [("t", "a")]  # least recently used: b and c were looked up after it
    assert len(cache) == 1


def test_options_are_settings(make_service):
    service = make_service(search_exact=True, search_candidates=50)
    assert service._options == SearchOptions(candidates=50, exact=True)


@pytest.mark.parametrize("exact", [False, True])
def test_a_memory_without_embedding_is_found_by_keyword(make_service, exact):
    service = make_service(search_exact=exact)
    memory = service.store_memory("t", {"project": "p", "content": "redis timeout"}).memory.id
    service.store.set_embedding("t", memory, np.ones(16, dtype=np.float32) / 4, "another-model")
    hits = service.search("t", {"project": "p", "query": "redis timeout"}).results
    assert [h.id for h in hits] == [memory] and hits[0].components.vector == 0.0


def test_the_two_pass_binary_stage_on_a_large_index():
    """Large enough for the 256-bit first pass: the nearest rows survive both passes."""
    from datetime import datetime

    from capsule.core.records import Filters, MemoryRecord
    from capsule.search.hybrid import search_indexes
    from capsule.search.index import ProjectIndex
    from capsule_cli.bench_data import exact_top, make_dataset, recall

    data = make_dataset(3000, 512, 20, seed=11)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    index = ProjectIndex("t", "p", "m")
    index.apply(
        ChangeSet(
            version=1,
            reset=True,
            changed=[
                MemoryRecord(
                    id=f"m{i:05d}",
                    tenant="t",
                    project="p",
                    content=data.texts[i],
                    sha256=str(i),
                    occurred_at=now,
                    created_at=now,
                    updated_at=now,
                    embedding=data.vectors[i],
                    model="m",
                )
                for i in range(len(data.texts))
            ],
        )
    )
    options = SearchOptions(candidates=200, prefilter=4)  # 800 of 3,000 survive the first pass
    from capsule.search.ranking import Weights

    found = []
    for q in data.queries:
        hits, _ = search_indexes(
            [index],
            filters=Filters(),
            query="",
            query_vector=q,
            model_id="m",
            now=now,
            weights=Weights(bm25=0.0, time=0.0, feedback=0.0),
            k=10,
            options=options,
        )
        found.append([int(h.record.id[1:]) for h in hits])
    assert recall(found, exact_top(data.vectors, data.queries)) >= 0.95
