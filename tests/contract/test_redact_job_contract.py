"""The redact job (issue 37) on every backend in conftest.BACKENDS: memories stored before the
current secret rules (or under a ``flag`` policy since changed) are redacted with their old
versions, re-embedded, audited by kind and field (never the value); a second run changes nothing;
a run stopped at its budget resumes; with the embedder down they wait for the backfill job."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.core.errors import Unavailable
from capsule.core.records import MemoryRecord
from capsule.core.text import sha256
from capsule.embedders.hashing import HashingEmbedder
from capsule.jobs.scheduled import Jobs
from capsule.learning import LearningService
from capsule.service.memory_service import MemoryService
from capsule.store.sides import governance_store, open_learning_store, transfer_store
from capsule.store.sqlite import SQLiteStore

T = "t1"
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq9wZ2"
DB_URL = "postgresql://app:Zq8vR2kLp9xTm4Wd@db.internal:5432/prod"


class Switch(HashingEmbedder):
    down = False

    def embed(self, texts, *, kind: str = "document"):
        if self.down:
            raise Unavailable("the test embedder is down")
        return super().embed(texts, kind=kind)


@pytest.fixture
def world(store, tmp_path):
    clock, embedder = FrozenClock(datetime(2026, 3, 1, tzinfo=UTC)), Switch()
    mongo = not isinstance(store, SQLiteStore)
    settings = Settings(data_dir=tmp_path, embedder="hashing", store="mongo" if mongo else "sqlite")
    service = MemoryService(store, embedder, clock=clock, settings=settings)
    learning = LearningService(open_learning_store(store, settings), store, embedder, clock=clock)
    jobs = Jobs(store, learning, embedder, clock=clock, settings=settings)
    return service, jobs, embedder, clock


def old_memory(store, content: str, memory_id: str, project: str = "app") -> None:
    """A row as a store kept it before the current rules: written as it is (no guard)."""
    at = datetime(2025, 6, 1, tzinfo=UTC)
    vector = HashingEmbedder().embed([content])[0]
    transfer_store(store).put_memories(
        T,
        project,
        [
            MemoryRecord(
                id=memory_id,
                tenant=T,
                project=project,
                content=content,
                sha256=sha256(content),
                occurred_at=at,
                created_at=at,
                updated_at=at,
                embedding=vector,
                model=HashingEmbedder().model_id,
                meta={"tags": ["ops"]},
            )
        ],
    )


def leaky(service, store) -> dict[str, str]:
    old_memory(store, f"deploy with DATABASE_URL={DB_URL}", "a" * 32)
    old_memory(store, "the build needs node 20", "b" * 32)
    service.set_project_settings(T, "app", {"secrets_policy": "flag"})
    kept = service.store_memory(
        T, {"project": "app", "content": f"billing uses {STRIPE}", "explanation": "from the vault"}
    ).memory
    service.history.update(
        T, kept.id, {"content": "billing key rotated", "reason": f"was {STRIPE}"}, if_match=kept.sha256
    )
    gone = service.store_memory(T, {"project": "app", "content": f"old key {STRIPE}"}).memory
    service.forget(T, gone.id, {"reason": "stale"})
    service.set_project_settings(T, "app", {"secrets_policy": "redact"})
    return {"url": "a" * 32, "clean": "b" * 32, "kept": kept.id, "gone": gone.id}


def _clean(text: str | None) -> bool:
    return not text or (STRIPE not in text and "Zq8vR2kLp9xTm4Wd" not in text)


def test_the_job_redacts_memories_and_their_history_and_audits_by_kind(world, store):
    service, jobs, _, _ = world
    ids = leaky(service, store)
    before_clean = store.get(T, ids["clean"])

    report = jobs.run("redact")
    assert report.ran and report.complete
    assert report.counts["redacted"] == 2 and report.counts["versions"] == 1 and report.counts["embedded"] == 2
    assert "stripe-key" in report.explanation and "url-credential" in report.explanation

    url = store.get(T, ids["url"])
    assert url.content == "deploy with DATABASE_URL=postgresql://app:[REDACTED:url-credential]@db.internal:5432/prod"
    assert url.sha256 == sha256(url.content) and url.status == "ready" and url.meta["tags"] == ["ops"]
    assert np.allclose(url.embedding, HashingEmbedder().embed([url.content])[0])  # made from the redacted text
    assert url.meta["_guard"]["secrets"][0]["kind"] == "url-credential"
    gone = store.get(T, ids["gone"], include_forgotten=True)
    assert gone.deleted_at is not None and gone.content == "old key [REDACTED:stripe-key]"

    versions = governance_store(store).versions(T, ids["kept"], limit=10)
    assert [(v.number, v.content) for v in versions] == [(1, "billing uses [REDACTED:stripe-key]")]
    assert _clean(versions[0].reason)
    assert store.get(T, ids["kept"]).content == "billing key rotated"  # the current row held none

    clean = store.get(T, ids["clean"])  # nothing to redact: not written
    assert (clean.updated_at, clean.content, clean.status) == (before_clean.updated_at, before_clean.content, "ready")
    assert np.array_equal(clean.embedding, before_clean.embedding)
    audit = [a for a in store.audit_log(T, limit=100) if a.action == "redact"]
    assert sorted(a.memory_id for a in audit) == sorted([ids["url"], ids["kept"], ids["gone"]])
    assert all(a.actor == "guard" and _clean(a.reason) for a in audit)
    said = {a.memory_id: a.reason for a in audit}
    assert "content: url-credential" in said[ids["url"]]
    assert "version 1 content: stripe-key" in said[ids["kept"]] and "version 1 reason: stripe-key" in said[ids["kept"]]
    exported = transfer_store(store)
    assert all(_clean(r.content) for page in exported.memory_pages(T, None, page=50) for _, r in page)


def test_a_second_run_changes_nothing(world, store):
    service, jobs, _, clock = world
    leaky(service, store)
    jobs.run("redact")
    audits = len(store.audit_log(T, limit=1000))
    again = jobs.run("redact")
    assert again.complete and again.counts["scanned"] == 0 and "Nothing to do" in again.explanation
    jobs.store.save_job_state("redact", {}, at=clock())  # forced: a full sweep again
    rows = {r.id: r for page in transfer_store(store).memory_pages(T, None, page=50) for _, r in page}
    full = jobs.run("redact")
    assert full.complete and full.counts["scanned"] == 4
    assert full.counts["redacted"] == full.counts["versions"] == full.counts["embedded"] == 0
    assert len(store.audit_log(T, limit=1000)) == audits
    after = {r.id: r for page in transfer_store(store).memory_pages(T, None, page=50) for _, r in page}
    assert {i: (r.content, r.updated_at, r.sha256) for i, r in after.items()} == {
        i: (r.content, r.updated_at, r.sha256) for i, r in rows.items()
    }


def test_a_run_stopped_at_its_budget_resumes(world, store):
    service, jobs, _, _ = world
    leaky(service, store)
    first = jobs.run("redact", max_memories=1, page=1)
    assert not first.complete and first.counts["scanned"] == 1 and "next run continues" in first.explanation
    rest = [jobs.run("redact", max_memories=2, page=1) for _ in range(6)]
    assert rest[-1].complete and "Nothing to do" in rest[-1].explanation
    assert sum(r.counts["redacted"] for r in [first, *rest]) == 2
    assert all(_clean(r.content) for page in transfer_store(store).memory_pages(T, None, page=50) for _, r in page)


def test_with_the_embedder_down_they_are_left_for_the_backfill_job(world, store):
    service, jobs, embedder, _ = world
    ids = leaky(service, store)
    embedder.down = True
    report = jobs.run("redact")
    assert report.complete and report.counts["pending"] == 2 and "backfill" in report.explanation
    assert store.get(T, ids["url"]).status == "pending_embedding" and store.get(T, ids["url"]).embedding is None
    pending = store.pending_embeddings(limit=10, model=embedder.model_id)  # what the backfill job embeds
    assert ids["url"] in {r.id for r in pending}  # (a forgotten one: once restored)


def test_sealed_memories_and_versions_are_redacted_and_stay_sealed(store, tmp_path):
    from capsule.crypto import envelope
    from capsule.crypto.wrappers import LocalKeyFile
    from capsule.guard.policy import Policies
    from capsule.guard.stored import store_policies
    from capsule.jobs.guard_sweep import Sweep
    from capsule.sealing.setup import sealed

    clock = FrozenClock(datetime(2026, 3, 1, tzinfo=UTC))
    svc = MemoryService(
        sealed(store, LocalKeyFile(tmp_path / "k" / "capsule.key"), clock=clock), HashingEmbedder(), clock=clock
    )
    svc.set_project_settings(T, "app", {"secrets_policy": "flag"})  # flagged: sealed at rest
    kept = svc.store_memory(T, {"project": "app", "content": f"billing uses {STRIPE}"}).memory
    svc.history.update(T, kept.id, {"content": f"billing uses {STRIPE} (rotated)"}, if_match=kept.sha256)
    svc.set_project_settings(T, "app", {"secrets_policy": "redact"})
    assert envelope.is_sealed(store.get(T, kept.id).content)

    report = Sweep(svc.store, svc.embedder, policies=store_policies(svc.store, Policies()), clock=clock).run(
        {}, max_memories=100, page=10
    )
    assert report.complete and report.counts["redacted"] == 1 and report.counts["versions"] == 1
    assert envelope.is_sealed(store.get(T, kept.id).content)  # still sealed at rest
    assert svc.get(T, kept.id).memory.content == "billing uses [REDACTED:stripe-key] (rotated)"
    assert [v.content for v in svc.history.history(T, kept.id).versions] == [
        "billing uses [REDACTED:stripe-key]",
        "billing uses [REDACTED:stripe-key] (rotated)",
    ]
    assert envelope.is_sealed(governance_store(store).versions(T, kept.id, limit=5)[0].content)
    assert (
        Sweep(svc.store, svc.embedder, policies=store_policies(svc.store, Policies()), clock=clock)
        .run({}, max_memories=100, page=10)
        .counts["redacted"]
        == 0
    )  # idempotent
