"""Export a tenant (or one project) as the JSON Lines of :mod:`capsule.transfer.format`.

A generator of lines: memories are read a page at a time from the store's keyset, so an
export of any size holds one page in memory. Each row is built as a plain dict (no model
per row) in a fixed key order, so exporting the same data twice gives the same lines
(the header's ``exported_at`` aside).
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core import limits
from ..core.clock import Clock, system_clock, to_epoch
from ..core.errors import InvalidInput, NotFound
from ..core.learning_records import ApplicationRecord, LinkRecord, PatternRecord, SolutionRecord
from ..core.records import AuditRecord, MemoryRecord
from ..store.base import MemoryStore
from ..store.governance import VersionRecord
from ..store.learning import LearningStore
from ..store.transfer import EvidenceRow, FeedbackRow, TransferStore
from . import format as fmt

PAGE = 500
_ALL = 1 << 31  # patterns and links are few per tenant (one per error cluster): read at once


@dataclass(frozen=True)
class Sources:
    """The stores of one deployment: an export reads them, an import writes them."""

    memories: MemoryStore
    learning: LearningStore
    transfer: TransferStore
    governance: Any = None  # capsule.store.governance.GovernanceStore; None: the memory store's own
    # (tenant, project) -> capsule.guard.Policies an import applies (the service's guard_policies);
    # None: the project's own settings in the store over the defaults (capsule.guard.stored).
    policies: Any = None

    @property
    def versions(self) -> Any:
        if self.governance is None:
            from ..store.sides import governance_store

            object.__setattr__(self, "governance", governance_store(self.memories))
        return self.governance


def memory_row(r: MemoryRecord) -> dict[str, Any]:
    vector, dims = fmt.encode_vector(r.embedding)
    purge = None if r.deleted_at is None else r.deleted_at + timedelta(days=limits.FORGET_RECOVERABLE_DAYS)
    return {
        "kind": "memory",
        "id": r.id,
        "project": r.project,
        "content": r.content,
        "sha256": r.sha256,
        "path": r.path,
        "chunk_index": r.chunk_index,
        "chunk_count": r.chunk_count,
        "embedding": vector,
        "dims": dims,
        "model": r.model,
        "status": r.status,
        "pinned": r.pinned,
        "explanation": r.explanation,
        "meta": r.meta,
        "helpful": r.helpful,
        "unhelpful": r.unhelpful,
        "occurred_at": fmt.when(r.occurred_at),
        "created_at": fmt.when(r.created_at),
        "updated_at": fmt.when(r.updated_at),
        "accessed_at": fmt.when(r.accessed_at),
        "deleted_at": fmt.when(r.deleted_at),
        "deleted_reason": r.deleted_reason,
        "purge_after": fmt.when(purge),
        "retention": r.retention or "auto",
        "expires_at": fmt.when(r.expires_at),
        "supersedes": r.supersedes,
        "superseded_by": r.superseded_by,
        "visibility": r.visibility or "private",
        "subject": r.subject,
    }


def version_row(v: VersionRecord) -> dict[str, Any]:
    return {
        "kind": "version",
        "memory_id": v.memory_id,
        "number": v.number,
        "project": v.project,
        "content": v.content,
        "sha256": v.sha256,
        "path": v.path,
        "explanation": v.explanation,
        "meta": v.meta,
        "retention": v.retention,
        "expires_at": fmt.when(v.expires_at),
        "pinned": v.pinned,
        "created_at": fmt.when(v.created_at),
        "replaced_at": fmt.when(v.replaced_at),
        "actor": v.actor,
        "reason": v.reason,
    }


def feedback_row(f: FeedbackRow) -> dict[str, Any]:
    return {
        "kind": "feedback",
        "memory_id": f.memory_id,
        "helpful": f.helpful,
        "context": f.context,
        "at": fmt.when(f.at),
    }


def audit_row(a: AuditRecord) -> dict[str, Any]:
    return {
        "kind": "audit",
        "memory_id": a.memory_id,
        "project": a.project,
        "action": a.action,
        "actor": a.actor,
        "reason": a.reason,
        "at": fmt.when(a.at),
    }


def solution_row(s: SolutionRecord) -> dict[str, Any]:
    vectors, dims = fmt.encode_vector(s.embeddings)
    return {
        "kind": "solution",
        "id": s.id,
        "title": s.title,
        "category": s.category,
        "body": s.body,
        "success": s.success,
        "failure": s.failure,
        "embeddings": vectors,
        "signatures": 0 if s.embeddings is None else len(s.embeddings),
        "dims": dims,
        "model": s.model,
        "created_at": fmt.when(s.created_at),
        "updated_at": fmt.when(s.updated_at),
        "last_applied_at": fmt.when(s.last_applied_at),
        "verified_on": fmt.when(s.verified_on),
    }


def application_row(a: ApplicationRecord) -> dict[str, Any]:
    return {
        "kind": "application",
        "id": a.id,
        "solution_id": a.solution_id,
        "success": a.success,
        "project": a.project,
        "error": a.error,
        "context": a.context,
        "at": fmt.when(a.at),
    }


def pattern_row(p: PatternRecord) -> dict[str, Any]:
    vector, dims = fmt.encode_vector(p.embedding)
    return {
        "kind": "pattern",
        "tag": p.tag,
        "category": p.category,
        "terms": p.terms,
        "occurrences": p.occurrences,
        "projects": p.projects,
        "examples": p.examples,
        "description": p.description,
        "embedding": vector,
        "dims": dims,
        "model": p.model,
        "first_seen": fmt.when(p.first_seen),
        "last_seen": fmt.when(p.last_seen),
        "created_at": fmt.when(p.created_at),
        "updated_at": fmt.when(p.updated_at),
    }


def link_row(link: LinkRecord) -> dict[str, Any]:
    return {
        "kind": "link",
        "tag": link.tag,
        "category": link.category,
        "target_kind": link.kind,
        "target_id": link.target_id,
        "success": link.success,
        "failure": link.failure,
        "last_at": fmt.when(link.last_at),
    }


def evidence_row(e: EvidenceRow) -> dict[str, Any]:
    return {
        "kind": "evidence",
        "tag": e.tag,
        "category": e.category,
        "target_kind": e.kind,
        "target_id": e.target_id,
        "evidence": e.evidence,
    }


# ---- sections: each yields (key, rows) per page; key None: the section is done --------


Page = Iterator[tuple[str | None, list[dict[str, Any]]]]


def _projects(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    yield (
        None,
        [
            {"kind": "project", "name": s.project, "retention_limit": s.retention_limit}
            for s in src.memories.projects(tenant, only=project)
        ],
    )


def _memories(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    for pairs in src.transfer.memory_pages(tenant, project, page=page, after=after):
        records = [record for _, record in pairs]
        votes = src.transfer.feedback_of(tenant, [r.id for r in records])
        yield pairs[-1][0], [*map(memory_row, records), *map(feedback_row, votes)]


def _audit(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    for pairs in src.transfer.audit_pages(tenant, project, page=page, after=after):
        yield pairs[-1][0], [audit_row(a) for _, a in pairs]


def _solution_key(after: str | None) -> tuple[float, str] | None:
    if after is None:
        return None
    created, sep, solution_id = after.partition("|")
    try:
        return float(created), solution_id
    except ValueError:
        raise InvalidInput(f"not a position among the solutions: {after!r}", field="cursor") from None


def _solutions(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    # Solutions and patterns belong to the tenant, not to a project: every export carries them.
    cursor = _solution_key(after)
    while listed := src.learning.list_solutions(tenant, category=None, after=cursor, limit=page):
        cursor = (to_epoch(listed[-1].created_at), listed[-1].id)
        # The listing leaves the embeddings out: each solution is read whole.
        yield f"{cursor[0]!r}|{cursor[1]}", [solution_row(src.learning.get_solution(tenant, s.id)) for s in listed]


def _applications(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    for pairs in src.transfer.application_pages(tenant, page=page, after=after):
        yield pairs[-1][0], [application_row(a) for _, a in pairs]


def _slices(items: list[Any], after: str | None, page: int) -> Iterator[tuple[str | None, list[Any]]]:
    """A section read whole, ``page`` items a chunk: the key is how many items came before, so
    a position holds whatever chunk size the page that gave it was read in (None: the last)."""
    start = int(after or 0)
    for begin in range(start, max(len(items), start + 1), page):
        end = begin + page
        yield (str(end) if end < len(items) else None), items[begin:end]


def _patterns(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    patterns = src.learning.patterns(tenant, category=None, min_occurrences=0, limit=_ALL)
    for key, chunk in _slices(sorted(patterns, key=lambda p: (p.tag, p.category)), after, page):
        yield key, [pattern_row(p) for p in chunk]


def _links(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    links = src.learning.links(tenant, limit=_ALL)
    for key, chunk in _slices(sorted(links, key=lambda x: (x.tag, x.category, x.kind, x.target_id)), after, page):
        yield key, [link_row(x) for x in chunk]


def _evidence(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    for pairs in src.transfer.evidence_pages(tenant, page=page, after=after):
        yield pairs[-1][0], [evidence_row(e) for _, e in pairs]


def _versions(src: Sources, tenant: str, project: str | None, after: str | None, page: int) -> Page:
    # Last, so a position an earlier export gave still names the same section.
    # The key is how many versions came before (not pages), so any chunk size goes on from it.
    pages = src.versions.version_pages(tenant, project, page=page)
    skip, seen = int(after or 0), 0
    for versions in pages:
        first, seen = seen, seen + len(versions)
        if seen > skip:
            yield str(seen), [version_row(v) for v in versions[max(0, skip - first) :]]


SECTIONS = (_projects, _memories, _audit, _solutions, _applications, _patterns, _links, _evidence, _versions)


# ---- positions: where an export stopped, so the next request goes on from there ------


class Position(BaseModel):
    """Where to go on: the section, the key of the last row written in it, the counts so far."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    project: str | None
    section: int = Field(ge=0, le=len(SECTIONS))
    after: str | None = Field(max_length=512)
    counts: dict[str, Annotated[int, Field(ge=0)]]

    def encode(self) -> str:
        return base64.urlsafe_b64encode(self.model_dump_json().encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: str, project: str | None) -> Position:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            position = cls.model_validate_json(raw)
        except (ValueError, ValidationError):
            # A cursor names a page of an export; one no export returned names no page.
            message = "no export page has this cursor: pass the X-Capsule-Next-Cursor an export returned"
            raise NotFound(message, details=[{"field": "cursor", "message": message}]) from None
        if position.project != project:
            raise InvalidInput("the cursor belongs to an export of another project", field="cursor")
        return position


