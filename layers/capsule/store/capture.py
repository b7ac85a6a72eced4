"""The capture queue's contract: candidates proposed from conversations, waiting for a person.

A candidate is keyed in its project by ``key`` (the hash of its normalised text): adding one
whose key the project already holds, in any status, adds nothing, so a transcript captured
twice proposes nothing twice and a rejected candidate is never proposed again.
:meth:`CandidateStore.decide` moves a candidate out of ``pending`` atomically (compare and
set): deciding a candidate that is no longer pending is :class:`~capsule.core.errors.Conflict`,
so two approvals of one candidate store one memory. Lists are newest first by ``(created_at,
id)``. Both backends (SQLite, MongoDB) implement it; ``tests/contract`` runs on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

STATUSES = ("pending", "approved", "rejected")


@dataclass(slots=True)
class CandidateRecord:
    id: str
    tenant: str
    project: str
    key: str
    text: str
    score: float
    reason: str
    kind: str
    tags: list[str]
    created_at: datetime
    role: str
    session: str | None = None
    occurred_at: datetime | None = None
    status: str = "pending"
    decided_at: datetime | None = None
    memory_id: str | None = None
    note: str | None = None  # why it was rejected, or that it was edited on approval
    extra: dict = field(default_factory=dict)


@runtime_checkable
class CandidateStore(Protocol):
    def migrate(self) -> None:
        """Create the queue's tables or collections; idempotent."""

    def add(self, records: Sequence[CandidateRecord]) -> dict[str, str]:
        """Queue the candidates whose key their project does not hold yet; returns, for each
        candidate not added, its key -> the status of the one already held."""

    def statuses(self, tenant: str, project: str, keys: Sequence[str]) -> dict[str, str]:
        """Of these keys, those the project holds: key -> status."""

    def get(self, tenant: str, candidate_id: str) -> CandidateRecord:
        """One candidate. Raises NotFound."""

    def list(
        self, tenant: str, project: str | None, status: str | None, *, before: tuple[datetime, str] | None, limit: int
    ) -> list[CandidateRecord]:
        """Candidates newest first, strictly before ``before`` (created_at, id)."""

    def decide(
        self,
        tenant: str,
        candidate_id: str,
        status: str,
        *,
        at: datetime,
        text: str | None = None,
        note: str | None = None,
    ) -> CandidateRecord:
        """Move a pending candidate to ``status`` (approved | rejected), optionally with edited
        ``text``. Raises NotFound, or Conflict when it is not pending."""

    def undo(self, tenant: str, candidate_id: str) -> None:
        """Put an approved candidate back to pending (its memory could not be stored)."""

    def link(self, tenant: str, candidate_id: str, memory_id: str) -> CandidateRecord:
        """Record the memory an approved candidate became."""

    def threshold(self, tenant: str, project: str) -> float | None:
        """The project's own auto-approve threshold, or None to use the deployment's."""

    def set_threshold(self, tenant: str, project: str, threshold: float, *, at: datetime) -> None:
        """Set the project's auto-approve threshold."""
