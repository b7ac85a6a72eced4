"""The capture queue's contract (capsule.store.capture) on SQLite and MongoDB (mongomock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capsule.core.errors import Conflict, NotFound
from capsule.store.capture import CandidateRecord
from capsule.store.sides import candidate_store

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "mongomock"])
def queue(request, tmp_path, backends):
    for store in backends[request.param](tmp_path):
        yield candidate_store(store)


def rec(n: int, *, tenant: str = "t1", project: str = "p", key: str | None = None) -> CandidateRecord:
    return CandidateRecord(
        id=f"{n:032x}",
        tenant=tenant,
        project=project,
        key=key or f"k{n}",
        text=f"text {n}",
        score=0.5 + n / 100,
        reason="states a decision",
        kind="decision",
        tags=["decision"],
        created_at=T0 + timedelta(seconds=n),
        role="assistant",
        session="s1",
        occurred_at=T0,
    )


def test_add_keeps_one_candidate_per_key_in_any_status(queue):
    assert queue.add([rec(1), rec(2)]) == {}
    assert queue.add([rec(3, key="k1")]) == {"k1": "pending"}
    queue.decide("t1", rec(2).id, "rejected", at=T0, note="noise")
    assert queue.add([rec(4, key="k2")]) == {"k2": "rejected"}
    assert queue.statuses("t1", "p", ["k1", "k2", "k9"]) == {"k1": "pending", "k2": "rejected"}
    assert queue.add([rec(5, key="k1", project="other")]) == {}  # keys are per project


def test_get_round_trips_every_field_and_is_tenant_scoped(queue):
    queue.add([rec(1)])
    got = queue.get("t1", rec(1).id)
    assert (got.text, got.score, got.kind, got.tags, got.session, got.occurred_at, got.created_at, got.status) == (
        "text 1",
        0.51,
        "decision",
        ["decision"],
        "s1",
        T0,
        T0 + timedelta(seconds=1),
        "pending",
    )
    with pytest.raises(NotFound):
        queue.get("t2", rec(1).id)


def test_decide_is_compare_and_set(queue):
    queue.add([rec(1)])
    done = queue.decide("t1", rec(1).id, "approved", at=T0, text="edited text")
    assert (done.status, done.text, done.decided_at) == ("approved", "edited text", T0)
    with pytest.raises(Conflict):
        queue.decide("t1", rec(1).id, "approved", at=T0)
    with pytest.raises(Conflict):
        queue.decide("t1", rec(1).id, "rejected", at=T0)
    with pytest.raises(NotFound):
        queue.decide("t1", "f" * 32, "approved", at=T0)
    assert queue.link("t1", rec(1).id, "m1").memory_id == "m1"
    queue.undo("t1", rec(1).id)
    assert queue.get("t1", rec(1).id).status == "pending"


def test_list_newest_first_by_status_and_project_with_a_cursor(queue):
    queue.add([rec(n) for n in range(1, 6)] + [rec(9, project="q"), rec(8, tenant="t2")])
    queue.decide("t1", rec(3).id, "rejected", at=T0)
    pending = queue.list("t1", "p", "pending", before=None, limit=10)
    assert [r.id for r in pending] == [rec(n).id for n in (5, 4, 2, 1)]
    first = queue.list("t1", None, None, before=None, limit=2)
    assert [r.id for r in first] == [rec(9).id, rec(5).id]
    rest = queue.list("t1", None, None, before=(first[-1].created_at, first[-1].id), limit=10)
    assert [r.id for r in rest] == [rec(n).id for n in (4, 3, 2, 1)]


def test_threshold_per_project(queue):
    assert queue.threshold("t1", "p") is None
    queue.set_threshold("t1", "p", 0.7, at=T0)
    queue.set_threshold("t1", "p", 0.9, at=T0)
    assert (queue.threshold("t1", "p"), queue.threshold("t1", "q"), queue.threshold("t2", "p")) == (0.9, None, None)
