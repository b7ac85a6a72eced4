"""``capsule import capsule-mongo``: the first Capsule's ``memories`` collection (on mongomock)
into a project of a SQLite or MongoDB (mongomock) deployment."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from capsule.core.errors import InvalidInput
from capsule.core.records import Filters
from capsule.embedders.hashing import HashingEmbedder
from capsule.jobs.scheduled import Jobs
from capsule.transfer.capsule_mongo import import_capsule_mongo

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
URI = "mongodb://localhost:27017/modelence"


def unit(seed: int, dims: int = 1024) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(dims)
    return list(v / np.linalg.norm(v))


@pytest.fixture
def first_capsule():
    """The first Capsule's collection as its db.ts writes it (naive UTC dates, as pymongo reads them)."""
    client = mongomock.MongoClient()
    at = datetime(2025, 3, 1, 12, 0)
    client["modelence"]["memories"].insert_many(
        [
            {
                "content": "Deploys go through the staging branch first",
                "embedding": unit(1),
                "embeddingNorm": 13.2,
                "createdAt": at,
                "pinned": True,
                "explanation": "team rule",
            },
            {
                "content": "Use pnpm, not npm, in this repo",
                "embedding": unit(2),
                "embeddingNorm": 9.1,
                "createdAt": at + timedelta(hours=1),
                "pinned": False,
                "__v": 0,
            },
            {"content": "", "embedding": unit(3), "createdAt": at, "pinned": False},
            {"content": "a memory with a damaged vector", "embedding": [0.1, "x"], "createdAt": at, "pinned": False},
            {"content": "no date", "embedding": unit(4), "pinned": False},
            {"content": "stored before embeddings worked", "createdAt": at, "pinned": False},
        ]
    )
    yield client
    client.close()


def _run(d, client, embedder=None, project="web"):
    return import_capsule_mongo(d.sources, "t", URI, project=project, embedder=embedder or d.embedder, client=client)


def _memories(d, project="web"):
    return {r.content: r for r in d.store.candidates("t", [project], Filters())}


def test_memories_come_along_with_their_times_pins_and_explanations(make, first_capsule):
    d = make()
    result = _run(d, first_capsule)
    assert result.imported == {"memory": 3}, result.explanation
    assert [(r.line, r.field) for r in result.refused] == [(3, "content"), (4, "embedding"), (5, "createdAt")]
    assert "__v (1)" in result.explanation
    found = _memories(d)
    rule = found["Deploys go through the staging branch first"]
    assert rule.pinned and rule.explanation == "team rule"
    assert rule.created_at.isoformat() == "2025-03-01T12:00:00+00:00"
    assert found["Use pnpm, not npm, in this repo"].occurred_at.hour == 13


def test_a_second_run_imports_nothing_twice(make, first_capsule):
    d = make()
    _run(d, first_capsule)
    again = _run(d, first_capsule)
    assert again.imported == {} and again.skipped == {"memory": 3}, again.explanation
    assert d.store.projects("t")[0].memories == 3


def test_voyage_vectors_are_kept_for_a_voyage_deployment_else_the_backfill_embeds(make, first_capsule):
    voyage = HashingEmbedder(dim=1024)
    voyage.model_id = "voyage-3.5"  # as a deployment with VOYAGE_API_KEY embeds
    d = make()
    _run(d, first_capsule, embedder=voyage)
    found = _memories(d)
    kept = found["Use pnpm, not npm, in this repo"]
    assert kept.status == "ready" and kept.model == "voyage-3.5"
    assert np.allclose(kept.embedding, unit(2), atol=1e-6)
    assert found["stored before embeddings worked"].status == "pending_embedding"

    other = make()
    _run(other, first_capsule)
    assert len(other.store.pending_embeddings(limit=10, model=other.embedder.model_id)) == 3
    jobs = Jobs(other.store, other.learning, other.embedder, clock=other.clock, settings=other.memories.settings)
    jobs.run("backfill")
    assert other.store.pending_embeddings(limit=10, model=other.embedder.model_id) == []
    hits = other.memories.search("t", {"project": "web", "query": "pnpm npm repo"}).results
    assert hits[0].content == "Use pnpm, not npm, in this repo"


def test_bad_arguments_are_refused(make, first_capsule):
    d = make()
    with pytest.raises(InvalidInput, match="mongodb://"):
        import_capsule_mongo(d.sources, "t", "postgresql://x", project="p", embedder=d.embedder, client=first_capsule)
    with pytest.raises(InvalidInput, match="project"):
        _run(d, first_capsule, project=" ")
    empty = _run(d, mongomock.MongoClient())
    assert empty.imported == {} and empty.lines == 0
