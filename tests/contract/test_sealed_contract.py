"""Encryption at rest on every backend in conftest.BACKENDS: the same envelopes in SQLite and
MongoDB (the store behind a SealedStore keeps only sealed text), opened whole on the way out,
found by keyword, kept sealed through an update and its history, and rotated with re-sealing."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from capsule.crypto import envelope
from capsule.crypto.wrappers import LocalKeyFile
from capsule.embedders import HashingEmbedder
from capsule.sealing.reseal import rotate, sweep
from capsule.sealing.setup import sealed
from capsule.service.memory_service import MemoryService

NOW = datetime(2026, 6, 1, tzinfo=UTC)
TEXT = "email hortensia.blackwood@tallowmere.net about the lorikeet shipment"
WORDS = ["hortensia", "blackwood", "tallowmere", "lorikeet", "Wexcombe"]


def service_on(store, tmp_path) -> MemoryService:
    return MemoryService(
        sealed(store, LocalKeyFile(tmp_path / "k" / "capsule.key"), clock=lambda: NOW), HashingEmbedder()
    )


def raw_text(store) -> str:
    """Everything the backend holds, as text: the memories, versions, audit log, every table."""
    db = getattr(store, "db", None)
    if db is not None:  # MongoDB (mongomock): every collection's documents
        mock = getattr(db, "_mock", db)
        return json.dumps({name: [str(d) for d in mock[name].find()] for name in mock.list_collection_names()})
    conn = store._conn()
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return json.dumps({t: [str(tuple(r)) for r in conn.execute(f'SELECT * FROM "{t}"')] for t in tables})


def test_a_flagged_memory_is_one_envelope_on_every_backend(store, tmp_path):
    svc = service_on(store, tmp_path)
    memory_id = svc.store_memory("t1", {"project": "p", "content": TEXT, "meta": {"client": "Wexcombe"}}).memory.id
    stored = store.get("t1", memory_id)
    assert envelope.is_sealed(stored.content) and list(stored.meta) == ["_sealed"]
    opened = svc.get("t1", memory_id).memory
    assert opened.content == TEXT and opened.meta["client"] == "Wexcombe"
    hits = svc.search("t1", {"project": "p", "query": "lorikeet", "mode": "bm25"}).results
    assert [h.id for h in hits] == [memory_id]
    svc.history.update("t1", memory_id, {"content": TEXT + " (delayed)"})
    assert [v.content for v in svc.history.history("t1", memory_id).versions] == [TEXT, TEXT + " (delayed)"]
    text = raw_text(store)
    assert not [w for w in WORDS if w.lower() in text.lower()]
    assert "delayed" not in text


def test_rotation_and_resealing_on_every_backend(store, tmp_path):
    svc = service_on(store, tmp_path)
    memory_id = svc.store_memory("t1", {"project": "p", "content": TEXT}).memory.id
    rotate(svc.store, svc.governance_store, "t1", actor="ops", at=NOW)
    assert envelope.parse(store.get("t1", memory_id).content)[1] == 1
    assert sweep(svc.store, limit=10) == 1
    assert envelope.parse(store.get("t1", memory_id).content)[1] == 2
    assert sweep(svc.store, limit=10) == 0
    assert svc.get("t1", memory_id).memory.content == TEXT
    assert [a.action for a in svc.store.audit_log("t1", limit=5)][0] == "rotate-data-key"
