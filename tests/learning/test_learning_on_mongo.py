"""The hosted wiring: the learning store beside the MongoDB memory store (mongomock here),
through the same runtime function the Lambda handlers use."""

import pytest
from learning_helpers import FlakyEmbedder, fixpack

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.jobs.scheduled import Jobs
from capsule.learning import LearningService
from capsule.service.memory_service import MemoryService
from capsule.store.mongo_learning import MongoLearningStore
from capsule.store.sides import open_learning_store

mongomock = pytest.importorskip("mongomock")
FAIL = {"type": "error", "outcome_status": "failure"}


@pytest.fixture
def hosted():
    from capsule.store.mongo import MongoStore

    client = mongomock.MongoClient()
    store = MongoStore(client.get_database("capsule"), transactions=False)
    store.migrate()
    clock, embedder = FrozenClock(), FlakyEmbedder()
    settings = Settings(store="mongo", embedder="hashing")
    memories = MemoryService(store, embedder, clock=clock, settings=settings)
    learning_store = open_learning_store(store, settings)
    learning = LearningService(learning_store, store, embedder, clock=clock)
    yield memories, learning, Jobs(store, learning, embedder, clock=clock, settings=settings), clock, embedder
    client.close()


def test_runtime_puts_the_learning_store_in_the_memory_database(hosted):
    memories, learning, *_ = hosted
    assert isinstance(learning.store, MongoLearningStore)
    learning.create_solution("t", fixpack())
    assert "solutions" in memories.store.db.list_collection_names()


def test_mining_golden_paths_and_jobs_on_mongodb(hosted):
    memories, learning, jobs, clock, embedder = hosted
    fix = learning.create_solution("t", fixpack()).solution
    for project in ("api", "shop", "etl"):
        clock.advance(minutes=5)
        memories.store_memory(
            "t", {"project": project, "content": f"connect ECONNREFUSED 10.0.0.2:6379 ({project})", "meta": FAIL}
        )
    clock.advance(minutes=5)
    memories.store_memory(
        "t",
        {
            "project": "etl",
            "content": "Fixed ECONNREFUSED 6379: REDIS_URL uses the private host",
            "meta": {"outcome_status": "success", "solution_id": fix.id},
        },
    )
    report = jobs.run("mining")
    assert report.ran and report.counts["clusters"] == 1 and report.counts["linked"] == 2
    assert jobs.run("mining").counts["linked"] == 0
    golden = learning.golden_paths("t", {"min_applications": 1}).paths
    assert {p.solution.id for p in golden if p.solution} == {fix.id}
    top = learning.pattern_detect("t", {"error": "worker died: ECONNREFUSED talking to redis on 6379"}).results[0]
    assert top.solutions[0].id == fix.id
    embedder.down = True
    memories.store_memory("t", {"project": "api", "content": "stored while the embedder was down"})
    embedder.down = False
    assert jobs.run("backfill").counts == {"embedded": 1, "pending": 0, "solutions": 0}
    assert jobs.run("retention").ran


def test_imported_vector_bridge_files_keep_their_unknown_keys_on_mongodb(hosted):
    from fixpack_files import FILES, KEPT, in_file, kept_in, load

    _, learning, *_ = hosted
    for path in FILES:
        imported = learning.import_solution("t", load(path))
        shown = learning.get_solution("t", imported.solution.id).solution.model_dump(mode="json")
        assert imported.kept_fields == KEPT[path.name]
        assert all(kept_in(shown, k) == in_file(load(path), k) for k in KEPT[path.name]), path.name
        applied = learning.solution_apply("t", imported.solution.id, {"success": True})
        assert applied.solution.success_count == 1
