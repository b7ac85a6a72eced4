"""Export a tenant (or one project) as the JSON Lines of :mod:`capsule.transfer.format`.

A generator of lines: memories are read a page at a time from the store's keyset, so an
export of any size holds one page in memory. Each row is built as a plain dict (no model
per row) in a fixed key order, so exporting the same data twice gives the same lines
(the header's ``exported_at`` aside).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Iterator

from .. import limits
from ..clock import Clock, system_clock, to_epoch
from ..learning.records import ApplicationRecord, LinkRecord, PatternRecord, SolutionRecord
from ..records import AuditRecord, MemoryRecord
from ..store.base import MemoryStore
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


def memory_row(r: MemoryRecord) -> dict[str, Any]:
    vector, dims = fmt.encode_vector(r.embedding)
    purge = None if r.deleted_at is None else r.deleted_at + timedelta(days=limits.FORGET_RECOVERABLE_DAYS)
    return {
        "kind": "memory", "id": r.id, "project": r.project, "content": r.content, "sha256": r.sha256,
        "path": r.path, "chunk_index": r.chunk_index, "chunk_count": r.chunk_count,
        "embedding": vector, "dims": dims, "model": r.model, "status": r.status, "pinned": r.pinned,
        "explanation": r.explanation, "meta": r.meta, "helpful": r.helpful, "unhelpful": r.unhelpful,
        "occurred_at": fmt.when(r.occurred_at), "created_at": fmt.when(r.created_at),
        "updated_at": fmt.when(r.updated_at), "accessed_at": fmt.when(r.accessed_at),
        "deleted_at": fmt.when(r.deleted_at), "deleted_reason": r.deleted_reason, "purge_after": fmt.when(purge),
    }


def feedback_row(f: FeedbackRow) -> dict[str, Any]:
    return {"kind": "feedback", "memory_id": f.memory_id, "helpful": f.helpful, "context": f.context,
            "at": fmt.when(f.at)}


def audit_row(a: AuditRecord) -> dict[str, Any]:
    return {"kind": "audit", "memory_id": a.memory_id, "project": a.project, "action": a.action,
            "actor": a.actor, "reason": a.reason, "at": fmt.when(a.at)}


def solution_row(s: SolutionRecord) -> dict[str, Any]:
    vectors, dims = fmt.encode_vector(s.embeddings)
    return {
        "kind": "solution", "id": s.id, "title": s.title, "category": s.category, "body": s.body,
        "success": s.success, "failure": s.failure, "embeddings": vectors,
        "signatures": 0 if s.embeddings is None else len(s.embeddings), "dims": dims, "model": s.model,
        "created_at": fmt.when(s.created_at), "updated_at": fmt.when(s.updated_at),
    }


def application_row(a: ApplicationRecord) -> dict[str, Any]:
    return {"kind": "application", "id": a.id, "solution_id": a.solution_id, "success": a.success,
            "project": a.project, "error": a.error, "context": a.context, "at": fmt.when(a.at)}


def pattern_row(p: PatternRecord) -> dict[str, Any]:
    vector, dims = fmt.encode_vector(p.embedding)
    return {
        "kind": "pattern", "tag": p.tag, "category": p.category, "terms": p.terms, "occurrences": p.occurrences,
        "projects": p.projects, "examples": p.examples, "description": p.description, "embedding": vector,
        "dims": dims, "model": p.model, "first_seen": fmt.when(p.first_seen), "last_seen": fmt.when(p.last_seen),
        "created_at": fmt.when(p.created_at), "updated_at": fmt.when(p.updated_at),
    }


def link_row(link: LinkRecord) -> dict[str, Any]:
    return {"kind": "link", "tag": link.tag, "category": link.category, "target_kind": link.kind,
            "target_id": link.target_id, "success": link.success, "failure": link.failure,
            "last_at": fmt.when(link.last_at)}


def evidence_row(e: EvidenceRow) -> dict[str, Any]:
    return {"kind": "evidence", "tag": e.tag, "category": e.category, "target_kind": e.kind,
            "target_id": e.target_id, "evidence": e.evidence}


def _solutions(learning: LearningStore, tenant: str) -> Iterator[SolutionRecord]:
    after = None
    while page := learning.list_solutions(tenant, category=None, after=after, limit=PAGE):
        for listed in page:
            yield learning.get_solution(tenant, listed.id)  # the listing leaves the embeddings out
        after = (to_epoch(page[-1].created_at), page[-1].id)


def _rows(src: Sources, tenant: str, project: str | None, page: int) -> Iterator[dict[str, Any]]:
    for stats in src.memories.projects(tenant):
        if project is None or stats.project == project:
            yield {"kind": "project", "name": stats.project, "retention_limit": stats.retention_limit}
    for records in src.transfer.memory_pages(tenant, project, page=page):
        yield from map(memory_row, records)
        yield from map(feedback_row, src.transfer.feedback_of(tenant, [r.id for r in records]))
    for audits in src.transfer.audit_pages(tenant, project, page=page):
        yield from map(audit_row, audits)
    # Solutions and patterns belong to the tenant, not to a project: every export carries them.
    yield from map(solution_row, _solutions(src.learning, tenant))
    for applications in src.transfer.application_pages(tenant, page=page):
        yield from map(application_row, applications)
    patterns = src.learning.patterns(tenant, category=None, min_occurrences=0, limit=_ALL)
    yield from map(pattern_row, sorted(patterns, key=lambda p: (p.tag, p.category)))
    links = src.learning.links(tenant, limit=_ALL)
    yield from map(link_row, sorted(links, key=lambda x: (x.tag, x.category, x.kind, x.target_id)))
    for evidence in src.transfer.evidence_pages(tenant, page=page):
        yield from map(evidence_row, evidence)


def export_lines(src: Sources, tenant: str, project: str | None = None, *, clock: Clock = system_clock,
                 page: int = PAGE) -> Iterator[str]:
    """The export as lines of text (each ends with a newline): header, rows, end."""
    yield fmt.dumps({"kind": "header", "format": fmt.FORMAT, "version": fmt.VERSION, "tenant": tenant,
                     "project": project, "exported_at": fmt.when(clock())})
    counts: Counter[str] = Counter()
    for row in _rows(src, tenant, project, page):
        counts[row["kind"]] += 1
        yield fmt.dumps(row)
    yield fmt.dumps({"kind": "end", "counts": dict(sorted(counts.items()))})
