"""The two halves of a sync exchange, on one side's service: the memories changed after a
position (:func:`changes`), and rows that arrive merged in by the conflict rule
(:func:`apply`, see :mod:`capsule.sync.merge`). ``capsule serve`` (and the hosted API) run
them for a remote caller; ``capsule sync`` runs them on the local store."""

from __future__ import annotations

import json

from ..errors import Conflict, InvalidInput
from ..service import MemoryService, validate
from ..store.sync import Position, sync_store
from ..store.transfer import FeedbackRow, transfer_store
from . import models as sm
from .merge import merge
from .rows import from_item, to_item

PAGE_BYTES = 4 * 1024 * 1024  # one answer stays well under a Lambda response's 6 MB
RULE = "latest change wins per field; counters take the larger; a forget wins over an older edit"


def changes(service: MemoryService, tenant: str, project: str, *, after: Position | None, limit: int,
            max_bytes: int = PAGE_BYTES) -> sm.ChangesPage:
    if not 1 <= limit <= sm.MAX_ITEMS:
        raise InvalidInput(f"limit must be between 1 and {sm.MAX_ITEMS}", field="limit")
    version = service.store.change_markers(tenant, [project]).get(project, 0)
    found = sync_store(service.store).changed_page(tenant, project, after=after, limit=limit + 1)
    votes: dict[str, list[FeedbackRow]] = {}
    for vote in transfer_store(service.store).feedback_of(tenant, [r.id for _, r in found[:limit]]):
        votes.setdefault(vote.memory_id, []).append(vote)
    items, positions, size = [], [], 0
    for position, record in found[:limit]:
        item = to_item(record, votes.get(record.id, []))
        size += len(json.dumps(item, default=str))
        if items and size > max_bytes:
            break
        items.append(item)
        positions.append(list(position))
    return sm.ChangesPage(project=project, items=items, positions=positions, version=version,
                          model=service.embedder.model_id, more=len(items) < len(found))


def _check_ids(service: MemoryService, tenant: str, ids: list[str]) -> None:
    held = transfer_store(service.store).existing_memories(tenant, ids)
    taken = [i for i, own in held.items() if not own]
    if taken:
        raise Conflict(f"memory id {taken[0]} is held by another tenant of this store: it cannot sync here",
                       details=[{"field": "items.memory.id", "message": f"id {taken[0]} is taken"}])


def apply(service: MemoryService, tenant: str, request: sm.ApplyRequest | dict) -> sm.ApplyResult:
    req = validate(sm.ApplyRequest, request)
    parsed = [from_item(tenant, req.project, item.model_dump(), f"items[{n}]") for n, item in enumerate(req.items)]
    store = sync_store(service.store)
    _check_ids(service, tenant, [record.id for record, _, _ in parsed])
    kept = store.current(tenant, [record.id for record, _, _ in parsed])
    base = tuple(req.base) if req.base is not None else None
    writes, conflicts, unchanged = [], [], 0
    for n, (record, _, _) in enumerate(parsed):
        position, own = kept.get(record.id, (None, None))
        if own is not None and own.project != req.project:
            raise InvalidInput(f"items[{n}].memory.project: memory {record.id} is in project '{own.project}' here",
                               field=f"items[{n}].memory.project")
        changed_here = position is not None and (base is None or position > base)
        outcome = merge(own, record, kept_changed=changed_here, own_model=service.embedder.model_id)
        if outcome.conflict:
            conflicts.append(sm.Conflict(id=record.id, fields=outcome.winners, rule=RULE))
        if outcome.record is None:
            unchanged += 1
        else:
            writes.append(outcome.record)
    if writes:
        version, quiet = store.replace_memories(tenant, req.project, writes,
                                                quiet_since=0 if base is None else base[0])
    else:
        version = service.store.change_markers(tenant, [req.project]).get(req.project, 0)
        quiet = version == (0 if base is None else base[0])
    votes = [vote for _, record_votes, _ in parsed for vote in record_votes]
    kept_votes = transfer_store(service.store).put_feedback(tenant, votes).written if votes else 0
    unknown = sorted({name for _, _, names in parsed for name in names})
    text = (f"Merged {len(parsed)} memory row(s) into project '{req.project}': {len(writes)} written, "
            f"{unchanged} already so, {len(conflicts)} conflict(s) resolved ({RULE}).")
    if unknown:
        text += f" Fields this side does not know were not kept: {', '.join(unknown)}."
    return sm.ApplyResult(project=req.project, applied=len(writes), unchanged=unchanged, votes=kept_votes,
                          conflicts=conflicts, version=version, quiet=quiet, unknown_fields=unknown, explanation=text)
