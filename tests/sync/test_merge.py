"""The sync conflict rule (capsule.sync.merge), as a pure function."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from capsule.core.records import MemoryRecord
from capsule.sync.merge import generic_fields, merge

T0 = datetime(2026, 3, 1, tzinfo=UTC)
VEC = np.ones(4, dtype=np.float32) / 2


def rec(**changes) -> MemoryRecord:
    base = MemoryRecord(
        id="m1",
        tenant="t",
        project="p",
        content="use WAL",
        sha256="a" * 64,
        occurred_at=T0,
        created_at=T0,
        updated_at=T0,
        embedding=VEC,
        model="hashing-v1-384",
    )
    return replace(base, **changes)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_a_new_memory_is_taken_as_it_came():
    assert merge(None, rec(), kept_changed=False, own_model="hashing-v1-384").record == rec()


def test_the_same_row_writes_nothing():
    out = merge(rec(), rec(), kept_changed=True, own_model="hashing-v1-384")
    assert out.record is None and not out.conflict


def test_latest_change_wins_per_field_and_counters_take_the_larger():
    kept = rec(pinned=True, updated_at=at(5), helpful=3)
    arrived = rec(explanation="why", meta={"tags": ["db"]}, updated_at=at(9), helpful=1, unhelpful=2)
    out = merge(kept, arrived, kept_changed=True, own_model="hashing-v1-384")
    assert out.record.pinned is False and out.record.meta == {"tags": ["db"]}  # the later row's values
    assert (out.record.helpful, out.record.unhelpful, out.record.updated_at) == (3, 2, at(9))
    assert out.winners["pinned"] == "arrived" and out.conflict


def test_a_difference_is_a_conflict_only_when_both_sides_changed():
    out = merge(rec(updated_at=at(1)), rec(pinned=True, updated_at=at(2)), kept_changed=False, own_model=None)
    assert out.record.pinned and not out.conflict


def test_a_forget_wins_over_an_older_edit_and_loses_to_a_newer_one():
    forgotten = rec(deleted_at=at(10), deleted_reason="stale", updated_at=at(10))
    older_edit = rec(pinned=True, updated_at=at(5))
    out = merge(older_edit, forgotten, kept_changed=True, own_model=None)
    assert out.record.deleted_at == at(10) and out.winners["deleted_at"] == "arrived"
    newer_edit = rec(pinned=True, updated_at=at(15))  # a restore (or an edit) after the forget
    assert merge(forgotten, newer_edit, kept_changed=True, own_model=None).record.deleted_at is None


def test_ties_are_broken_the_same_way_on_both_sides():
    a, b = rec(pinned=True), rec(explanation="x")
    on_a = merge(a, b, kept_changed=True, own_model=None).record or a  # None: the kept row stays
    on_b = merge(b, a, kept_changed=True, own_model=None).record or b
    assert on_a == on_b


def test_vectors_of_another_model_are_left_to_the_receivers_backfill():
    out = merge(None, rec(), kept_changed=False, own_model="minilm")
    assert (out.record.embedding, out.record.model, out.record.status) == (None, None, "pending_embedding")
    changed = rec(content="use WAL mode", sha256="b" * 64, updated_at=at(3))
    out = merge(rec(), changed, kept_changed=False, own_model="minilm")
    assert out.record.status == "pending_embedding" and out.record.embedding is None
    kept = merge(
        rec(),
        rec(pinned=True, updated_at=at(1), embedding=None, model=None, status="pending_embedding"),
        kept_changed=False,
        own_model="hashing-v1-384",
    )
    assert kept.record.embedding is VEC  # the content is the same: its vector stays


def test_fields_added_to_the_record_later_are_merged_by_the_same_rule():
    assert {"pinned", "meta", "explanation", "content", "path"} <= set(generic_fields())


def test_visibility_and_subject_are_merged_fields_the_latest_change_wins():
    assert {"visibility", "subject"} <= set(generic_fields())
    kept = rec(visibility="private", updated_at=at(1))
    came = rec(visibility="shared", subject="alice", updated_at=at(2))
    merged = merge(kept, came, kept_changed=False, own_model="hashing-v1-384").record
    assert (merged.visibility, merged.subject) == ("shared", "alice")
