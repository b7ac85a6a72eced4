"""Each project document carries its counts, kept by the writes that change them.

``memories`` (active), ``pinned`` (active and pinned) and ``forgotten`` (forgotten or evicted,
not yet purged), and ``last_activity``: every write that changes one of them ``$inc``s it in
the same transaction (or under the same lease) as the rows it changes. Retention, the search's
size test and ``GET /v1/projects`` read them instead of counting or grouping the memories, and
writers no longer count the project inside the transaction every writer of it takes in turn.

A project stored before the counters existed has none: its first write (under the lease or in
its transaction) counts it once and sets them (:func:`ensure`); readers count it meanwhile.
"""

from __future__ import annotations

from typing import Any

COUNTERS = ("memories", "pinned", "forgotten")
PROJECTION = {name: 1 for name in (*COUNTERS, "name", "updated_at", "last_activity", "retention_limit")}


def counted(doc: dict[str, Any] | None) -> bool:
    return doc is not None and all(isinstance(doc.get(name), int) for name in COUNTERS)


def count(memories: Any, tenant: str, project: str, session: Any = None) -> dict[str, int]:
    """The project's counts from its memories (legacy projects only; bounded by the project)."""
    scope = {"tenant": tenant, "project": project, "pending": None}
    return {
        "memories": memories.count_documents({**scope, "active": True}, session=session),
        "pinned": memories.count_documents({**scope, "active": True, "pinned": True}, session=session),
        "forgotten": memories.count_documents({**scope, "deleted_at": {"$type": "double"}}, session=session),
    }


def ensure(projects: Any, memories: Any, doc: dict[str, Any], session: Any) -> dict[str, int]:
    """The project's counters, set from a count first if it has none (inside the write)."""
    if counted(doc):
        return {name: doc[name] for name in COUNTERS}
    counts = count(memories, doc["tenant"], doc["name"], session)
    projects.update_one({"_id": doc["_id"]}, {"$set": counts}, session=session)
    return counts


def add(projects: Any, session: Any, tenant: str, project: str, at: float, **deltas: int) -> None:
    """Move the counters by ``deltas`` (only those that change) and stamp the activity."""
    moved = {name: value for name, value in deltas.items() if value}
    update: dict[str, Any] = {"$max": {"last_activity": at}}
    if moved:
        update["$inc"] = moved
    # A project without counters yet gets none from here: half-made counters would pass for real
    # ones. Its first insert counts it (ensure), under the same serialisation as this write.
    projects.update_one({"tenant": tenant, "name": project, "memories": {"$exists": True}}, update, session=session)


def read(memories: Any, doc: dict[str, Any]) -> dict[str, int]:
    """The counts of a project document, counted when it predates the counters."""
    if counted(doc):
        return {name: doc[name] for name in COUNTERS}
    return count(memories, doc["tenant"], doc["name"])
