"""Merging one project of a tenant into another in the MongoDB store (capsule.core.project_identity:
one checkout, one project), the counterpart of ``SQLiteProjects.merge_project``.

An active memory whose content the target already holds is forgotten through the store's own
``forget`` (recoverable, audited, counters kept) after its pin is carried to the kept copy.
The rest move a batch at a time, each batch one write to the target project through the
store's write path (``MongoStore._in_project``), stamped with the target's next version and
given ``seq`` numbers after the target's, the counters moving with them, as
``mongo_tenants`` moves a tenant's project. A merge that stops between batches is finished by
the next one (what moved no longer belongs to the source).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core import limits
from ..core.clock import to_epoch
from . import mongo_counters as counters
from .mongo_writes import NEW_PROJECT

BATCH = 500
# As mongo_tenants moves a project's memories (not imported: it imports the store, which
# imports this module's caller).
MOVED_FIELDS = {"_id": 1, "seq": 1, "active": 1, "pinned": 1, "deleted_at": 1, "pending": 1, "updated_at": 1}
SETTINGS = ("retention_limit", "ephemeral_ttl", "secrets_policy", "pii_policy", "encryption")


def merge_project(
    store: Any,
    tenant: str,
    source: str,
    target: str,
    *,
    at: datetime,
    actor: str,
    default_limit: int = limits.DEFAULT_RETENTION_LIMIT,
    batch: int = BATCH,
) -> dict[str, int]:
    if source == target:
        return {}
    db, now = store.db, to_epoch(at)
    projects, memories = db["projects"], db["memories"]
    old = projects.find_one({"tenant": tenant, "name": source})
    if old is None and memories.find_one({"tenant": tenant, "project": source}, projection={"_id": 1}) is None:
        return {}
    old = old or {}
    projects.update_one(
        {"tenant": tenant, "name": target},
        {
            "$setOnInsert": {
                "created_at": float(old.get("created_at") or now),
                "updated_at": now,
                "retention_limit": None,
                **NEW_PROJECT,
            }
        },
        upsert=True,
    )
    for name in SETTINGS:  # the target's own settings win; the source's fill what it lacks
        if old.get(name) is not None:
            projects.update_one({"tenant": tenant, "name": target, name: None}, {"$set": {name: old[name]}})
    deduplicated = _dedupe(store, tenant, source, target, at, actor)
    moved = 0
    while memories.find_one({"tenant": tenant, "project": source}, projection={"_id": 1}) is not None:
        moved += store._in_project(
            tenant, target, "merge the projects", lambda w: _move_batch(db, w, tenant, source, target, batch)
        )
    for name in ("memory_versions", "capture_candidates", "solution_applications"):
        db[name].update_many({"tenant": tenant, "project": source}, {"$set": {"project": target}})
    projects.delete_one({"tenant": tenant, "name": source})
    _raise_to_hold(store, tenant, target, default_limit)
    return {"moved": moved - deduplicated, "deduplicated": deduplicated}


def _dedupe(store: Any, tenant: str, source: str, target: str, at: datetime, actor: str) -> int:
    memories = store.db["memories"]
    count = 0
    for doc in memories.find(
        {"tenant": tenant, "project": source, "active": True}, projection={"id": 1, "sha256": 1, "pinned": 1}
    ):
        kept = memories.find_one(
            {"tenant": tenant, "project": target, "active": True, "sha256": doc["sha256"]},
            projection={"id": 1, "pinned": 1},
        )
        if kept is None:
            continue
        if doc.get("pinned") and not kept.get("pinned"):
            store.set_pinned(tenant, kept["id"], True, at=at, actor=actor)
        store.forget(
            tenant,
            doc["id"],
            at=at,
            actor=actor,
            reason=f"merged: project '{source}' is the checkout '{target}', which holds the same content"
            f" as memory {kept['id']}",
        )
        count += 1
    return count


def moved_counts(docs: list[dict[str, Any]]) -> dict[str, int]:
    """What ``docs`` add to their project's counters, as :func:`mongo_counters.count` counts."""
    live = [d for d in docs if d.get("pending") is None]
    return {
        "memories": sum(1 for d in live if d.get("active") is True),
        "pinned": sum(1 for d in live if d.get("active") is True and d.get("pinned") is True),
        "forgotten": sum(1 for d in live if isinstance(d.get("deleted_at"), float)),
    }


def _move_batch(db: Any, w: Any, tenant: str, source: str, target: str, size: int) -> int:
    memories, projects = db["memories"], db["projects"]
    batch = list(
        memories.find(
            {"tenant": tenant, "project": source},
            projection=MOVED_FIELDS,
            sort=[("seq", 1), ("_id", 1)],
            limit=size,
            session=w.session,
        )
    )
    if not batch:
        return 0
    low, high = int(batch[0].get("seq") or 0), int(batch[-1].get("seq") or 0)
    doc = projects.find_one_and_update(
        {"tenant": tenant, "name": target},
        {"$inc": {"seq": high - low + 1}},
        projection={"seq": 1},
        return_document=True,
        session=w.session,
    )
    offset = int(doc["seq"]) - high
    memories.update_many(
        {"_id": {"$in": [d["_id"] for d in batch]}, "tenant": tenant, "project": source},
        [{"$set": {"project": target, "version": w.version, "seq": {"$add": [{"$ifNull": ["$seq", 0]}, offset]}}}],
        session=w.session,
    )
    moved, at = moved_counts(batch), max(float(d.get("updated_at") or 0.0) for d in batch)
    counters.add(projects, w.session, tenant, target, at, **moved)
    counters.add(projects, w.session, tenant, source, at, **{k: -n for k, n in moved.items()})
    return len(batch)


def _raise_to_hold(store: Any, tenant: str, project: str, default_limit: int) -> None:
    projects = store.db["projects"]
    doc = projects.find_one({"tenant": tenant, "name": project}) or {}
    own = doc.get("retention_limit")
    if own == 0:
        return  # no rolling limit
    held = counters.read(store.db["memories"], {**doc, "tenant": tenant, "name": project})["memories"]
    if held > (own or default_limit):
        projects.update_one(
            {"tenant": tenant, "name": project}, {"$set": {"retention_limit": min(held, limits.MAX_RETENTION_LIMIT)}}
        )
