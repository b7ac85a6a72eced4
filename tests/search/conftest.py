"""Fixtures for the search tests: a real SQLite store, the hashing embedder and a frozen clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.embedders.hashing import HashingEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "capsule.db"


@pytest.fixture
def make_service(db_path, clock):
    stores = []

    def make(**settings) -> MemoryService:
        store = SQLiteStore(db_path)
        store.migrate()
        stores.append(store)
        options = {"data_dir": db_path.parent, "retention_limit": 10_000, **settings}
        return MemoryService(store, HashingEmbedder(), clock=clock, settings=Settings(**options))

    yield make
    for store in stores:
        store.close()


@pytest.fixture
def service(make_service) -> MemoryService:
    return make_service()
