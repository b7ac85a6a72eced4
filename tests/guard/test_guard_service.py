"""The guard on the way in, end to end on a real SQLite store: a redacted key never reaches the
database file, its WAL or the embedder; ``refuse`` stores nothing; ``flag`` records the spans."""

from __future__ import annotations

from pathlib import Path

import pytest

from capsule.config import Settings
from capsule.core.errors import InvalidInput
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService

from .corpus import AKIA, AWS_SECRET, GHP, PEM

SECRET_TEXT = f"deploy with AWS_ACCESS_KEY_ID={AKIA} and aws_secret_access_key={AWS_SECRET}, ask jane@acme.io"


class RecordingEmbedder(HashingEmbedder):
    """The real hashing embedder, keeping every text it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts, *, kind="document"):
        self.seen.extend(texts)
        return super().embed(texts, kind=kind)


@pytest.fixture
def embedder() -> RecordingEmbedder:
    return RecordingEmbedder()


def make(store, clock, tmp_path, embedder, **policies) -> MemoryService:
    settings = Settings(data_dir=tmp_path, embedder="hashing", retention_limit=100, **policies)
    return MemoryService(store, embedder, clock=clock, settings=settings)


def db_bytes(store_path: Path) -> bytes:
    files = [p for p in store_path.parent.iterdir() if p.name.startswith(store_path.name)]
    assert any(p.name.endswith("-wal") for p in files) or files  # the WAL, when the store keeps one
    return b"".join(p.read_bytes() for p in files)


def test_a_stored_aws_key_reaches_neither_disk_nor_embedder(sqlite_store, clock, tmp_path, embedder):
    service = make(sqlite_store, clock, tmp_path, embedder)
    result = service.store_memory(
        "t1", {"project": "p", "content": SECRET_TEXT, "explanation": f"pasted {GHP} by mistake"}
    )
    memory = result.memory
    assert "[REDACTED:aws-access-key]" in memory.content and "[REDACTED:aws-secret-key]" in memory.content
    assert "jane@acme.io" in memory.content  # personal data is flagged by default, not redacted
    guard = memory.meta["_guard"]
    assert [f["kind"] for f in guard["secrets"]] == ["aws-access-key", "aws-secret-key"]
    assert guard["pii"] == [
        {
            "kind": "email",
            "start": memory.content.index("jane@"),
            "end": memory.content.index("jane@") + len("jane@acme.io"),
            "action": "flagged",
        }
    ]
    first = guard["secrets"][0]
    assert memory.content[first["start"] : first["end"]] == "[REDACTED:aws-access-key]"
    assert "redacted aws-access-key, aws-secret-key, github-token" in result.explanation
    service.settle()
    raw = db_bytes(Path(sqlite_store.path))
    for secret in (AKIA, AWS_SECRET, GHP):
        assert secret.encode() not in raw
        assert not any(secret in text for text in embedder.seen)
    assert b"REDACTED:aws-access-key" in raw  # the grep reads the real file: the memory is there


def test_ingest_redacts_each_chunk(sqlite_store, clock, tmp_path, embedder):
    service = make(sqlite_store, clock, tmp_path, embedder)
    text = ("intro paragraph. " * 900) + f"\n\nthe key is {AKIA}\n\n" + ("closing words. " * 900) + PEM
    result = service.ingest("t1", {"project": "p", "text": text, "path": "notes.md"})
    assert result.chunks > 1
    records = [service.get("t1", i).memory for i in result.ids]
    kinds = sorted(f["kind"] for r in records for f in r.meta.get("_guard", {}).get("secrets", []))
    assert set(kinds) == {"aws-access-key", "private-key"}
    assert sum("_guard" not in r.meta for r in records) >= 1  # clean chunks carry no record
    raw = db_bytes(Path(sqlite_store.path))
    assert AKIA.encode() not in raw and b"PRIVATE KEY-----\nMIIE" not in raw
    assert not any(AKIA in t for t in embedder.seen)


def test_refuse_stores_nothing_and_names_the_kinds(sqlite_store, clock, tmp_path, embedder):
    service = make(sqlite_store, clock, tmp_path, embedder, secrets_policy="refuse")
    before = db_bytes(Path(sqlite_store.path))
    with pytest.raises(InvalidInput) as caught:
        service.store_memory("t1", {"project": "p", "content": SECRET_TEXT})
    assert caught.value.status == 422 and caught.value.field == "content"
    assert "aws-access-key, aws-secret-key" in caught.value.message and "secrets_policy" in caught.value.message
    with pytest.raises(InvalidInput):
        service.ingest("t1", {"project": "p", "text": SECRET_TEXT})
    assert embedder.seen == []
    assert service.projects("t1").projects == []
    assert AKIA.encode() not in db_bytes(Path(sqlite_store.path))
    assert len(db_bytes(Path(sqlite_store.path))) == len(before)


def test_pii_refuse_names_pii_policy(sqlite_store, clock, tmp_path, embedder):
    service = make(sqlite_store, clock, tmp_path, embedder, pii_policy="refuse")
    with pytest.raises(InvalidInput) as caught:
        service.store_memory("t1", {"project": "p", "content": "call +49 30 12345678"})
    assert "phone" in caught.value.message and "pii_policy" in caught.value.message


def test_flag_keeps_the_secret_and_records_it(sqlite_store, clock, tmp_path, embedder):
    service = make(sqlite_store, clock, tmp_path, embedder, secrets_policy="flag", pii_policy="redact")
    memory = service.store_memory("t1", {"project": "p", "content": SECRET_TEXT}).memory
    assert AKIA in memory.content and "[REDACTED:email]" in memory.content
    spans = memory.meta["_guard"]["secrets"]
    assert memory.content[spans[0]["start"] : spans[0]["end"]] == AKIA
    assert spans[0]["action"] == "flagged"


def test_clean_text_has_no_guard_record(service):
    memory = service.store_memory("t1", {"project": "p", "content": "we chose SQLite for the embedded mode"}).memory
    assert "_guard" not in memory.meta


def test_the_reserved_meta_key_is_refused(service):
    with pytest.raises(InvalidInput) as caught:
        service.store_memory("t1", {"project": "p", "content": "x", "meta": {"_guard": {"pii": []}}})
    assert caught.value.field == "meta._guard"
    assert service.projects("t1").projects == []


def test_an_unknown_policy_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="secrets_policy"):
        Settings(data_dir=tmp_path, secrets_policy="mask")


def test_meta_values_are_guarded_too(sqlite_store, clock, tmp_path, embedder):
    service = make(sqlite_store, clock, tmp_path, embedder)
    memory = service.store_memory(
        "t1",
        {
            "project": "p",
            "content": "rotated the deploy credentials",
            "meta": {"source": f"ci log {AKIA}", "aws_secret_access_key": AWS_SECRET, "tags": ["ops"]},
        },
    ).memory
    assert memory.meta["source"] == "ci log [REDACTED:aws-access-key]"
    assert memory.meta["aws_secret_access_key"] == "[REDACTED:aws-secret-key]"
    assert memory.meta["_guard"]["meta"] == {"redacted": ["aws-access-key", "aws-secret-key"], "flagged": []}
    raw = db_bytes(Path(sqlite_store.path))
    assert AKIA.encode() not in raw and AWS_SECRET.encode() not in raw


def test_an_update_is_guarded_as_a_store_is(sqlite_store, clock, tmp_path, embedder):
    """PATCH (capsule.service.history) goes through the same policies: an edit that pastes a
    key stores it redacted, and neither the file, its WAL, the history nor the embedder sees it."""
    service = make(sqlite_store, clock, tmp_path, embedder)
    stored = service.store_memory("t1", {"project": "p", "content": "the deploy key lives in the vault"}).memory
    updated = service.history.update("t1", stored.id, {"content": f"the deploy key is {AKIA}"}).memory
    assert "[REDACTED:aws-access-key]" in updated.content and AKIA not in updated.content
    assert [f["kind"] for f in updated.meta["_guard"]["secrets"]] == ["aws-access-key"]
    service.settle()
    assert AKIA.encode() not in db_bytes(Path(sqlite_store.path))
    assert not any(AKIA in text for text in embedder.seen)
    refusing = make(sqlite_store, clock, tmp_path, embedder, secrets_policy="refuse")
    with pytest.raises(InvalidInput):
        refusing.history.update("t1", stored.id, {"content": f"again {AKIA}"})
    assert refusing.get("t1", stored.id).memory.content == updated.content  # nothing changed


def test_a_feedback_context_is_guarded(sqlite_store, clock, tmp_path, embedder):
    """Issue 37: the context of a vote is a text that enters too; it never reaches the file."""
    from .labelled import FAKE

    service = make(sqlite_store, clock, tmp_path, embedder)
    stored = service.store_memory("t1", {"project": "p", "content": "retry the upload with backoff"}).memory
    service.feedback(
        "t1", stored.id, {"helpful": True, "context": f"worked once I set STRIPE_SECRET_KEY={FAKE['stripe_live']}"}
    )
    service.settle()
    raw = db_bytes(Path(sqlite_store.path))
    assert FAKE["stripe_live"].encode() not in raw and b"[REDACTED:stripe-key]" in raw


def test_the_new_rules_reach_the_store_path(sqlite_store, clock, tmp_path, embedder):
    """A connection string's password and a provider key are redacted on a store, never embedded."""
    from .labelled import FAKE

    service = make(sqlite_store, clock, tmp_path, embedder)
    text = (
        f"DATABASE_URL=postgresql://app:{FAKE['pw_url1']}@db.internal:5432/prod\n"
        f"ANTHROPIC_API_KEY={FAKE['ant']}\nHF_TOKEN={FAKE['hf']}"
    )
    memory = service.store_memory("t1", {"project": "p", "content": text}).memory
    assert [f["kind"] for f in memory.meta["_guard"]["secrets"]] == [
        "url-credential",
        "anthropic-key",
        "huggingface-token",
    ]
    assert memory.meta["_guard"].get("pii", []) == []
    service.settle()
    raw = db_bytes(Path(sqlite_store.path))
    for name in ("pw_url1", "ant", "hf"):
        assert FAKE[name].encode() not in raw and not any(FAKE[name] in t for t in embedder.seen)
