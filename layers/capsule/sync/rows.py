"""What travels for one memory: its row in the export format (:mod:`capsule.transfer.format`),
the record's other fields generically (fields a newer Capsule added, e.g. retention classes),
and its votes as export feedback rows."""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import datetime
from typing import Any

from ..core.errors import InvalidInput
from ..core.records import MemoryRecord
from ..store.transfer import FeedbackRow
from ..transfer import format as fmt
from ..transfer.export import feedback_row, memory_row
from ..transfer.importer import memory_record

EXPORTED = frozenset(
    {
        "id",
        "tenant",
        "project",
        "content",
        "sha256",
        "path",
        "chunk_index",
        "chunk_count",
        "embedding",
        "model",
        "status",
        "pinned",
        "explanation",
        "meta",
        "helpful",
        "unhelpful",
        "occurred_at",
        "created_at",
        "updated_at",
        "accessed_at",
        "deleted_at",
        "deleted_reason",
    }
)
_TIME = "$time"


def _out(value: Any) -> Any:
    return {_TIME: value.isoformat()} if isinstance(value, datetime) else value


def _plain(value: Any) -> Any:
    """A field's value as the export row writes it (a time as its ISO text)."""
    if isinstance(value, dict) and set(value) == {_TIME}:
        return value[_TIME]
    return value


def other_fields(record: MemoryRecord) -> dict[str, Any]:
    """The record's fields the export row does not carry, JSON-ready."""
    return {f.name: _out(getattr(record, f.name)) for f in fields(MemoryRecord) if f.name not in EXPORTED}


def to_item(record: MemoryRecord, votes: list[FeedbackRow]) -> dict[str, Any]:
    return {"memory": memory_row(record), "fields": other_fields(record), "votes": [feedback_row(v) for v in votes]}


def _parsed(row: Any, kind: type, where: str) -> Any:
    try:
        parsed = fmt.parse_row(json.dumps(row))
    except fmt.BadRow as bad:
        raise InvalidInput(f"{where}.{bad.field}: {bad.message}", field=f"{where}.{bad.field}") from None
    if not isinstance(parsed, kind):
        raise InvalidInput(f"{where}.kind: must be '{kind.__name__.lower()}'", field=f"{where}.kind")
    return parsed


def from_item(
    tenant: str, project: str, item: dict[str, Any], where: str
) -> tuple[MemoryRecord, list[FeedbackRow], list[str]]:
    """The record and votes of one item, and the names of fields this side does not know."""
    row = _parsed(item["memory"], fmt.Memory, f"{where}.memory")
    if row.project != project:
        raise InvalidInput(
            f"{where}.memory.project: the memory belongs to '{row.project}', not '{project}'",
            field=f"{where}.memory.project",
        )
    known = {f.name for f in fields(MemoryRecord)} - EXPORTED
    given = item.get("fields") or {}
    unknown = sorted(set(given) - known)
    carried = {name: _plain(value) for name, value in given.items() if name in known}
    if carried:
        # Checked as the row's own fields (each is one of the export row's): set unchecked, a value of
        # the wrong type was stored and every read of the project answered 500 from then on.
        row = _parsed({**item["memory"], **carried}, fmt.Memory, f"{where}.fields")
    record = memory_record(tenant, row)
    votes = []
    for n, vote in enumerate(item.get("votes") or []):
        parsed = _parsed(vote, fmt.Feedback, f"{where}.votes[{n}]")
        if parsed.memory_id != record.id:
            raise InvalidInput(
                f"{where}.votes[{n}].memory_id: a vote of another memory", field=f"{where}.votes[{n}].memory_id"
            )
        votes.append(FeedbackRow(parsed.memory_id, parsed.helpful, parsed.context, parsed.at))
    return record, votes, unknown
