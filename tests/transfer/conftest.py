"""A deployment per backend (SQLite, MongoDB on mongomock): memory and learning services on one
store, and the transfer Sources over them. ``make()`` gives a fresh one, for importing into."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.learning import LearningService
from capsule.service.memory_service import MemoryService
from capsule.store.sides import open_learning_store, transfer_store
from capsule.transfer import Sources

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "learning"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_helpers import FlakyEmbedder  # noqa: E402


class Deployment:
    def __init__(self, store, settings: Settings) -> None:
        self.clock, self.embedder = FrozenClock(), FlakyEmbedder()
        self.store = store
        self.memories = MemoryService(store, self.embedder, clock=self.clock, settings=settings)
        self.learning = LearningService(open_learning_store(store, settings), store, self.embedder, clock=self.clock)
        self.sources = Sources(store, self.learning.store, transfer_store(store))


def _sqlite(tmp_path: Path) -> Callable[[], Deployment]:
    from capsule.store.sqlite import SQLiteStore

    made = []

    def make() -> Deployment:
        store = SQLiteStore(tmp_path / f"capsule-{len(made)}.db")
        store.migrate()
        made.append(store)
        return Deployment(store, Settings(data_dir=tmp_path, embedder="hashing"))

    return make


def _mongomock(tmp_path: Path) -> Callable[[], Deployment]:
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from capsule.store.mongo import MongoStore

    client = mongomock.MongoClient()
    made = []

    def make() -> Deployment:
        store = MongoStore(client.get_database(f"capsule{len(made)}"), transactions=False)
        store.migrate()
        made.append(store)
        return Deployment(store, Settings(store="mongo", embedder="hashing"))

    return make


@pytest.fixture(params=["sqlite", "mongomock"])
def make(request, tmp_path) -> Callable[[], Deployment]:
    return {"sqlite": _sqlite, "mongomock": _mongomock}[request.param](tmp_path)


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for this test session (Debian's ``postgresql`` package; .ci/run installs it)."""
    from postgres import binaries, start, stop

    bin_dir = binaries()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the PostgreSQL tests: .ci/run installs Debian's postgresql package")
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install -y postgresql")
    server, run_as = start(bin_dir)
    yield server
    stop(bin_dir, server, run_as)
