"""Wiring the parts from settings: the store, the embedder (cached) and the service.

Long-lived processes (a warm Lambda container, ``capsule serve``, ``capsule mcp``) call
:func:`build_service` once and reuse what it returns.
"""

from __future__ import annotations

from .clock import Clock, system_clock
from .config import Settings
from .embedders import build_embedder
from .embedders.cached import CachedEmbedder
from .service import MemoryService
from .store.base import MemoryStore


def open_store(settings: Settings) -> MemoryStore:
    if settings.store == "mongo":
        from .store.mongo import MongoStore  # needs the 'mongo' extra

        store: MemoryStore = MongoStore.from_settings(settings)
    else:
        from .store.sqlite import SQLiteStore

        store = SQLiteStore(settings.database_path)
    store.migrate()
    return store


def build_service(settings: Settings, *, store: MemoryStore | None = None, clock: Clock = system_clock
                  ) -> MemoryService:
    store = store or open_store(settings)
    embedder = CachedEmbedder(build_embedder(settings), store, clock)
    return MemoryService(store, embedder, clock=clock, settings=settings)
