"""The conflict rule of sync, as a pure function of the two rows of one memory.

Each side keeps one row per memory, with ``updated_at`` (its last change). When the row
that arrives differs from the one kept:

* **latest change wins per field**: for every field that differs, the value of the row
  changed last (ties: the row whose values sort higher, so both sides pick the same);
* **counters** (``helpful``, ``unhelpful``) take the larger count and ``accessed_at`` the
  later time (votes are only ever added; the votes themselves travel beside the row);
* **a forget wins over an older edit**: a row forgotten at ``D`` stays forgotten against
  a row last changed at or before ``D``; a row changed after ``D`` (a restore, or an edit
  made after the forget) brings the memory back;
* **vectors** are kept when the content they embed is kept; a vector that arrives is
  taken only when the receiver embeds with the same model, else the row waits as
  ``pending_embedding`` for the receiver's backfill.

Fields added to :class:`~capsule.core.records.MemoryRecord` later (retention classes, ...) fall
under the first rule without changes here. A difference is reported as a conflict when the
receiver's row had changed since the two sides last met (both sides changed it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from ..core.records import MemoryRecord

FIXED = frozenset({"id", "tenant", "project", "created_at"})  # a memory's identity: never merged
SPECIAL = frozenset(
    {
        "helpful",
        "unhelpful",
        "accessed_at",
        "updated_at",
        "deleted_at",
        "deleted_reason",
        "embedding",
        "model",
        "status",
    }
)
QUIET = frozenset({"accessed_at", "updated_at", "helpful", "unhelpful"})  # merged without a conflict


def generic_fields() -> list[str]:
    """The fields merged by "latest change wins": every field of the record but the special ones."""
    return [f.name for f in fields(MemoryRecord) if f.name not in FIXED | SPECIAL]


@dataclass
class Merged:
    record: MemoryRecord | None  # None: nothing to write (the kept row already says it all)
    winners: dict[str, str] = field(default_factory=dict)  # field -> "kept" | "arrived", where they differed
    conflict: bool = False


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _fingerprint(record: MemoryRecord) -> str:
    values = {name: _plain(getattr(record, name)) for name in generic_fields()}
    values["deleted_at"] = _plain(record.deleted_at)
    return json.dumps(values, sort_keys=True, default=str)


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return a if b is None or (a is not None and a >= b) else b


def _newer(kept: MemoryRecord, arrived: MemoryRecord) -> str:
    """Which row changed last: "kept" or "arrived"."""
    if arrived.updated_at != kept.updated_at:
        return "arrived" if arrived.updated_at > kept.updated_at else "kept"
    return "arrived" if _fingerprint(arrived) > _fingerprint(kept) else "kept"


def _forget_winner(kept: MemoryRecord, arrived: MemoryRecord, newer: str) -> str:
    if (kept.deleted_at is None) == (arrived.deleted_at is None):
        return newer
    forgotten, active = ("kept", arrived) if kept.deleted_at is not None else ("arrived", kept)
    at = kept.deleted_at if forgotten == "kept" else arrived.deleted_at
    return forgotten if at >= active.updated_at else ("arrived" if forgotten == "kept" else "kept")  # type: ignore[operator]


def _vector(merged: MemoryRecord, kept: MemoryRecord, arrived: MemoryRecord, own_model: str | None) -> None:
    """The vector of the merged row: the kept one while its content stays, else the arrived one
    when made by the receiver's model, else none (the backfill embeds it)."""
    same_text = merged.content == kept.content
    if same_text and kept.embedding is not None and kept.model == own_model:
        merged.embedding, merged.model, merged.status = kept.embedding, kept.model, kept.status
    elif merged.content == arrived.content and arrived.embedding is not None and arrived.model == own_model:
        merged.embedding, merged.model, merged.status = arrived.embedding, arrived.model, "ready"
    elif same_text and kept.embedding is not None:
        merged.embedding, merged.model, merged.status = kept.embedding, kept.model, kept.status
    else:
        merged.embedding, merged.model, merged.status = None, None, "pending_embedding"


def arriving(arrived: MemoryRecord, own_model: str | None) -> MemoryRecord:
    """A memory new to the receiver: as it came, its vector kept only when of the receiver's model."""
    if arrived.embedding is not None and arrived.model == own_model:
        return arrived
    return replace(arrived, embedding=None, model=None, status="pending_embedding")


def _same(a: MemoryRecord, b: MemoryRecord) -> bool:
    for f in fields(MemoryRecord):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "embedding":
            if (x is None) != (y is None) or (x is not None and (x.shape != y.shape or not (x == y).all())):
                return False
        elif x != y:
            return False
    return True


def merge(kept: MemoryRecord | None, arrived: MemoryRecord, *, kept_changed: bool, own_model: str | None) -> Merged:
    """The row to write for one memory (None when the kept row needs no change), and who won where."""
    if kept is None:
        return Merged(arriving(arrived, own_model))
    newer = _newer(kept, arrived)
    source = {"kept": kept, "arrived": arrived}
    merged = replace(kept)
    winners: dict[str, str] = {}
    for name in generic_fields():
        if getattr(kept, name) != getattr(arrived, name):
            setattr(merged, name, getattr(source[newer], name))
            winners[name] = newer
    forget = _forget_winner(kept, arrived, newer)
    if kept.deleted_at != arrived.deleted_at or kept.deleted_reason != arrived.deleted_reason:
        merged.deleted_at, merged.deleted_reason = source[forget].deleted_at, source[forget].deleted_reason
        winners["deleted_at"] = forget
    merged.helpful, merged.unhelpful = max(kept.helpful, arrived.helpful), max(kept.unhelpful, arrived.unhelpful)
    merged.accessed_at = _later(kept.accessed_at, arrived.accessed_at)
    merged.updated_at = max(kept.updated_at, arrived.updated_at)
    _vector(merged, kept, arrived, own_model)
    conflict = kept_changed and any(name not in QUIET for name in winners)
    return Merged(None if _same(merged, kept) else merged, winners, conflict=conflict)
