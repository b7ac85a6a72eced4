"""Nothing is evicted that no answer announced (issue 29, COMPAT.md §4.5 and §6): a write never
leaves a project over its limit, an ingest beyond the limit is refused before it writes, a lowered
limit evicts in its own answer, the retention job evicts nothing by the limit, and a project
written through the Vector Bridge's contract (or imported) has no rolling limit unless one is set."""

from __future__ import annotations

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.core.errors import Conflict
from capsule.embedders import HashingEmbedder
from capsule.jobs.scheduled import Jobs
from capsule.learning.service import LearningService
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_learning import SQLiteLearningStore

LONG = "\n\n".join(f"Paragraph {i} about the parser. " + "word " * 300 for i in range(12))  # 6+ chunks


@pytest.fixture
def world(tmp_path):
    store = SQLiteStore(tmp_path / "capsule.db")
    store.migrate()
    settings = Settings(data_dir=tmp_path, embedder="hashing", retention_limit=3)
    svc = MemoryService(store, HashingEmbedder(), clock=FrozenClock(), settings=settings)
    learning = LearningService(SQLiteLearningStore(store), store, HashingEmbedder(), clock=svc.clock)
    return svc, Jobs(store, learning, HashingEmbedder(), clock=svc.clock, settings=settings)


def test_a_project_with_a_limit_evicts_one_oldest_unpinned_per_store_and_names_it(world):
    svc, _ = world
    ids = [svc.store_memory("t", {"project": "p", "content": f"note {i}"}).memory.id for i in range(3)]
    svc.pin("t", ids[0])
    result = svc.store_memory("t", {"project": "p", "content": "note 3"})
    assert [e.id for e in result.evicted] == [ids[1]] and ids[1] in result.explanation
    assert svc.projects("t").projects[0].memories == 3


def test_an_ingest_beyond_the_limit_is_refused_before_it_writes(world):
    svc, _ = world
    svc.store_memory("t", {"project": "p", "content": "kept"})
    with pytest.raises(Conflict) as refused:
        svc.ingest("t", {"project": "p", "text": LONG})
    assert refused.value.status == 409 and "rolling limit is 3" in refused.value.message
    assert svc.projects("t").projects[0].memories == 1  # nothing stored, nothing evicted
    svc.set_project_settings("t", "p", {"retention_limit": "unlimited"})
    result = svc.ingest("t", {"project": "p", "text": LONG})
    assert result.chunks > 3 and not result.evicted
    assert svc.projects("t").projects[0].retention_limit is None


def test_a_vector_bridge_project_has_no_rolling_limit_unless_one_is_set(world):
    svc, _ = world
    assert svc.ensure_project("t", "/Users/me/app/", unlimited=True) == "/Users/me/app"
    for i in range(6):
        assert not svc.store_memory("t", {"project": "/Users/me/app", "content": f"digest {i}"}).evicted
    info = svc.projects("t").projects[0]
    assert (info.memories, info.retention_limit) == (6, None)
    svc.set_project_settings("t", "/Users/me/other", {"retention_limit": 10})
    svc.ensure_project("t", "/Users/me/other", unlimited=True)  # the user's own limit is kept
    assert svc.retention_limit("t", "/Users/me/other") == 10


def test_a_lowered_limit_evicts_in_its_own_answer_and_the_job_evicts_nothing(world):
    svc, jobs = world
    svc.set_project_settings("t", "p", {"retention_limit": 10})
    ids = [svc.store_memory("t", {"project": "p", "content": f"note {i}"}).memory.id for i in range(6)]
    lowered = svc.set_project_settings("t", "p", {"retention_limit": 4})
    assert [e.id for e in lowered.evicted] == ids[:2] and all(i in lowered.explanation for i in ids[:2])
    # A restore may leave the project over its limit: the job names no one, so it evicts no one.
    svc.restore("t", ids[0])
    report = jobs.run("retention")
    assert report.counts["evicted"] == 0 and report.counts["projects_over_limit"] == 1
    assert svc.projects("t").projects[0].memories == 5
    # The next write evicts beyond the limit, naming each one in its answer.
    result = svc.store_memory("t", {"project": "p", "content": "note 6"})
    assert [e.id for e in result.evicted] == [ids[0], ids[2]]
    assert svc.projects("t").projects[0].memories == 4
