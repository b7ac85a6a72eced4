"""An audit row, as both stores keep it (a SQLite row or a MongoDB document: the same names), as a record."""

from __future__ import annotations

from typing import Any

from ..core.clock import from_epoch
from ..core.records import AuditRecord


def audit_record(row: Any) -> AuditRecord:
    return AuditRecord(
        tenant=row["tenant"],
        memory_id=row["memory_id"],
        project=row["project"],
        action=row["action"],
        actor=row["actor"],
        reason=row["reason"],
        at=from_epoch(row["at"]),
    )
