"""The tenant's audit log by page (GET /v1/audit): filtered by project, memory, action and time,
newest first, a page at a time from the store's index ranges (:meth:`MemoryStore.audit_page`).

A principal limited in reach sees the records ``keep`` admits (:func:`capsule.authz.audit_keep`):
the page is read on until it holds ``limit`` of them, at most :data:`MAX_SCANNED` records a
call, so a page may hold fewer than ``limit`` and still name a cursor: follow ``next_cursor``
until it is null. A page also ends where its bytes, as Lambda sends them, fill the budget
(:mod:`capsule.core.wire`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..core import limits, wire
from ..core.cursor import decode_cursor
from ..core.records import AuditRecord

MAX_SCANNED = 1000  # records read for one page of a limited principal, at most


class AuditEntry(BaseModel):
    memory_id: str
    project: str
    action: str = Field(description="forget, restore, evict, pin, unpin, purge, merge, or a governance action")
    actor: str = Field(description="Who did it (the tenant, a key, a job)")
    reason: str
    at: datetime


class AuditPage(BaseModel):
    records: list[AuditEntry]
    next_cursor: str | None = Field(None, description="The cursor of the next page; null: no more")
    explanation: str


def encode_position(position: tuple[float, str]) -> str:
    """A position as the list's cursors are written (``models.CURSOR_PATTERN``)."""
    at, key = position
    return f"{max(at, 0.0):.6f}~{key.encode('utf-8').hex()}"


def audit_page(
    store: Any,
    tenant: str,
    *,
    project: str | None = None,
    memory_id: str | None = None,
    action: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int = limits.DEFAULT_PAGE,
    keep: Callable[[AuditRecord], bool] | None = None,
) -> AuditPage:
    filters: dict[str, Any] = {
        "project": project,
        "memory_id": memory_id,
        "action": action,
        "since": since,
        "until": until,
    }
    position = decode_cursor(cursor) if cursor else None
    kept: list[tuple[tuple[float, str], AuditRecord]] = []
    scanned, exhausted = 0, False
    batch = limit + 1 if keep is None else max(limit + 1, 100)
    while len(kept) <= limit and scanned < MAX_SCANNED:
        rows = store.audit_page(tenant, before=position, limit=batch, **filters)
        for where, record in rows:
            position, scanned = where, scanned + 1
            if keep is None or keep(record):
                kept.append((where, record))
                if len(kept) > limit:
                    break
        if len(rows) < batch:
            exhausted = True
            break
        if keep is None:
            break
    if len(kept) > limit:
        page, next_at = kept[:limit], kept[limit - 1][0]
    elif exhausted:
        page, next_at = kept, None
    else:  # read as far as one call may: the page goes on from the last record read
        page, next_at = kept, position
    entries = [_entry(r) for _, r in page]
    fits = wire.fitting(wire.wrapped_json_bytes(e.model_dump_json()) for e in entries)
    if fits < len(entries):
        page, entries = page[:fits], entries[:fits]
        next_at = page[-1][0]
    said = [name for name, value in filters.items() if value is not None]
    return AuditPage(
        records=entries,
        next_cursor=encode_position(next_at) if next_at is not None else None,
        explanation=f"{len(entries)} audit {'record' if len(entries) == 1 else 'records'}"
        + (f" (filtered by {', '.join(said)})" if said else " of the tenant")
        + ", newest first"
        + ("; more follow the cursor." if next_at is not None else "."),
    )


def _entry(record: AuditRecord) -> AuditEntry:
    return AuditEntry(
        memory_id=record.memory_id,
        project=record.project,
        action=record.action,
        actor=record.actor,
        reason=record.reason,
        at=record.at,
    )
