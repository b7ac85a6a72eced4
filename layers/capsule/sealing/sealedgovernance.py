"""The governance side (updates with history, supersession) of a sealed store: an update of a
sealed memory is sealed again, and the version it replaces is kept sealed too."""

from __future__ import annotations

from dataclasses import replace as copy_with
from typing import Any

from ..core.records import MemoryRecord
from ..crypto import envelope
from .sealer import SEALED_META


class SealedGovernance:
    def __init__(self, inner: Any, memories: Any) -> None:
        self.backing_store = inner
        self._memories = memories  # the SealedStore
        self._sealer = memories.sealer

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.backing_store, name)
        if name == "supersede":
            return lambda *a, **k: self._memories.open_any(value(*a, **k))
        return value

    def replace(
        self, before: MemoryRecord, after: MemoryRecord, *, action: str, actor: str, reason: str
    ) -> MemoryRecord:
        was_sealed = bool(getattr(before, "sealed", ""))
        stored_before = self._sealer.seal(before) if was_sealed else before
        if was_sealed or self._sealer.wanted(after):
            after = self._sealer.seal(after)
        done = self.backing_store.replace(stored_before, after, action=action, actor=actor, reason=reason)
        return self._memories.open_any(done)

    def versions(self, tenant: str, memory_id: str, *, limit: int) -> list[Any]:
        return [self._open_version(v) for v in self.backing_store.versions(tenant, memory_id, limit=limit)]

    def _open_version(self, version: Any) -> Any:
        if not envelope.is_sealed(version.content):
            return version
        as_record = MemoryRecord(
            id=version.memory_id,
            tenant=version.tenant,
            project=version.project,
            content=version.content,
            sha256=version.sha256,
            occurred_at=version.created_at,
            created_at=version.created_at,
            updated_at=version.created_at,
            explanation=version.explanation,
            meta=version.meta,
        )
        opened = self._sealer.open(as_record)
        return copy_with(version, content=opened.content, meta=opened.meta, explanation=opened.explanation)


__all__ = ["SealedGovernance", "SEALED_META"]
