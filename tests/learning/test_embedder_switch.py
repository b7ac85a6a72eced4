"""Switching a data folder's embedder (MiniLM to mpnet, issue 38): the backfill re-embeds every
memory under the new model with its progress in each report, and searches answer throughout.

The hashing embedder at two sizes stands in for the two models: a new model id and another
dimension, as 384-d MiniLM and 768-d mpnet are."""

from __future__ import annotations

from learning_helpers import make_world

from capsule.embedders.hashing import HashingEmbedder
from capsule.jobs.scheduled import Jobs
from capsule.service.memory_service import MemoryService

NOTES = [
    "the deploy failed because the redis password rotated",
    "we chose postgres over mongodb for the billing ledger",
    "caroline adopted two cats named oliver and luna",
    "the nightly export times out past ten thousand rows",
    "use the private host for redis inside the vpc",
]


def _ids(answer) -> list[str]:
    return [hit.id for hit in answer.results]


def test_the_backfill_moves_every_memory_to_the_new_model_while_searches_answer(tmp_path):
    world = make_world(tmp_path / "capsule.db")
    try:
        ids = [world.remember("p", note) for note in NOTES]
        old_model = world.embedder.model_id
        new = HashingEmbedder(dim=768)
        assert new.model_id != old_model and new.dim != world.embedder.dim
        memories = MemoryService(world.store, new, clock=world.clock)
        jobs = Jobs(world.store, world.learning, new, clock=world.clock, settings=memories.settings)
        query = {"project": "p", "query": "redis password", "k": 3}

        # Before any memory is re-embedded: found by keyword, the old vectors never compared with
        # the new model's query.
        before = memories.search("t", query)
        assert set(_ids(before)[:2]) == {ids[0], ids[4]}
        assert all(hit.components.vector == 0 for hit in before.results)
        assert "5 memories in project 'p' have no vector of hashing-v1-768 yet" in before.explanation
        everywhere = memories.search("t", {"global": True, "query": "redis password", "k": 3})
        assert "5 memories in the projects searched have no vector" in everywhere.explanation
        assert "no vector" not in memories.search("t", {**query, "mode": "bm25"}).explanation

        # One batch: the report says how many moved and how many remain, searches still answer.
        partial = jobs.run("backfill", batch=2, max_batches=1)
        assert not partial.complete and partial.counts == {"embedded": 2, "pending": 3, "solutions": 0}
        assert "3 remain" in partial.explanation
        during = memories.search("t", query)
        assert set(_ids(during)[:2]) == {ids[0], ids[4]}
        assert "3 memories in project 'p' have no vector" in during.explanation

        done = jobs.run("backfill")
        assert done.complete and done.counts == {"embedded": 3, "pending": 0, "solutions": 0}
        for memory_id in ids:
            memory = memories.get("t", memory_id).memory
            assert memory.status == "ready" and memory.model == new.model_id
        by_meaning = memories.search("t", {**query, "mode": "vector"})
        assert set(_ids(by_meaning)[:2]) == {ids[0], ids[4]}
        assert all(hit.components.vector > 0 for hit in by_meaning.results)
        assert "no vector" not in by_meaning.explanation
        assert jobs.run("backfill").counts == {"embedded": 0, "pending": 0, "solutions": 0}
    finally:
        world.store.close()
