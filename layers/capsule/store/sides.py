"""The side stores of a memory store (capture queue, governance, transfer, sync), each in the
same database, chosen by the memory store's backend.

Kept apart from the contracts (capture.py, governance.py, transfer.py, sync.py) because a
backend's half imports its contract: the choice imports the halves, the halves never import it.
"""

from __future__ import annotations

from .capture import CandidateStore
from .governance import GovernanceStore
from .sync import SyncStore
from .transfer import TransferStore


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
