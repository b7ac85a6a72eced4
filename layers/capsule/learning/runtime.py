"""Wiring the learning side next to an already built :class:`~capsule.service.MemoryService`."""

from __future__ import annotations

from ..config import Settings
from ..errors import InvalidInput
from ..guard.policy import Policies
from ..service import MemoryService
from ..store.base import MemoryStore
from ..store.learning import LearningStore
from .service import LearningService


def open_learning_store(memories: MemoryStore, settings: Settings) -> LearningStore:
    """The learning store in the same database as ``memories``, migrated."""
    store: LearningStore
    if settings.store == "mongo":
        from ..store.mongo_learning import MongoLearningStore

        db = getattr(memories, "db", None)
        if db is None:  # the memory store keeps its database elsewhere: open our own client
            import pymongo

            if settings.mongodb_uri is None:
                raise InvalidInput("CAPSULE_STORE=mongo needs CAPSULE_MONGODB_URI", field="mongodb_uri")
            db = pymongo.MongoClient(settings.mongodb_uri.get_secret_value(), tz_aware=True)[settings.mongodb_db]
        store = MongoLearningStore(db)
    else:
        from ..store.sqlite import SQLiteStore
        from ..store.sqlite_learning import SQLiteLearningStore

        memories = getattr(memories, "backing_store", memories)  # a sealed store: its SQLite file
        if not isinstance(memories, SQLiteStore):
            raise InvalidInput("the SQLite learning store lives beside a SQLite memory store", field="store")
        store = SQLiteLearningStore(memories)
    store.migrate()
    return store


def build_learning(service: MemoryService) -> LearningService:
    """A LearningService sharing the memory service's store, embedder and clock."""
    store = open_learning_store(service.store, service.settings)
    guard = Policies(secrets=service.settings.secrets_policy, pii=service.settings.pii_policy)
    return LearningService(store, service.store, service.embedder, clock=service.clock, guard=guard)


def build_jobs(service: MemoryService, learning: LearningService | None = None):
    """The scheduled jobs over the service's stores and embedder."""
    from ..jobs import Jobs

    learning = learning or build_learning(service)
    return Jobs(service.store, learning, service.embedder, clock=service.clock, settings=service.settings)
