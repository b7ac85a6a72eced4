"""The TransferStore contract (capsule.store.transfer), run against every backend in conftest.BACKENDS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.errors import InvalidInput
from capsule.core.learning_records import ApplicationRecord, LinkRecord
from capsule.core.records import AuditRecord, Filters, MemoryRecord
from capsule.store.sides import transfer_store
from capsule.store.transfer import EvidenceRow, FeedbackRow, TransferStore

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def rec(n: int, *, tenant: str = "t1", project: str = "p", forgotten: bool = False) -> MemoryRecord:
    at = T0 + timedelta(minutes=n)
    return MemoryRecord(
        id=f"x{n:06d}",
        tenant=tenant,
        project=project,
        content=f"content {n}",
        sha256=f"{n:064x}",
        occurred_at=at,
        created_at=at,
        updated_at=at,
        embedding=np.full(4, 0.5, dtype=np.float32),
        model="test-4",
        helpful=n % 3,
        unhelpful=1,
        pinned=n % 2 == 0,
        meta={"n": n},
        accessed_at=at + timedelta(hours=1),
        deleted_at=at + timedelta(days=1) if forgotten else None,
        deleted_reason="forgotten" if forgotten else None,
    )


@pytest.fixture
def transfer(store) -> TransferStore:
    return transfer_store(store)


def test_backend_implements_the_protocol(transfer):
    assert isinstance(transfer, TransferStore)


def test_memories_go_in_as_they_are_and_come_out_in_pages(store, transfer):
    records = [rec(n, forgotten=n == 3) for n in range(7)]
    transfer.put_memories("t1", "p", records[:4])
    transfer.put_memories("t1", "p", records[4:])
    transfer.put_memories("t2", "p", [rec(99, tenant="t2")])
    pages = list(transfer.memory_pages("t1", None, page=3))
    assert [len(p) for p in pages] == [3, 3, 1]
    got = [record for page in pages for _, record in page]
    assert [r.id for r in got] == [r.id for r in records]
    for want, have in zip(records, got):
        assert (have.pinned, have.helpful, have.unhelpful, have.meta) == (
            want.pinned,
            want.helpful,
            want.unhelpful,
            want.meta,
        )
        assert (have.accessed_at, have.deleted_at, have.deleted_reason) == (
            want.accessed_at,
            want.deleted_at,
            want.deleted_reason,
        )
        assert np.array_equal(have.embedding, want.embedding) and have.model == "test-4"
    # resumed just past a page's last key
    after = pages[0][-1][0]
    assert [r.id for _, r in next(transfer.memory_pages("t1", "p", page=10, after=after))] == [
        r.id for r in records[3:]
    ]
    # forgotten stays forgotten; the others are found, and the writes moved the project's version
    active = {r.id for r in store.candidates("t1", ["p"], Filters())}
    assert active == {r.id for r in records if r.deleted_at is None}
    assert store.change_markers("t1", ["p"])["p"] >= 2
    assert store.changes_since("t1", "p", 0).reset


def test_a_key_not_made_by_the_store_is_invalid_input(transfer):
    with pytest.raises(InvalidInput):
        next(transfer.memory_pages("t1", None, page=3, after="not a key"))


def test_lookups_by_id_and_content(transfer):
    transfer.put_memories("t1", "p", [rec(1), rec(2, forgotten=True)])
    assert transfer.existing_memories("t1", ["x000001", "x000002", "nope"]) == {"x000001": True, "x000002": True}
    assert transfer.existing_content("t1", "p", [f"{1:064x}", f"{2:064x}"]) == {f"{1:064x}"}  # active only
    assert transfer.existing_content("t1", "other", [f"{1:064x}"]) == set()


def test_feedback_and_audit_are_kept_once(transfer):
    transfer.put_memories("t1", "p", [rec(1)])
    votes = [
        FeedbackRow("x000001", True, "ok", T0),
        FeedbackRow("x000001", False, None, T0),
        FeedbackRow("unknown", True, None, T0),
    ]
    first = transfer.put_feedback("t1", votes)
    assert (first.written, first.present, sorted(first.refused)) == (2, 0, [2])
    assert "memory_id" in first.refused[2]
    again = transfer.put_feedback("t1", votes[:2])
    assert (again.written, again.present) == (0, 2)
    assert sorted(v.helpful for v in transfer.feedback_of("t1", ["x000001"])) == [False, True]
    assert transfer.feedback_of("t2", ["x000001"]) == []
    audit = [
        AuditRecord("t1", "x000001", "p", "pin", "me", "asked", T0),
        AuditRecord("t1", "gone", "q", "purge", "retention", "old", T0),
    ]
    assert transfer.put_audit("t1", audit).written == 2 and transfer.put_audit("t1", audit).present == 2
    assert [a.project for page in transfer.audit_pages("t1", "q", page=10) for _, a in page] == ["q"]


def test_applications_links_and_evidence_are_kept_once(transfer):
    apps = [ApplicationRecord("a1", "t1", "s1", True, T0, project="p"), ApplicationRecord("a2", "t1", "s1", False, T0)]
    assert transfer.put_applications("t1", apps).written == 2
    assert transfer.put_applications("t1", apps).present == 2
    assert {a.id for page in transfer.application_pages("t1", page=1) for _, a in page} == {"a1", "a2"}
    link = LinkRecord("t1", "redis-enotfound", "runtime", "solution", "s1", success=4, failure=1, last_at=T0)
    assert transfer.put_link(link) and not transfer.put_link(link)
    evidence = [EvidenceRow("redis-enotfound", "runtime", "solution", "s1", "memory:x1")]
    assert transfer.put_evidence("t1", evidence).written == 1 and transfer.put_evidence("t1", evidence).present == 1
    assert [e for page in transfer.evidence_pages("t1", page=10) for _, e in page] == evidence
