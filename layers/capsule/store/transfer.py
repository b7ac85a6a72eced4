"""The transfer contract: what export and import need of a store beyond the memory and
learning contracts — every row as it is, read in pages, and written back as it was.

Reads walk a keyset (the backend's insertion order), never the whole tenant at once: each
page comes as ``(key, row)`` pairs, and a read given ``after=key`` resumes just past that row
(an HTTP export continues from a cursor this way). Keys are opaque strings; a key that is
not one of the backend's is :class:`~capsule.core.errors.InvalidInput`.
Writes keep every field (forgotten memories stay forgotten with their dates, counters are
set, not incremented) and are idempotent: a row already present is left as it is and
reported as skipped. Memory writes stamp the project's next version like any other write
(see :mod:`capsule.store.base`), so warm search indexes pick them up.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from ..core.learning_records import ApplicationRecord, LinkRecord
from ..core.records import AuditRecord, MemoryRecord


@dataclass(slots=True, frozen=True)
class FeedbackRow:
    memory_id: str
    helpful: bool
    context: str | None
    at: datetime


@dataclass(slots=True, frozen=True)
class EvidenceRow:
    tag: str
    category: str
    kind: str
    target_id: str
    evidence: str


@dataclass(slots=True)
class Written:
    """What one idempotent write did: rows written, rows already there, rows refused (why)."""

    written: int = 0
    present: int = 0
    refused: dict[int, str] | None = None  # index in the batch -> reason


@runtime_checkable
class TransferStore(Protocol):
    def memory_pages(
        self, tenant: str, project: str | None, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, MemoryRecord]]]:
        """Every memory (forgotten ones included, with embeddings) of the tenant or one project,
        ``page`` at a time in insertion order."""

    def feedback_of(self, tenant: str, memory_ids: Sequence[str]) -> list[FeedbackRow]:
        """The votes kept for these memories, oldest first."""

    def audit_pages(
        self, tenant: str, project: str | None, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, AuditRecord]]]:
        """Every audit record of the tenant or project, oldest first."""

    def existing_memories(self, tenant: str, ids: Sequence[str]) -> dict[str, bool]:
        """Of these ids, those the tenant already holds (id -> True). Ids are unique per tenant,
        so another tenant's equal id is not here: answering it would tell the caller it exists."""

    def existing_content(self, tenant: str, project: str, sha256s: Sequence[str]) -> set[str]:
        """Of these content hashes, those of memories already stored (active) in the project."""

    def put_memories(self, tenant: str, project: str, records: Sequence[MemoryRecord]) -> None:
        """Insert these new memories of one project as they are, atomically, with no eviction
        and no dedupe (the caller removed the present ones)."""

    def put_feedback(self, tenant: str, rows: Sequence[FeedbackRow]) -> Written:
        """Keep these votes (counters are not touched: the memory rows carry them). A vote equal
        to a kept one is present; one for an unknown memory is refused."""

    def put_audit(self, tenant: str, rows: Sequence[AuditRecord]) -> Written:
        """Keep these audit records; one equal to a kept one is present."""

    def application_pages(
        self, tenant: str, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, ApplicationRecord]]]:
        """Every solution application, oldest first."""

    def put_applications(self, tenant: str, rows: Sequence[ApplicationRecord]) -> Written:
        """Keep these applications by id (solution counters are not touched)."""

    def put_link(self, link: LinkRecord) -> bool:
        """Store a pattern link with its counts unless it exists; True when written."""

    def evidence_pages(
        self, tenant: str, *, page: int, after: str | None = None
    ) -> Iterator[list[tuple[str, EvidenceRow]]]:
        """Every piece of link evidence (what keeps mining idempotent)."""

    def put_evidence(self, tenant: str, rows: Sequence[EvidenceRow]) -> Written:
        """Keep these pieces of evidence; one already kept is present."""
