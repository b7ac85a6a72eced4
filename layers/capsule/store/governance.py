"""The governance contract: what updates with history, supersession, expiry and governance
audit need of a store beyond :mod:`capsule.store.base`.

Every write is one atomic write of the memory's project, stamped with the project's next
version like any other (:mod:`capsule.store.base`), so warm search indexes see it. A change
that cannot be made raises and changes nothing: :class:`~capsule.core.errors.NotFound` for a
memory that is not active (or another tenant's), :class:`~capsule.core.errors.PreconditionFailed`
for one changed since the caller read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ..core.records import AuditRecord, MemoryRecord

# Two reads of one stored time agree to well within this (an epoch double round-trips a datetime).
SAME_TIME_S = 2e-6


@dataclass(slots=True)
class VersionRecord:
    """An earlier version of a memory, kept when it was updated or reverted."""

    tenant: str
    memory_id: str
    number: int  # 1 is the memory as first stored
    project: str
    content: str
    sha256: str
    path: str | None
    explanation: str | None
    meta: dict[str, Any] = field(default_factory=dict)
    retention: str = "auto"
    expires_at: datetime | None = None
    pinned: bool = False
    created_at: datetime | None = None  # when this version was written
    replaced_at: datetime | None = None  # when the next one replaced it
    actor: str = ""
    reason: str = ""


def version_of(record: MemoryRecord, number: int, *, replaced_at: datetime, actor: str, reason: str) -> VersionRecord:
    """The version a record becomes when it is replaced."""
    return VersionRecord(
        tenant=record.tenant,
        memory_id=record.id,
        number=number,
        project=record.project,
        content=record.content,
        sha256=record.sha256,
        path=record.path,
        explanation=record.explanation,
        meta=dict(record.meta),
        retention=record.retention,
        expires_at=record.expires_at,
        pinned=record.pinned,
        created_at=record.updated_at,
        replaced_at=replaced_at,
        actor=actor,
        reason=reason,
    )


@runtime_checkable
class GovernanceStore(Protocol):
    def replace(
        self, before: MemoryRecord, after: MemoryRecord, *, action: str, actor: str, reason: str
    ) -> MemoryRecord:
        """Write ``after`` over the active memory ``before`` was read as, keeping ``before`` as its
        next version and auditing ``action``. Only content, sha256, embedding, model, status, meta,
        explanation, retention, expires_at and updated_at of ``after`` are written. Raises
        NotFound (not active) or PreconditionFailed (its sha256 or updated_at is not ``before``'s)."""

    def versions(self, tenant: str, memory_id: str, *, limit: int) -> list[VersionRecord]:
        """The memory's earlier versions, oldest first (at most ``limit``, the newest kept)."""

    def supersede(
        self, tenant: str, old_id: str, new_id: str, *, at: datetime, actor: str, reason: str
    ) -> MemoryRecord:
        """Mark the active memory ``old_id`` superseded by ``new_id``: kept with its content, no
        longer active (``deleted_reason`` 'superseded', never purged as forgotten), audited.
        Raises NotFound."""

    def expire(self, *, at: datetime, limit: int) -> list[AuditRecord]:
        """Purge for good (with their versions) up to ``limit`` active memories whose
        ``expires_at`` is at or before ``at``, each audited as 'expire' by 'retention'."""

    def set_project_ttl(self, tenant: str, project: str, ttl: int, *, at: datetime) -> None:
        """Set the seconds an ephemeral memory of the project lives when stored without a ttl."""

    def project_ttl(self, tenant: str, project: str) -> int | None:
        """The project's own ephemeral TTL, or None to use the deployment's."""

    def add_audit(self, record: AuditRecord) -> None:
        """Keep one audit record (a refusal, a class change the memory write did not audit)."""

    def version_pages(self, tenant: str, project: str | None, *, page: int) -> Any:
        """Every kept version of the tenant (or project), ``page`` at a time (lists of
        VersionRecord), for export."""

    def put_versions(self, tenant: str, rows: Sequence[VersionRecord]) -> int:
        """Keep these versions (import); one already kept is skipped. Returns how many written."""
