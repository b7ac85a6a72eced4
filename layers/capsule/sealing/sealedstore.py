"""Any memory store, with the memories that should be sealed sealed on the way in and opened
on the way out: SQLite and MongoDB then keep the very same envelopes.

Everything else is passed to the store behind as it is (``__getattr__``): a method this wrapper
does not know returns what the store returns, and the methods that return memories have them
opened (:data:`OPENS`). Code that needs the store itself (its SQL, export, sync) reads
:attr:`SealedStore.backing_store` and sees the sealed form.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..core.records import ChangeSet, MemoryRecord
from .sealer import Sealer

logger = logging.getLogger("capsule.crypto")

# Store methods whose answer holds memory records (or one), opened before they are returned.
OPENS = frozenset(
    {
        "get_many",
        "list",
        "set_pinned",
        "forget",
        "restore",
        "add_feedback",
        "candidates",
        "nearest_candidates",
        "pending_embeddings",
        "changes_since",
        "supersede",
        "replace",
    }
)


class SealedStore:
    def __init__(self, inner: Any, sealer: Sealer) -> None:
        self.backing_store = inner
        self.sealer = sealer

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.backing_store, name)
        if name in OPENS and callable(value):
            return self._opening(value)
        return value

    def _opening(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self.open_any(method(*args, **kwargs))

        return call

    def open_any(self, value: Any) -> Any:
        open_ = self.sealer.open
        if isinstance(value, MemoryRecord):
            return open_(value)
        if isinstance(value, list):
            return [open_(v) if isinstance(v, MemoryRecord) else v for v in value]
        if isinstance(value, ChangeSet):
            return replace(value, changed=[open_(r) for r in value.changed])
        return value

    def get(self, tenant: str, memory_id: str, *, include_forgotten: bool = False, reseal: bool = True) -> MemoryRecord:
        """One memory, opened; one sealed under an older data key (or unsealed where its project
        now seals every memory) is sealed again under the current one on the way (lazily)."""
        record = self.sealer.open(self.backing_store.get(tenant, memory_id, include_forgotten=include_forgotten))
        if reseal:
            from . import reseal as resealing

            if resealing.needs_reseal(self, record):
                resealing.reseal(self, record)
        return record

    # ---- writes that carry content ---------------------------------------------

    def insert(self, records: Sequence[MemoryRecord], **kwargs: Any) -> Any:
        return self.backing_store.insert([self.seal_if_wanted(r) for r in records], **kwargs)

    def insert_bulk(self, records: Sequence[MemoryRecord], **kwargs: Any) -> Any:
        return self.backing_store.insert_bulk([self.seal_if_wanted(r) for r in records], **kwargs)

    def seal_if_wanted(self, record: MemoryRecord) -> MemoryRecord:
        return self.sealer.seal(record) if self.sealer.wanted(record) else record

    def change_markers(self, tenant: str, projects: Sequence[str] | None) -> dict[str, int]:
        # Every search asks for these first, warm index or not: a tenant with its own key must
        # have sent it, even when the answer would come from memory.
        self.sealer.keyring.check(tenant)
        return self.backing_store.change_markers(tenant, projects)

    def term_variants(self, tenant: str, *, fresh: bool = False) -> Callable[[str], list[int]]:
        return self.sealer.term_variants(tenant, fresh=fresh)

    def governance_view(self, inner_governance: Any) -> Any:
        from .sealedgovernance import SealedGovernance

        return SealedGovernance(inner_governance, self)


def backing(store: Any) -> Any:
    """The store behind a SealedStore (or the store itself)."""
    return getattr(store, "backing_store", store)
