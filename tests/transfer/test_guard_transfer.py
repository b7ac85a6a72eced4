"""Import and sync are entry points of the guard (issue 37): a secret a source kept in clear (its
project's secrets policy was ``flag``) is redacted on the way in, in memories, old versions, votes'
context and audit reasons, on SQLite and mongomock; a redacted memory gets a new sha256 and loses
the vector it carried (re-embedded by the backfill job); ``refuse`` refuses the row."""

from __future__ import annotations

import json

import pytest
from test_roundtrip import export_text

from capsule.core.text import sha256
from capsule.jobs.scheduled import Jobs
from capsule.sync import exchange
from capsule.transfer import import_lines

STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq9wZ2"
DB_URL = "postgresql://app:Zq8vR2kLp9xTm4Wd@db.internal:5432/prod"


def leaky(d) -> dict[str, str]:
    """A source that kept secrets: project 'app' under secrets_policy flag."""
    m = d.memories
    m.set_project_settings("t", "app", {"secrets_policy": "flag"})
    first = m.store_memory(
        "t",
        {
            "project": "app",
            "content": f"billing uses {STRIPE} in prod",
            "explanation": f"connect with {DB_URL}",
            "meta": {"tags": ["billing"]},
        },
    )
    m.history.update(
        "t",
        first.memory.id,
        {"content": f"billing uses {STRIPE} (rotated)", "reason": f"rotated, old one was {STRIPE}"},
        if_match=first.memory.sha256,
    )
    clean = m.store_memory("t", {"project": "app", "content": "the build needs node 20"})
    m.feedback("t", clean.memory.id, {"helpful": True, "context": f"worked after setting DATABASE_URL={DB_URL}"})
    return {"secret": first.memory.id, "clean": clean.memory.id}


def _no_secret(text: str) -> bool:
    return STRIPE not in text and "Zq8vR2kLp9xTm4Wd" not in text


def test_import_redacts_every_text_and_leaves_the_memory_to_be_embedded_again(make):
    source, target = make(), make()
    ids = leaky(source)
    lines = export_text(source)
    assert not _no_secret("".join(lines))  # the source kept them

    result = import_lines(target.sources, "t", lines)
    assert not result.refused
    assert "Guard: redacted" in result.explanation and "stripe-key" in result.explanation
    assert "url-credential" in result.explanation and "pending_embedding" in result.explanation
    leaks = [line for line in export_text(target) if not _no_secret(line)]
    assert not leaks  # memories, versions, votes, audit: nothing left

    record = target.store.get("t", ids["secret"])
    assert record.content == "billing uses [REDACTED:stripe-key] (rotated)"
    assert record.sha256 == sha256(record.content)
    assert record.embedding is None and record.status == "pending_embedding"
    assert record.meta["_guard"]["secrets"][0]["kind"] == "stripe-key"
    assert record.meta["tags"] == ["billing"]
    untouched = target.store.get("t", ids["clean"])
    assert untouched.status == "ready" and untouched.embedding is not None  # nothing to redact: as it came

    jobs = Jobs(target.store, target.learning, target.embedder, clock=target.clock)
    assert jobs.run("backfill").counts["embedded"] == 1
    assert target.store.get("t", ids["secret"]).status == "ready"

    again = import_lines(target.sources, "t", lines)  # idempotent: every redacted row is found present
    assert not again.imported and not again.refused


def test_import_refuses_the_rows_a_refuse_policy_refuses(make):
    source, target = make(), make()
    ids = leaky(source)
    target.memories.set_project_settings("t", "app", {"secrets_policy": "refuse"})
    result = import_lines(target.sources, "t", export_text(source))
    fields = {r.field for r in result.refused}
    assert {"content", "reason", "context"} <= fields
    assert all("refuse" in r.message for r in result.refused)
    assert target.store.get_many("t", [ids["secret"]]) == []
    assert [m.id for m in target.store.get_many("t", [ids["clean"]])] == [ids["clean"]]


def test_sync_apply_redacts_memories_and_votes_and_drops_the_vector(make):
    source, target = make(), make()
    ids = leaky(source)
    page = exchange.changes(source.memories, "t", "app", after=None, limit=50)
    result = exchange.apply(target.memories, "t", {"project": "app", "items": page.items})
    assert result.applied == 2
    assert "Guard: redacted" in result.explanation and "pending_embedding" in result.explanation
    record = target.store.get("t", ids["secret"])
    assert _no_secret(record.content) and _no_secret(record.explanation or "")
    assert record.sha256 == sha256(record.content) and record.status == "pending_embedding"
    assert record.embedding is None
    exported = "".join(export_text(target))
    assert _no_secret(exported) and "[REDACTED:url-credential]" in exported  # the vote's context

    again = exchange.apply(target.memories, "t", {"project": "app", "items": page.items})
    assert again.applied == 0 and again.unchanged == 2  # the redacted row is what is kept


def test_sync_apply_under_refuse_writes_nothing(make):
    source, target = make(), make()
    leaky(source)
    target.memories.set_project_settings("t", "app", {"secrets_policy": "refuse"})
    page = exchange.changes(source.memories, "t", "app", after=None, limit=50)
    try:
        exchange.apply(target.memories, "t", {"project": "app", "items": page.items})
    except Exception as refused:
        assert getattr(refused, "status", None) == 422 and "stripe-key" in str(refused)
        assert "items[0].memory.content" in json.dumps(refused.details)
    else:
        raise AssertionError("a refuse policy must refuse the sync")
    assert not target.store.projects("t") or all(p.memories == 0 for p in target.store.projects("t"))


def test_an_import_from_the_first_capsule_is_guarded_too(make):
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from datetime import datetime

    from capsule.transfer.capsule_mongo import import_capsule_mongo

    client = mongomock.MongoClient()
    client["modelence"]["memories"].insert_many(
        [
            {"content": f"prod db is {DB_URL}", "createdAt": datetime(2025, 3, 1, 12, 0), "pinned": False},
            {"content": "use pnpm", "createdAt": datetime(2025, 3, 1, 13, 0), "pinned": False},
        ]
    )
    d = make()
    result = import_capsule_mongo(
        d.sources, "t", "mongodb://localhost:27017/modelence", project="web", embedder=d.embedder, client=client
    )
    assert result.imported == {"memory": 2} and "url-credential" in result.explanation
    kept = [line for line in export_text(d) if '"kind":"memory"' in line]
    assert len(kept) == 2 and all(_no_secret(line) for line in kept)
    assert any("[REDACTED:url-credential]" in line for line in kept)


def test_an_imported_solution_is_guarded_and_loses_its_carried_vectors(make):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "learning"))
    from learning_helpers import fixpack

    source, target = make(), make()
    source.learning.create_solution("t", fixpack())
    lines = []
    for line in export_text(source):
        row = json.loads(line)
        if row["kind"] == "solution":
            assert row["embeddings"] is not None
            row["body"]["description"] = f"{row['body'].get('description') or ''} token {STRIPE}"
            line = json.dumps(row) + "\n"
        lines.append(line)
    result = import_lines(target.sources, "t", lines)
    assert result.imported.get("solution") == 1 and "1 solution" in result.explanation
    (solution,) = target.learning.store.solutions("t", category=None, limit=5)
    assert STRIPE not in json.dumps(solution.body) and "[REDACTED:stripe-key]" in solution.body["description"]
    assert solution.embeddings is None  # the backfill job embeds its signatures again
