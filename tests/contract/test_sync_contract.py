"""The sync store contract (capsule.store.sync) on SQLite and MongoDB (mongomock)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.records import MemoryRecord
from capsule.store.sides import sync_store, transfer_store

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "mongomock"])
def store(request, tmp_path, backends):
    yield from backends[request.param](tmp_path)


def rec(n: int, **changes) -> MemoryRecord:
    base = MemoryRecord(
        id=f"m{n:03d}",
        tenant="t",
        project="p",
        content=f"memory {n}",
        sha256=f"{n:064x}",
        occurred_at=T0,
        created_at=T0 + timedelta(seconds=n),
        updated_at=T0 + timedelta(seconds=n),
        embedding=np.full(4, 0.5, dtype=np.float32),
        model="hashing-v1-384",
    )
    return replace(base, **changes)


def test_pages_follow_the_changes_forgotten_rows_included(store):
    transfer_store(store).put_memories("t", "p", [rec(n) for n in range(5)])
    sync = sync_store(store)
    first = sync.changed_page("t", "p", after=None, limit=3)
    assert [r.id for _, r in first] == ["m000", "m001", "m002"]
    rest = sync.changed_page("t", "p", after=first[-1][0], limit=10)
    assert [r.id for _, r in rest] == ["m003", "m004"]
    assert rest[0][1].embedding is not None
    store.forget("t", "m001", at=T0 + timedelta(days=1), actor="t", reason="stale")
    after = sync.changed_page("t", "p", after=rest[-1][0], limit=10)
    assert [(r.id, r.deleted_at is not None) for _, r in after] == [("m001", True)]
    assert sync.changed_page("t", "p", after=after[-1][0], limit=10) == []
    assert sync.changed_page("other", "p", after=None, limit=10) == []


def test_replace_writes_whole_rows_under_a_new_version_and_keeps_the_counts(store):
    transfer_store(store).put_memories("t", "p", [rec(n) for n in range(3)])
    sync = sync_store(store)
    version = store.change_markers("t", ["p"])["p"]
    changed = [
        rec(0, pinned=True, updated_at=T0 + timedelta(days=1)),
        rec(1, deleted_at=T0 + timedelta(days=1), deleted_reason="stale"),
        rec(7),
    ]
    new_version, quiet = sync.replace_memories("t", "p", changed, quiet_since=version)
    assert new_version > version and quiet
    assert sync.replace_memories("t", "p", [rec(8)], quiet_since=version) == (new_version + 1, False)
    current = sync.current("t", ["m000", "m001", "m007", "m404"])
    assert set(current) == {"m000", "m001", "m007"}
    assert current["m000"][1].pinned and current["m001"][1].deleted_at is not None
    assert current["m000"][0][0] == new_version
    stats = next(s for s in store.projects("t") if s.project == "p")
    assert (stats.memories, stats.pinned, stats.forgotten) == (4, 1, 1)
    assert {r.id for r in store.changes_since("t", "p", version).changed} >= {"m000", "m007", "m008"}
