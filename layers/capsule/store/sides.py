"""The side stores of a memory store (capture queue, jobs, usage, governance, transfer, sync, learning), each
in the same database, chosen by the memory store's backend.

Kept apart from the contracts (capture.py, governance.py, transfer.py, sync.py) because a
backend's half imports its contract: the choice imports the halves, the halves never import it.
"""

from __future__ import annotations

from ..config import Settings
from ..core.errors import InvalidInput
from .async_jobs import JobStore
from .base import MemoryStore
from .capture import CandidateStore
from .governance import GovernanceStore
from .learning import LearningStore
from .sync import SyncStore
from .transfer import TransferStore
from .usage import UsageStore


def candidate_store(memories: object) -> CandidateStore:
    """The capture queue in the same database as a memory store, migrated."""
    memories = getattr(memories, "backing_store", memories)  # a sealed store: the sealed rows as stored
    from .sqlite import SQLiteStore

    store: CandidateStore
    if isinstance(memories, SQLiteStore):
        from .sqlite_capture import SQLiteCandidateStore

        store = SQLiteCandidateStore(memories)
    else:
        from .mongo_capture import MongoCandidateStore  # needs the 'mongo' extra

        store = MongoCandidateStore(memories.db)  # type: ignore[attr-defined]
    store.migrate()
    return store


def job_store(memories: object) -> JobStore:
    """The asynchronous jobs in the same database as a memory store, migrated."""
    memories = getattr(memories, "backing_store", memories)  # a sealed store: its own database
    from .sqlite import SQLiteStore

    store: JobStore
    if isinstance(memories, SQLiteStore):
        from .sqlite_async_jobs import SQLiteJobStore

        store = SQLiteJobStore(memories)
    else:
        from .mongo_async_jobs import MongoJobStore  # needs the 'mongo' extra

        store = MongoJobStore(memories.db)  # type: ignore[attr-defined]
    store.migrate()
    return store


def usage_store(memories: object) -> UsageStore | None:
    """The usage counters in the same database as a memory store, migrated; None for a store
    kept in no database of ours (a test's stand-in), whose requests are then not counted."""
    memories = getattr(memories, "backing_store", memories)  # a sealed store: its own database
    from .sqlite import SQLiteStore

    store: UsageStore
    if isinstance(memories, SQLiteStore):
        from .sqlite_usage import SQLiteUsageStore

        store = SQLiteUsageStore(memories)
    elif hasattr(memories, "db"):
        from .mongo_usage import MongoUsageStore  # needs the 'mongo' extra

        store = MongoUsageStore(memories.db)
    else:
        return None
    store.migrate()
    return store


def governance_store(memories: object) -> GovernanceStore:
    """The governance side of a memory store, in the same database."""
    view = getattr(memories, "governance_view", None)
    if view is not None:  # a sealed store (capsule.crypto): its governance seals and opens too
        return view(governance_store(memories.backing_store))  # type: ignore[attr-defined]
    from .sqlite import SQLiteStore

    if isinstance(memories, SQLiteStore):
        from .sqlite_governance import SQLiteGovernanceStore

        return SQLiteGovernanceStore(memories)
    from .mongo_governance import MongoGovernanceStore  # needs the 'mongo' extra

    return MongoGovernanceStore(memories)  # type: ignore[arg-type]


def transfer_store(memories: object) -> TransferStore:
    """The transfer side of a memory store, in the same database."""
    memories = getattr(memories, "backing_store", memories)  # a sealed store: the sealed rows as stored
    from .sqlite import SQLiteStore

    if isinstance(memories, SQLiteStore):
        from .sqlite_transfer import SQLiteTransferStore

        return SQLiteTransferStore(memories)
    from .mongo_transfer import MongoTransferStore  # needs the 'mongo' extra

    return MongoTransferStore(memories)  # type: ignore[arg-type]


def sync_store(memories: object) -> SyncStore:
    memories = getattr(memories, "backing_store", memories)  # a sealed store: the sealed rows as stored
    from .sqlite import SQLiteStore

    if isinstance(memories, SQLiteStore):
        from .sqlite_sync import SQLiteSyncStore

        return SQLiteSyncStore(memories)
    from .mongo_sync import MongoSyncStore  # needs the 'mongo' extra

    return MongoSyncStore(memories)  # type: ignore[arg-type]


def open_learning_store(memories: MemoryStore, settings: Settings) -> LearningStore:
    """The learning store in the same database as ``memories``, migrated."""
    store: LearningStore
    if settings.store == "mongo":
        from .mongo_learning import MongoLearningStore

        db = getattr(memories, "db", None)
        if db is None:  # the memory store keeps its database elsewhere: open our own client
            import pymongo

            if settings.mongodb_uri is None:
                raise InvalidInput("CAPSULE_STORE=mongo needs CAPSULE_MONGODB_URI", field="mongodb_uri")
            db = pymongo.MongoClient(settings.mongodb_uri.get_secret_value(), tz_aware=True)[settings.mongodb_db]
        store = MongoLearningStore(db)
    else:
        from .sqlite import SQLiteStore
        from .sqlite_learning import SQLiteLearningStore

        memories = getattr(memories, "backing_store", memories)  # a sealed store: its SQLite file
        if not isinstance(memories, SQLiteStore):
            raise InvalidInput("the SQLite learning store lives beside a SQLite memory store", field="store")
        store = SQLiteLearningStore(memories)
    store.migrate()
    return store
