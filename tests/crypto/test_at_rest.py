"""Encryption at rest through the library, on a real SQLite file: a flagged memory's content,
meta and explanation never reach the database, its WAL, the index snapshots or any other file of
the data folder, and search (by meaning and by keyword), get, list, update and history still
give them back as written."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from capsule.config import Settings
from capsule.core.errors import KeyUnavailable
from capsule.crypto import envelope
from capsule.runtime.service import build_service

from .disk import files_holding, rows_holding

# Unusual words, so a hit in a file can only be this memory's text.
FLAGGED = "Call quetzalcoatl.vandermeer@zorblatt.io about the xylophonic ledger reconciliation"
META = {"customer": "Brunhildevanova Holdings", "tags": ["escalation"], "component": "billing"}
WHY = "she asked about the narwhalian refund"
WORDS = ["quetzalcoatl", "vandermeer", "zorblatt", "xylophonic", "Brunhildevanova", "narwhalian"]
PLAIN = "the giraffe rotation schedule is on the wiki"


def settings(data_dir: Path, **more) -> Settings:
    # Snapshots from the first row, so the snapshot folder is written and checked too.
    return Settings(data_dir=data_dir, embedder="hashing", index_snapshot_min=1, **more)


@pytest.fixture
def service(tmp_path):
    svc = build_service(settings(tmp_path))
    yield svc
    svc.settle()
    svc.store.close()


def store_flagged(svc, project="p"):
    return svc.store_memory("t1", {"project": project, "content": FLAGGED, "meta": META, "explanation": WHY})


def test_a_flagged_memory_is_sealed_on_disk_and_read_back_whole(service, tmp_path):
    stored = store_flagged(service)
    assert "flagged email" in stored.explanation
    service.store_memory("t1", {"project": "p", "content": PLAIN})
    memory_id = stored.memory.id

    got = service.get("t1", memory_id).memory
    assert got.content == FLAGGED and got.explanation == WHY
    assert got.meta["customer"] == META["customer"] and got.meta["_guard"]["pii"][0]["kind"] == "email"
    for mode in ("hybrid", "vector", "bm25"):
        hits = service.search("t1", {"project": "p", "query": "xylophonic ledger", "mode": mode}).results
        assert hits and hits[0].id == memory_id and hits[0].content == FLAGGED, mode
    assert [m.content for m in service.list_memories("t1", {"project": "p"}).memories][-1] == FLAGGED
    filtered = service.search("t1", {"project": "p", "query": "ledger", "filters": {"component": "billing"}})
    assert [h.id for h in filtered.results] == [memory_id]
    service.settle()

    assert list((tmp_path / "index").glob("*.snapshot")), "the snapshot folder was written"
    assert files_holding(tmp_path, [w.encode() for w in WORDS]) == {}
    assert rows_holding(tmp_path / "capsule.db", WORDS) == []
    # The unflagged memory is stored as it was (and its words are in the file): the test can see text.
    assert files_holding(tmp_path, [b"giraffe"])


def test_the_stored_row_is_a_versioned_envelope(service, tmp_path):
    memory_id = store_flagged(service).memory.id
    with sqlite3.connect(tmp_path / "capsule.db") as conn:
        content, meta, explanation, facets = conn.execute(
            "SELECT content, meta, explanation, facets FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
    kid, version, _ = envelope.parse(content)
    assert version == 1 and len(kid) == 8
    assert envelope.is_sealed(explanation) and list(__import__("json").loads(meta)) == ["_sealed"]
    assert facets == ""


def test_a_fresh_process_searches_from_the_snapshot_and_opens_the_memory(tmp_path):
    first = build_service(settings(tmp_path))
    memory_id = store_flagged(first).memory.id
    first.search("t1", {"project": "p", "query": "ledger"})
    first.settle()
    first.store.close()
    second = build_service(settings(tmp_path))
    try:
        hits = second.search("t1", {"project": "p", "query": "xylophonic", "mode": "bm25"}).results
        assert [(h.id, h.content) for h in hits] == [(memory_id, FLAGGED)]
    finally:
        second.store.close()


def test_an_update_and_its_history_stay_sealed(service, tmp_path):
    memory_id = store_flagged(service).memory.id
    changed = FLAGGED.replace("ledger", "abacus-of-doom")
    service.history.update("t1", memory_id, {"content": changed})
    assert service.get("t1", memory_id).memory.content == changed
    versions = service.history.history("t1", memory_id).versions
    assert [v.content for v in versions] == [FLAGGED, changed]
    assert service.search("t1", {"project": "p", "query": "abacus", "mode": "bm25"}).results[0].id == memory_id
    assert rows_holding(tmp_path / "capsule.db", WORDS + ["abacus-of-doom"]) == []
    assert files_holding(tmp_path, [w.encode() for w in WORDS]) == {}


def test_the_key_file_is_private_and_made_on_first_use(tmp_path):
    svc = build_service(settings(tmp_path))
    svc.store_memory("t1", {"project": "p", "content": PLAIN})
    key_file = tmp_path / "keys" / "capsule.key"
    assert not key_file.exists(), "nothing sealed yet: no key file"
    store_flagged(svc)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    svc.store.close()


def test_a_missing_or_wrong_key_file_fails_closed_naming_the_key(tmp_path):
    svc = build_service(settings(tmp_path))
    memory_id = store_flagged(svc).memory.id
    svc.store.close()
    key_file = tmp_path / "keys" / "capsule.key"
    key_file.write_bytes(__import__("base64").b64encode(os.urandom(32)))  # another key
    other = build_service(settings(tmp_path))
    with pytest.raises(KeyUnavailable) as refused:
        other.get("t1", memory_id)
    assert "wrapped by local:" in refused.value.message and FLAGGED not in refused.value.message
    assert refused.value.status == 503
    with pytest.raises(KeyUnavailable):
        other.search("t1", {"project": "p", "query": "ledger"})
    # A write that must be sealed is refused too, and nothing is stored in the clear.
    with pytest.raises(KeyUnavailable):
        other.store_memory("t1", {"project": "p", "content": FLAGGED.replace("Call", "Phone")})
    assert other.store.backing_store.list("t1", "p", pinned_only=False, after=None, limit=10)[0].id == memory_id
    other.store.close()
    key_file.write_text("not a key\n")
    third = build_service(settings(tmp_path))
    with pytest.raises(KeyUnavailable, match="does not hold a 32-byte key"):
        third.get("t1", memory_id)
    third.store.close()


def test_a_project_set_to_encrypt_everything_seals_unflagged_memories(service, tmp_path):
    before = service.store_memory("t1", {"project": "all", "content": "the wombatical plan, stored before"}).memory.id
    result = service.set_project_settings("t1", "all", {"encryption": "all"})
    assert "encrypts every memory" in result.explanation
    assert {p.project: p.encryption for p in result.projects}["all"] == "all"
    after = service.store_memory("t1", {"project": "all", "content": "the okapiform plan, no personal data"}).memory
    assert service.get("t1", after.id).memory.content == "the okapiform plan, no personal data"
    assert rows_holding(tmp_path / "capsule.db", ["okapiform"]) == []
    assert rows_holding(tmp_path / "capsule.db", ["wombatical"]) == ["memories.content"]
    # The one stored before is sealed lazily: by the retention job (or its next read).
    from capsule.runtime.learning import build_jobs

    report = build_jobs(service).run("retention")
    assert report.counts["resealed"] == 1
    assert rows_holding(tmp_path / "capsule.db", ["wombatical"]) == []
    assert service.get("t1", before).memory.content == "the wombatical plan, stored before"
    hits = service.search("t1", {"project": "all", "query": "wombatical", "mode": "bm25"}).results
    assert [h.id for h in hits] == [before]


def test_the_setting_is_strict(service):
    from capsule.core.errors import InvalidInput

    with pytest.raises(InvalidInput) as bad:
        service.set_project_settings("t1", "p", {"encryption": "everything"})
    assert "encryption" in str(bad.value.details)


@pytest.mark.parametrize("bulk_from", [None, 2], ids=["row-by-row", "bulk-insert"])
def test_ingested_chunks_with_personal_data_are_sealed(service, tmp_path, monkeypatch, bulk_from):
    if bulk_from is not None:  # the ingest's rows go through insert_bulk, which the wrapper must seal too
        import capsule.service.writes

        monkeypatch.setattr(capsule.service.writes, "BULK_FROM", bulk_from)
    text = " ".join(f"Paragraph {n} says the harbour tide table changed on day {n}." for n in range(400))
    text += " Reach dorabella.quince@saltmarrow.net for the keys."
    result = service.ingest("t1", {"project": "docs", "text": text, "path": "notes.md"})
    assert result.chunks > 2
    hits = service.search("t1", {"project": "docs", "query": "saltmarrow keys", "mode": "bm25"}).results
    assert "dorabella.quince@saltmarrow.net" in hits[0].content
    assert rows_holding(tmp_path / "capsule.db", ["dorabella", "saltmarrow"]) == []
    assert files_holding(tmp_path, [b"dorabella", b"saltmarrow"]) == {}


def test_a_tenant_with_data_keys_is_not_merged_into_another(service):
    from capsule.core.errors import Conflict
    from capsule.store.tenants import mover_for

    memory_id = store_flagged(service).memory.id
    with pytest.raises(Conflict, match="encrypted memories"):
        mover_for(service.store).move("t1", "t2")
    assert service.get("t1", memory_id).memory.content == FLAGGED


def test_a_global_search_finds_a_sealed_memory_by_keyword(service):
    """The search that picks candidates across projects looks terms up under their keyed hashes
    too, as one project's search does."""
    memory_id = store_flagged(service, project="billing").memory.id
    service.store_memory("t1", {"project": "wiki", "content": PLAIN})
    service.store_memory("t1", {"project": "ops", "content": "the ledger export runs nightly"})
    hits = service.search("t1", {"global": True, "query": "xylophonic reconciliation", "mode": "bm25"}).results
    assert [h.id for h in hits] == [memory_id] and hits[0].content == FLAGGED
