"""The store's change tracking: every write moves the project's version and stamps its rows."""

from __future__ import annotations

from datetime import timedelta

import numpy as np


def marker(service, project="p"):
    return service.store.change_markers("t", [project]).get(project, 0)


def test_every_kind_of_write_moves_the_marker(service, clock):
    store = service.store
    assert store.change_markers("t", None) == {}
    first = service.store_memory("t", {"project": "p", "content": "alpha"}).memory.id
    steps = [
        lambda: service.store_memory("t", {"project": "p", "content": "beta"}),
        lambda: service.pin("t", first, True),
        lambda: service.pin("t", first, False),
        lambda: service.feedback("t", first, {"helpful": True}),
        lambda: service.forget("t", first),
        lambda: service.restore("t", first),
        lambda: store.set_embedding("t", first, np.ones(384, dtype=np.float32) / np.sqrt(384), "other"),
    ]
    seen = [marker(service)]
    for step in steps:
        step()
        seen.append(marker(service))
    assert seen == sorted(set(seen)), seen  # strictly increasing


def test_changes_since_gives_changed_rows_and_tombstones(service):
    a = service.store_memory("t", {"project": "p", "content": "alpha"}).memory.id
    b = service.store_memory("t", {"project": "p", "content": "beta"}).memory.id
    service.store_memory("t", {"project": "q", "content": "other project"})
    since = marker(service)
    c = service.store_memory("t", {"project": "p", "content": "gamma"}).memory.id
    service.feedback("t", a, {"helpful": True})
    service.forget("t", b)
    changes = service.store.changes_since("t", "p", since)
    assert not changes.reset
    assert changes.version == marker(service)
    assert [r.id for r in changes.changed] == [a, c]
    assert changes.changed[0].helpful == 1 and changes.changed[0].embedding is not None
    assert changes.removed == [b]
    assert service.store.changes_since("t", "p", changes.version).changed == []


def test_eviction_is_a_tombstone(make_service):
    service = make_service(retention_limit=2)
    ids = [service.store_memory("t", {"project": "p", "content": f"memory {i}"}).memory.id for i in range(2)]
    since = marker(service)
    service.store_memory("t", {"project": "p", "content": "memory 2"})
    assert service.store.changes_since("t", "p", since).removed == [ids[0]]


def test_a_purge_makes_older_readers_reload(service, clock):
    a = service.store_memory("t", {"project": "p", "content": "alpha"}).memory.id
    b = service.store_memory("t", {"project": "p", "content": "beta"}).memory.id
    old = marker(service)
    service.forget("t", a)
    clock.advance(days=31)
    assert service.store.purge_forgotten(before=clock() - timedelta(days=30)) == 1
    changes = service.store.changes_since("t", "p", old)
    assert changes.reset and [r.id for r in changes.changed] == [b]


def test_a_whole_load_and_unknown_projects(service):
    service.store_memory("t", {"project": "p", "content": "alpha"})
    assert service.store.changes_since("t", "p", 0).reset
    missing = service.store.changes_since("t", "nothing", 0)
    assert (missing.version, missing.changed, missing.reset) == (0, [], True)
    assert service.store.change_markers("other-tenant", None) == {}
