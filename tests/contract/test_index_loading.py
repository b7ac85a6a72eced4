"""What a search index reads to load a project fast: ``get_many`` and ``changes_since(columns=True)``."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import count

import numpy as np

from capsule.core.records import MemoryRecord
from capsule.search.index import ProjectIndex, stable_key, store_fetcher

T0 = datetime(2026, 3, 1, tzinfo=UTC)
_ids = count()


def rec(content: str, project: str = "p", **extra) -> MemoryRecord:
    return MemoryRecord(
        id=f"g{next(_ids):06d}",
        tenant="t",
        project=project,
        content=content,
        sha256=f"sha-{content}",
        occurred_at=T0,
        created_at=T0,
        updated_at=T0,
        embedding=np.full(4, 0.5, np.float32),
        model="m4",
        **extra,
    )


def test_get_many_returns_the_named_memories_forgotten_ones_too(store):
    a, b, c = rec("alpha"), rec("beta", meta={"author": "Ann"}), rec("gamma", project="q")
    store.insert([a, b], limit=100, dedupe_after=None, actor="x")
    store.insert([c], limit=100, dedupe_after=None, actor="x")
    store.forget("t", a.id, at=T0, actor="x", reason="r")
    found = {r.id: r for r in store.get_many("t", [a.id, b.id, c.id, "missing", b.id])}
    assert set(found) == {a.id, b.id, c.id}
    assert found[a.id].deleted_at is not None and found[b.id].meta == {"author": "Ann"}
    assert found[c.id].content == "gamma" and found[c.id].project == "q"
    assert store.get_many("other-tenant", [a.id]) == []
    assert store.get_many("t", []) == []


def test_a_full_load_as_columns_holds_every_active_row(store):
    rows = [
        rec("alpha beta"),
        rec("beta", meta={"session": "s1", "author": "Bo", "outcome_status": "success"}),
        rec("gone"),
    ]
    store.insert(rows, limit=100, dedupe_after=None, actor="x")
    store.forget("t", rows[2].id, at=T0, actor="x", reason="r")
    changes = store.changes_since("t", "p", 0, columns=True)
    assert changes.reset and changes.version == store.change_markers("t", ["p"])["p"]
    # Either form is allowed: loaded into an index, both give the same rows and statistics.
    index = ProjectIndex("t", "p", "m4", store_fetcher(store))
    index.apply(changes)
    assert sorted(index.row_of) == sorted(r.id for r in rows[:2])
    row = index.row_of[rows[1].id]
    assert index.key[row] == stable_key(rows[1].id) and index.length[row] == 1
    assert index.outcome[row] == 0.10 and index.session[row] >= 0 and "Bo" in index.authors
    assert np.allclose(index.matrix[row], 0.5) and index.has_vec[row]
    assert index.records[row].content == "beta" and index.records[row].meta["author"] == "Bo"
    assert index.postings_of("beta")[0].size == 2
