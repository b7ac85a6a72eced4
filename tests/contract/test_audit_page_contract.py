"""The audit log by page (``MemoryStore.audit_page``, GET /v1/audit), run against every backend:
newest first by (at, key), every filter alone and together, pages that neither repeat nor skip
a record (ties in ``at`` included), and nothing of another tenant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.records import MemoryRecord

T0 = datetime(2026, 4, 1, tzinfo=UTC)


def _rec(mid: str, tenant: str, project: str) -> MemoryRecord:
    return MemoryRecord(
        id=mid,
        tenant=tenant,
        project=project,
        content=f"content of {mid}",
        sha256=f"sha-{mid}",
        occurred_at=T0,
        created_at=T0,
        updated_at=T0,
        embedding=np.full(4, 0.5, dtype=np.float32),
        model="test-4",
    )


# (minute, memory, action): minutes 3 and 3 tie, as do 7, 7 and 7.
ACTIONS = [
    (1, "a", "pin"),
    (2, "b", "pin"),
    (3, "a", "unpin"),
    (3, "c", "pin"),
    (4, "b", "unpin"),
    (5, "c", "unpin"),
    (6, "a", "forget"),
    (7, "a", "restore"),
    (7, "b", "forget"),
    (7, "c", "forget"),
]
PROJECT = {"a": "p", "b": "p", "c": "q"}


@pytest.fixture
def audited(store):
    for tenant in ("t1", "t2"):
        for mid, project in PROJECT.items():
            store.insert([_rec(mid, tenant, project)], limit=1000, dedupe_after=None, actor="seed")
    for minute, mid, action in ACTIONS:
        at = T0 + timedelta(minutes=minute)
        for tenant in ("t1", "t2"):
            if action in ("pin", "unpin"):
                store.set_pinned(tenant, mid, action == "pin", at=at, actor=f"{tenant}-actor")
            elif action == "forget":
                store.forget(tenant, mid, at=at, actor=f"{tenant}-actor", reason=f"why {mid}")
            else:
                store.restore(tenant, mid, at=at, actor=f"{tenant}-actor")
    return store


def _walk(store, limit: int, **filters) -> list:
    seen, before = [], None
    for _ in range(100):
        page = store.audit_page("t1", before=before, limit=limit, **filters)
        assert len(page) <= limit
        seen += page
        if len(page) < limit:
            return seen
        before = page[-1][0]
    raise AssertionError("the pages never end")


def _minutes(rows) -> list[int]:
    return [int((r.at - T0).total_seconds() // 60) for _, r in rows]


def test_the_whole_log_newest_first_with_positions(audited):
    rows = audited.audit_page("t1", limit=100)
    assert len(rows) == len(ACTIONS)
    assert _minutes(rows) == sorted(_minutes(rows), reverse=True)
    assert {(r.memory_id, r.action) for _, r in rows} == {(m, a) for _, m, a in ACTIONS}
    assert all(r.tenant == "t1" and r.actor == "t1-actor" for _, r in rows)
    assert all(r.project == PROJECT[r.memory_id] for _, r in rows)
    positions = [p for p, _ in rows]
    assert len(set(positions)) == len(positions)
    assert positions == sorted(positions, key=lambda p: (p[0], _key(p[1])), reverse=True)
    forgot = next(r for _, r in rows if r.memory_id == "b" and r.action == "forget")
    assert forgot.reason == "why b"


def _key(key: str):
    return int(key) if key.isdigit() else key


@pytest.mark.parametrize("limit", [1, 2, 3, 4])
def test_pages_neither_repeat_nor_skip_even_across_ties(audited, limit):
    whole = audited.audit_page("t1", limit=100)
    walked = _walk(audited, limit)
    assert [p for p, _ in walked] == [p for p, _ in whole]


@pytest.mark.parametrize(
    "filters",
    [
        {"project": "p"},
        {"project": "q"},
        {"memory_id": "a"},
        {"action": "forget"},
        {"project": "p", "action": "pin"},
        {"memory_id": "a", "action": "unpin"},
        {"memory_id": "a", "project": "p"},
        {"memory_id": "c", "project": "p"},  # c is in q: nothing
        {"since": T0 + timedelta(minutes=3)},
        {"until": T0 + timedelta(minutes=3)},
        {"since": T0 + timedelta(minutes=3), "until": T0 + timedelta(minutes=7), "project": "p"},
        {"since": T0 + timedelta(minutes=7), "action": "forget"},
        {"memory_id": "a", "since": T0 + timedelta(minutes=2), "action": "restore"},
    ],
    ids=lambda f: ",".join(sorted(f)),
)
def test_each_filter_alone_and_together_with_pages(audited, filters):
    def wanted(minute: int, mid: str, action: str) -> bool:
        at = T0 + timedelta(minutes=minute)
        return (
            filters.get("project", PROJECT[mid]) == PROJECT[mid]
            and filters.get("memory_id", mid) == mid
            and filters.get("action", action) == action
            and at >= filters.get("since", at)
            and ("until" not in filters or at < filters["until"])
        )

    expected = sorted(((m, mid, a) for m, mid, a in ACTIONS if wanted(m, mid, a)), key=lambda x: -x[0])
    for limit in (1, 2, 100):
        got = _walk(audited, limit, **filters)
        assert sorted((r.memory_id, r.action) for _, r in got) == sorted((mid, a) for _, mid, a in expected)
        assert _minutes(got) == [m for m, _, _ in expected]


def test_no_record_of_another_tenant_and_none_of_a_tenant_without_any(audited):
    assert all(r.tenant == "t2" for _, r in audited.audit_page("t2", limit=100))
    assert audited.audit_page("t3", limit=100) == []
    assert audited.audit_page("t1", memory_id="no-such-memory", limit=10) == []