def export_chunks(
    src: Sources,
    tenant: str,
    project: str | None = None,
    *,
    start: Position | None = None,
    clock: Clock = system_clock,
    page: int = PAGE,
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> Iterator[tuple[Position, list[str]]]:
    """The export in chunks of lines, each with the position just after it (``start``: go on
    from a position an earlier call gave; None: from the header). ``keep``: the rows a limited
    caller receives (capsule.authz.export_keep; None: every row)."""
    begin = start or Position(project=project, section=0, after=None, counts={})
    counts: Counter[str] = Counter(begin.counts)
    if start is None:
        yield (
            begin,
            [
                fmt.dumps(
                    {
                        "kind": "header",
                        "format": fmt.FORMAT,
                        "version": fmt.VERSION,
                        "tenant": tenant,
                        "project": project,
                        "exported_at": fmt.when(clock()),
                    }
                )
            ],
        )
    for index in range(begin.section, len(SECTIONS)):
        after = begin.after if index == begin.section else None
        for key, rows in SECTIONS[index](src, tenant, project, after, page):
            rows = rows if keep is None else [row for row in rows if keep(row)]
            counts.update(row["kind"] for row in rows)
            where = (index, key) if key is not None else (index + 1, None)
            yield (
                Position(project=project, section=where[0], after=where[1], counts=dict(counts)),
                [fmt.dumps(row) for row in rows],
            )
    done = Position(project=project, section=len(SECTIONS), after=None, counts=dict(counts))
    yield done, [fmt.dumps({"kind": "end", "counts": dict(sorted(counts.items()))})]


def export_lines(
    src: Sources, tenant: str, project: str | None = None, *, clock: Clock = system_clock, page: int = PAGE
) -> Iterator[str]:
    """The whole export as lines of text (each ends with a newline): header, rows, end."""
    for _, lines in export_chunks(src, tenant, project, clock=clock, page=page):
        yield from lines


@dataclass(frozen=True)
class ExportPage:
    """One response's worth of an export: its lines, and the cursor to go on (None: the end)."""

    text: str
    next_cursor: str | None


def export_page(
    src: Sources,
    tenant: str,
    project: str | None,
    cursor: str | None,
    *,
    max_bytes: int,
    clock: Clock = system_clock,
    page: int = 100,
    keep: Callable[[dict[str, Any]], bool] | None = None,
    size_of: Callable[[str], int] = len,
) -> ExportPage:
    """Lines of the export from ``cursor``: whole chunks while ``size_of`` their text stays
    within ``max_bytes`` (a chunk is ``page`` memories and their votes; the hosted API passes
    :func:`capsule.core.wire.wrapped_bytes`, the size Lambda sends). A chunk that would pass it is
    read again in smaller chunks (``page`` / 8 at a time, down to one row) to fill what is
    left, so 100 memories of 64 KiB never make a page too large to send; a single row larger
    than ``max_bytes`` makes a page of its own, so every call moves on. The pages' texts one
    after another are the whole export, as :func:`export_lines` gives it."""
    position = None if cursor is None else Position.decode(cursor, project)
    parts: list[str] = []
    size, chunk = 0, page
    while True:
        for after, lines in export_chunks(src, tenant, project, start=position, clock=clock, page=chunk, keep=keep):
            text = "".join(lines)
            grown = size + size_of(text)
            if grown > max_bytes and (parts or chunk > 1):
                break  # left for a smaller chunk, or for the next page
            parts.append(text)
            size, position = grown, after
            if after.section == len(SECTIONS):
                return ExportPage("".join(parts), None)
        else:
            raise AssertionError("an export always ends with its end line")  # pragma: no cover
        # Half full, or down to single rows: what is left waits for the next page.
        if chunk == 1 or (parts and size >= max_bytes // 2):
            assert position is not None  # parts is not empty: some chunk moved it
            return ExportPage("".join(parts), position.encode())
        chunk = max(1, chunk // 8)
