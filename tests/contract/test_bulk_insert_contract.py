"""``MemoryStore.insert_bulk`` on every backend: what ``insert`` does, for a large batch."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.errors import Conflict

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def batch(count: int, *, project: str = "p", prefix: str = "b", repeat: int | None = None, start: int = 0):
    from capsule.core.records import MemoryRecord

    out = []
    for i in range(start, start + count):
        at = T0 + timedelta(seconds=i)
        vector = np.array([np.cos(i), np.sin(i), 0.5, -0.25], dtype=np.float32)
        text = f"memory {i % repeat if repeat else i}"
        out.append(
            MemoryRecord(
                id=f"{prefix}{i:06d}",
                tenant="t1",
                project=project,
                content=text,
                sha256=f"sha-{text}",
                occurred_at=at,
                created_at=at,
                updated_at=at,
                embedding=vector,
                model="test-4",
                meta={"component": "db"} if i % 2 else {},
                pinned=i % 10 == 0,
            )
        )
    return out


def comparable(record):
    return (
        record.content,
        record.project,
        record.sha256,
        record.occurred_at,
        record.created_at,
        record.meta,
        record.pinned,
        record.model,
        record.status,
        None if record.embedding is None else record.embedding.tolist(),
    )


def test_bulk_stores_what_insert_stores(store):
    rows = batch(300)
    outcome = store.insert_bulk(rows, limit=10_000, dedupe_after=None, actor="tester")
    assert outcome.inserted == [r.id for r in rows] and outcome.active_after == 300 and not outcome.evicted
    twins = [replace(r, id="i" + r.id[1:], project="q") for r in batch(300)]
    store.insert(twins, limit=10_000, dedupe_after=None, actor="tester")
    got = {r.id: r for r in store.get_many("t1", [r.id for r in rows])}
    twin = {r.id: r for r in store.get_many("t1", [r.id for r in twins])}
    for r in rows:
        a, b = comparable(got[r.id]), comparable(twin["i" + r.id[1:]])
        assert a[0] == b[0] and a[2:] == b[2:]


def test_bulk_dedupes_and_evicts_as_insert_does(store):
    first = store.insert_bulk(batch(60, repeat=40), limit=50, dedupe_after=T0 - timedelta(days=1), actor="tester")
    assert len(first.inserted) == 40 and len(first.duplicates) == 20  # a repeat within the batch
    assert first.duplicates["b000045"] == "b000005"
    second = store.insert_bulk(batch(30, start=100), limit=50, dedupe_after=None, actor="tester")
    assert len(second.inserted) == 30 and len(second.evicted) == 20 and second.active_after == 50
    assert not set(second.evicted) & set(second.inserted)


def test_bulk_is_all_or_none(store):
    store.insert_bulk(batch(5), limit=1000, dedupe_after=None, actor="tester")
    clash = batch(10, start=100) + batch(1)  # the last id is stored already
    with pytest.raises(Conflict):
        store.insert_bulk(clash, limit=1000, dedupe_after=None, actor="tester")
    assert store.get_many("t1", [r.id for r in batch(10, start=100)]) == []
