"""A search reads the store and writes nothing to it: no transaction, no change marker moved,
so it never waits on a writer, never fails on a full disk, and no other process sees a change."""

from __future__ import annotations

import sqlite3

from capsule.config import Settings
from capsule.runtime.service import build_service


def test_a_search_commits_nothing(tmp_path):
    service = build_service(Settings(data_dir=tmp_path, embedder="hashing"))  # as serve and Lambda build it
    try:
        service.store_memory("t", {"project": "p", "content": "redis timeout on deploy"})
        service.store_memory("t", {"project": "p", "content": "sqlite lock retry"})
        writes, markers = service.store._conn().total_changes, service.store.change_markers("t", None)
        other = sqlite3.connect(tmp_path / "capsule.db")  # another process: sees any commit in data_version
        seen = other.execute("PRAGMA data_version").fetchone()[0]
        for query in ("redis", "deploy timeout", "words never searched before", "redis"):
            assert service.search("t", {"project": "p", "query": query}).explanation
        assert service.search("t", {"global": True, "query": "lock"}).results
        assert service.store._conn().total_changes == writes
        assert other.execute("PRAGMA data_version").fetchone()[0] == seen
        assert service.store.change_markers("t", None) == markers
        other.close()
    finally:
        service.store.close()
