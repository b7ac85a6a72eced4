"""The memory operations: store, ingest, search, list, get, pin, forget, feedback, projects.

:class:`MemoryService` is given its store, embedder and clock; it holds no globals. Every
operation is scoped by the caller's tenant, takes a validated request model and returns a
result model with an ``explanation`` of what it did and why.

This module holds construction and the governance side; the operations live beside it, one
part per module, each a base of the service sharing its dependencies (as the SQLite store's
parts do): :mod:`.service_writes` (store and ingest), :mod:`.service_search` (search),
:mod:`.service_indexes` (the warm indexes it searches, their snapshots and settling),
:mod:`.service_memories` (list, get, pin, forget, restore, feedback), :mod:`.service_projects`
(projects and their settings). Requests are validated and results built by
:mod:`.service_edge`, whose names are imported from here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ..config import Settings
from ..core.clock import Clock, system_clock
from ..embedders.base import Embedder
from ..store.base import MemoryStore
from .edge import decode_cursor, encode_cursor, to_memory, validate
from .indexes import ServiceIndexes
from .memories import ServiceMemories
from .projects import ServiceProjects
from .search import ServiceSearch
from .writes import BULK_FROM, ServiceWrites, visibility_of

__all__ = ["BULK_FROM", "MemoryService", "decode_cursor", "encode_cursor", "to_memory", "validate", "visibility_of"]


class MemoryService(ServiceWrites, ServiceSearch, ServiceIndexes, ServiceMemories, ServiceProjects):
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        clock: Clock = system_clock,
        settings: Settings | None = None,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        governance: Any = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.clock = clock
        self.settings = settings or Settings()
        self._new_id = new_id
        self._governance_store = governance  # capsule.store.governance.GovernanceStore; None: from the store
        self._history: Any = None
        self._setup_indexes()
        self._setup_search()

    @property
    def governance_store(self):
        """The governance side of the store (capsule.store.governance), in the same database."""
        if self._governance_store is None:
            from ..store.sides import governance_store

            self._governance_store = governance_store(self.store)
        return self._governance_store

    @property
    def history(self):
        """Update with history, revert, supersession chains (capsule.service.history)."""
        if self._history is None:
            from .history import History

            self._history = History(self)
        return self._history
