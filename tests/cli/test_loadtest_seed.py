"""``capsule loadtest`` seeds by the bulk path (issue 32): the memories a store would write,
embedded and searchable, in batches."""

from __future__ import annotations

import random

from capsule.config import Settings
from capsule.runtime.service import build_service
from capsule_cli.cli import LOCAL_TENANT
from capsule_cli.loadtest import PROJECT, seed


def test_the_seeded_memories_are_stored_embedded_and_found(tmp_path):
    settings = Settings(data_dir=tmp_path, embedder="hashing")
    seed(settings, 25, random.Random(7), batch=10)
    service = build_service(settings)
    try:
        [stats] = service.store.projects(LOCAL_TENANT)
        assert (stats.project, stats.memories) == (PROJECT, 25)
        page = service.list_memories(LOCAL_TENANT, {"project": PROJECT, "limit": 100})
        assert len({m.content for m in page.memories}) == 25
        assert all(m.status == "ready" for m in page.memories)
        hits = service.search(LOCAL_TENANT, {"project": PROJECT, "query": page.memories[0].content, "k": 3})
        assert hits.results[0].id == page.memories[0].id
        assert service.retention_limit(LOCAL_TENANT, PROJECT) is None  # no rolling limit: nothing evicted
    finally:
        service.store.close()
