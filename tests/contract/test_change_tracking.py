"""The change-tracking part of the store contract (the warm index reads it), on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

import numpy as np

T0 = datetime(2026, 3, 1, tzinfo=UTC)
_ids = count()

from capsule.core.records import MemoryRecord  # noqa: E402


def rec(content: str, project: str = "p") -> MemoryRecord:
    return MemoryRecord(
        id=f"c{next(_ids):06d}",
        tenant="t",
        project=project,
        content=content,
        sha256=f"sha-{content}",
        occurred_at=T0,
        created_at=T0,
        updated_at=T0,
        embedding=np.full(4, 0.5, np.float32),
        model="m4",
    )


def put(store, *records, limit=1000):
    store.insert(list(records), limit=limit, dedupe_after=None, actor="tester")
    return [r.id for r in records]


def marker(store, project="p"):
    return store.change_markers("t", [project]).get(project, 0)


def test_every_kind_of_write_moves_the_marker(store):
    assert store.change_markers("t", None) == {}
    (first,) = put(store, rec("alpha"))
    steps = [
        lambda: put(store, rec("beta")),
        lambda: store.set_pinned("t", first, True, at=T0, actor="x"),
        lambda: store.set_pinned("t", first, False, at=T0, actor="x"),
        lambda: store.add_feedback("t", first, helpful=True, context=None, at=T0),
        lambda: store.forget("t", first, at=T0, actor="x", reason="r"),
        lambda: store.restore("t", first, at=T0, actor="x"),
        lambda: store.set_embedding("t", first, np.ones(4, np.float32) / 2, "other"),
    ]
    seen = [marker(store)]
    for step in steps:
        step()
        seen.append(marker(store))
    assert seen == sorted(set(seen)), seen  # strictly increasing
    assert store.change_markers("t", ["p", "missing"]).keys() == {"p"}


def test_changes_since_gives_changed_rows_and_tombstones(store):
    a, b = put(store, rec("alpha")) + put(store, rec("beta"))
    put(store, rec("other project", project="q"))
    since = marker(store)
    (c,) = put(store, rec("gamma"))
    store.add_feedback("t", a, helpful=True, context=None, at=T0)
    store.forget("t", b, at=T0, actor="x", reason="r")
    changes = store.changes_since("t", "p", since)
    assert not changes.reset and changes.version == marker(store)
    assert [r.id for r in changes.changed] == [a, c]
    assert changes.changed[0].helpful == 1 and changes.changed[0].embedding is not None
    assert changes.removed == [b]
    assert store.changes_since("t", "p", changes.version).changed == []


def test_eviction_is_a_tombstone(store):
    ids = put(store, rec("m0"), limit=2) + put(store, rec("m1"), limit=2)
    since = marker(store)
    put(store, rec("m2"), limit=2)
    assert store.changes_since("t", "p", since).removed == [ids[0]]


def test_a_purge_makes_older_readers_reload(store):
    a, b = put(store, rec("alpha")) + put(store, rec("beta"))
    old = marker(store)
    store.forget("t", a, at=T0, actor="x", reason="r")
    assert store.purge_forgotten(before=T0 + timedelta(days=1)) == 1
    changes = store.changes_since("t", "p", old)
    assert changes.reset and [r.id for r in changes.changed] == [b]


def test_a_whole_load_and_unknown_projects(store):
    put(store, rec("alpha"))
    assert store.changes_since("t", "p", 0).reset
    assert store.changes_since("t", "p", marker(store) + 5).reset  # newer than the store: reload
    missing = store.changes_since("t", "nothing", 0)
    assert (missing.version, missing.changed, missing.reset) == (0, [], True)
    assert store.change_markers("other-tenant", None) == {}
