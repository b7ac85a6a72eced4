"""Key rotation without downtime: a new data key seals new writes, earlier ones keep opening what
they sealed, memories are re-sealed lazily (on read, by the retention job), search finds them all
the while; re-wrapping under another key file changes no memory. Both are audit records."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from capsule.config import Settings
from capsule.crypto import envelope
from capsule.crypto.wrappers import LocalKeyFile
from capsule.runtime.learning import build_jobs
from capsule.runtime.service import build_service
from capsule.sealing.reseal import rewrap, rotate
from tests.serve.server import capsule

T = "t1"
NOW = datetime(2026, 6, 1, tzinfo=UTC)
TEXTS = [
    f"write to ann.{n}@holloway-farms.org about crate {word}"
    for n, word in enumerate(["pomegranix", "turnipolis", "quincewold"])
]


@pytest.fixture
def service(tmp_path):
    svc = build_service(Settings(data_dir=tmp_path, embedder="hashing"))
    yield svc
    svc.store.close()


def labels(path) -> dict[str, str]:
    with sqlite3.connect(path / "capsule.db") as conn:
        rows = conn.execute("SELECT id, content FROM memories").fetchall()
    return {i: "{}.{}".format(*envelope.parse(c)[:2]) for i, c in rows}


def test_rotation_keeps_every_memory_readable_and_reseals_lazily(service, tmp_path):
    ids = [service.store_memory(T, {"project": "p", "content": t}).memory.id for t in TEXTS[:2]]
    first = service.store.sealer.keyring.current(T).label
    said = rotate(service.store, service.governance_store, T, actor="ops", at=NOW)
    second = service.store.sealer.keyring.current(T)
    assert second.version == 2 and "new data key" in said
    newest = service.store_memory(T, {"project": "p", "content": TEXTS[2]}).memory.id
    assert labels(tmp_path) == {ids[0]: first, ids[1]: first, newest: second.label}

    for text, memory_id in zip(TEXTS, [*ids, newest]):  # every version opens; keyword search finds each
        word = text.rsplit(" ", 1)[1]
        hits = service.search(T, {"project": "p", "query": word, "mode": "bm25"}).results
        assert [h.id for h in hits] == [memory_id] and hits[0].content == text

    assert service.get(T, ids[0]).memory.content == TEXTS[0]  # a read re-seals it under the new key
    assert labels(tmp_path)[ids[0]] == second.label and labels(tmp_path)[ids[1]] == first
    report = build_jobs(service).run("retention")  # the job re-seals the rest
    assert report.counts["resealed"] == 1
    assert set(labels(tmp_path).values()) == {second.label}
    fresh = build_service(Settings(data_dir=tmp_path, embedder="hashing"))  # a cold index, new terms
    try:
        for text, memory_id in zip(TEXTS, [*ids, newest]):
            hits = fresh.search(T, {"project": "p", "query": text.rsplit(" ", 1)[1], "mode": "bm25"}).results
            assert [h.id for h in hits] == [memory_id]
    finally:
        fresh.store.close()

    audit = service.store.audit_log(T, memory_id=f"data-key:{second.label}")
    assert [(a.action, a.actor) for a in audit] == [("rotate-data-key", "ops")]


def test_rewrap_under_a_new_key_file_reseals_nothing(service, tmp_path):
    memory_id = service.store_memory(T, {"project": "p", "content": TEXTS[0]}).memory.id
    before = labels(tmp_path)
    old_file = tmp_path / "keys" / "capsule.key"
    old_file.rename(tmp_path / "old.key")
    keyring = service.store.sealer.keyring
    keyring.wrapper = LocalKeyFile(tmp_path / "old.key")
    new = LocalKeyFile(old_file)  # made now: a new random key
    said = rewrap(service.store, service.governance_store, T, new, actor="ops", at=NOW)
    assert said.startswith("re-wrapped 1 data key(s) under local:")
    assert labels(tmp_path) == before
    (tmp_path / "old.key").unlink()
    reopened = build_service(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        assert reopened.get(T, memory_id).memory.content == TEXTS[0]
    finally:
        reopened.store.close()


def test_the_rotate_command_runs_beside_the_data(tmp_path):
    stored = capsule("store", "--project", "p", TEXTS[0], data_dir=tmp_path)
    assert stored.returncode == 0, stored.stderr
    rotated = capsule("keys", "rotate-data-key", "--json", data_dir=tmp_path)
    assert rotated.returncode == 0, rotated.stderr
    assert '"version": 2' in rotated.stdout
    found = capsule("search", "--project", "p", "pomegranix", data_dir=tmp_path)
    assert found.returncode == 0 and "holloway-farms" in found.stdout, found.stderr


def test_a_worker_that_did_not_rotate_finds_what_another_resealed(service, tmp_path):
    """Two workers over one database (as ``capsule serve`` runs them): one rotates and re-seals
    a memory by reading it; the other, whose key cache predates the rotation, still finds it by
    keyword, in an index it loads now and in one it held warm (rows it reads make it read the
    keys afresh; with the cached keys alone it missed them until the cache expired)."""
    other = build_service(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        memory_id = service.store_memory(T, {"project": "p", "content": TEXTS[0]}).memory.id
        warm_id = service.store_memory(T, {"project": "w", "content": TEXTS[1]}).memory.id
        warm = {"project": "w", "query": "turnipolis", "mode": "bm25"}
        assert [h.id for h in other.search(T, warm).results] == [warm_id]  # its keys cached now
        rotate(service.store, service.governance_store, T, actor="ops", at=NOW)
        for moved in (memory_id, warm_id):
            service.get(T, moved)  # re-sealed under the new key by this worker
            assert labels(tmp_path)[moved] == service.store.sealer.keyring.current(T).label
        query = {"project": "p", "query": "pomegranix", "mode": "bm25"}
        assert [h.id for h in other.search(T, query).results] == [memory_id]
        assert [h.id for h in other.search(T, warm).results] == [warm_id]
    finally:
        other.store.close()
