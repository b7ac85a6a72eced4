"""Wiring the parts from settings: the store, the embedder (cached) and the service.

Long-lived processes (a warm Lambda container, ``capsule serve``, ``capsule mcp``) call
:func:`build_service` once and reuse what it returns.
"""

from __future__ import annotations

from ..config import Settings
from ..core.clock import Clock, system_clock
from ..embedders import Embedder, build_embedder
from ..embedders.cached import CachedEmbedder
from ..service.memory_service import MemoryService
from ..store.base import MemoryStore


def open_store(settings: Settings) -> MemoryStore:
    if settings.store == "mongo":
        from ..store.mongo import MongoStore  # needs the 'mongo' extra

        store: MemoryStore = MongoStore.from_settings(settings)
    else:
        from ..store.sqlite import SQLiteStore

        store = SQLiteStore(settings.database_path)
    store.migrate()
    return store


def seal_store(store: MemoryStore, settings: Settings, clock: Clock = system_clock) -> MemoryStore:
    """The store with flagged memories (and every memory of a project set to ``encryption: all``)
    sealed at rest (capsule.crypto), under the deployment's wrapping key."""
    if hasattr(store, "backing_store"):
        return store
    from ..sealing.setup import sealed, wrapper_for

    return sealed(store, wrapper_for(settings), clock=clock)


def build_service(
    settings: Settings,
    *,
    store: MemoryStore | None = None,
    clock: Clock = system_clock,
    embedder: Embedder | None = None,
) -> MemoryService:
    """``embedder``: one built already (``capsule serve``'s shared model), else the settings pick one."""
    store = store or open_store(settings)
    store = seal_store(store, settings, clock)
    embedder = CachedEmbedder(embedder or build_embedder(settings), store, clock)
    return MemoryService(store, embedder, clock=clock, settings=settings)
