"""Re-sealing, lazily: a memory sealed under an older data key (after a rotation), or not sealed
in a project now set to encrypt every memory, is sealed again under the tenant's current key
when it is read (:meth:`~.sealedstore.SealedStore.get`) or written, and by the retention job
(:func:`sweep`), a bounded batch at a time. Nothing waits for it: every key version keeps opening
what it sealed until then. And key rotation itself (:func:`rotate`), audited."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from ..core.errors import CapsuleError
from ..core.records import AuditRecord, MemoryRecord

logger = logging.getLogger("capsule.crypto")
ROTATE = "rotate-data-key"  # audit actions (capsule.governance.audit lists the others)
REWRAP = "rewrap-data-keys"


def needs_reseal(store: Any, record: MemoryRecord) -> bool:
    sealer = store.sealer
    label = getattr(record, "sealed", "")
    if label:
        return label != sealer.keyring.current(record.tenant).label
    return sealer.mode(record.tenant, record.project) == "all" and record.deleted_at is None


def reseal(store: Any, record: MemoryRecord) -> bool:
    """Seal an opened record again under the current key, in place in the store; False when
    it changed meanwhile (the next read tries again)."""
    stored = store.backing_store.get(record.tenant, record.id, include_forgotten=True)
    fresh = store.sealer.seal(record)
    return bool(store.sealer.keyring.store.rewrite_sealed(fresh, was=stored.content))


def sweep(store: Any, *, limit: int) -> int:
    """Re-seal up to ``limit`` memories over every tenant (the retention job's share)."""
    keys, done = store.sealer.keyring.store, 0
    for tenant in store.backing_store.tenants():
        if done >= limit:
            break
        rows = store.sealer.keyring.rows(tenant, fresh=True)
        all_projects = keys.all_projects(tenant)
        if not rows and not all_projects:
            continue
        try:
            current = store.sealer.keyring.current(tenant).label
        except CapsuleError as exc:  # a tenant with its own key: re-sealed on its own requests
            logger.info("not re-sealing tenant %s now: %s", tenant, exc.message)
            continue
        for memory_id in keys.stale_ids(tenant, current, all_projects=all_projects, limit=limit - done):
            record = store.get(tenant, memory_id, include_forgotten=True, reseal=False)
            done += reseal(store, record)
    return done


def rotate(store: Any, governance: Any, tenant: str, *, actor: str, at: datetime, why: str | None = None) -> str:
    """A new data key for the tenant, audited; returns the sentence saying what happened."""
    row = store.sealer.keyring.rotate(tenant)
    reason = (
        f"new data key {row.kid}.{row.version} (wrapped by {row.wrapped_by}) seals what is written from now"
        " on; memories sealed under earlier keys are re-sealed as they are read and by the retention job"
    )
    governance.add_audit(
        AuditRecord(
            tenant=tenant,
            memory_id=f"data-key:{row.kid}.{row.version}",
            project="",
            action=ROTATE,
            actor=actor,
            reason=f"{why}: {reason}" if why else reason,
            at=at,
        )
    )
    return reason


def rewrap(store: Any, governance: Any, tenant: str, to: Any, *, actor: str, at: datetime) -> str:
    count = store.sealer.keyring.rewrap(tenant, to)
    reason = f"re-wrapped {count} data key(s) under {to.id}; no memory was re-sealed"
    governance.add_audit(
        AuditRecord(tenant=tenant, memory_id="data-keys", project="", action=REWRAP, actor=actor, reason=reason, at=at)
    )
    return reason
